"""Why a strict fault never fired, in words: what the test wrote, what happened, the fix.

`FaultPlan.check` reports each unfired strict fault with `explain_unfired`; the message is
meant to be enough on its own (the plugin prints it without a traceback).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.testing._fault import HTTPFault, LLMFault, ToolFault

if TYPE_CHECKING:
    from pytest_agentfaults.testing._fault import Fault

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["explain_unfired"]


def explain_unfired(
    fault: Fault,
    occurrences: dict[tuple[Any, ...], int],
    tools_called: set[str],
    *,
    agents_called: Collection[str] | None = None,
    requests_made: Sequence[str] = (),
    requests_capped: bool = False,
    foreign_requests: int = 0,
    app_requests: int = 0,
    unwatched: bool = False,
    refused: Collection[str] = (),
) -> str:
    """Three lines: the fault as the test wrote it, what happened instead, and the fix.

    ``occurrences`` is the plan's count of attempts per target (`FaultPlan.next_fault`),
    ``tools_called`` the tools the agents tried while the plan was active, and
    ``agents_called`` (when the plan records them) the agents whose model was called, and
    ``requests_made`` the distinct HTTP requests (``"POST <url>"``) the plan saw
    (``requests_capped``: and maybe more, which it did not keep), of which
    ``foreign_requests`` came from contexts the plan was not active in or went to an app
    served in process (``app_requests`` of them: the test's calls to the app under test,
    through a ``TestClient`` or an ``ASGITransport``). ``unwatched``: a
    framework imported during the test ran its tools unwatched (the caller says which).
    ``refused`` the tools whose calls a framework refused before they ran (no occurrence).
    """
    written = fault.written or fault.describe()
    lenient = "strict=False" if written.startswith("@pytest.mark") else ".strict(False)"
    seen = occurrences.get(fault.key, 0)
    happened, fix = _what_and_fix(fault, seen, tools_called, agents_called)
    if (
        not seen
        and unwatched
        and isinstance(fault, ToolFault)
        and not fault.function
        and fault.tool not in tools_called
    ):
        # its tool may well have run, unwatched: "never called a tool" would be untrue
        happened = f"{fault.tool} was called 0 times by the tools watched"
        fix = "watch the framework that runs it, as the last line says"
    tool = fault.tool if isinstance(fault, ToolFault) else None
    if not seen and tool in refused and tool not in tools_called:
        # called, but never as far as the tool: no occurrence
        happened = (
            f"every call of {tool} was refused before the tool ran (arguments not JSON or "
            "not what its schema takes, or a tool the server does not have), and a refused "
            "call is no call a fault takes"
        )
        fix = f"make the code call {tool} with arguments it takes"
    if not seen and isinstance(fault, HTTPFault) and not fault.url and foreign_requests:
        happened, fix = _only_foreign(foreign_requests - app_requests, app_requests)
    if not seen and isinstance(fault, HTTPFault) and fault.url and requests_made:
        happened += f"; requests made: {_few(requests_made, capped=requests_capped)}"
    if seen and fault.probability is not None:
        happened += (
            f"; the fault was drawn with probability={fault.probability:g} and missed "
            f"{'it' if seen == 1 else f'all {seen}'}"
        )
        fix = "raise probability=, or replay with another --agentfaults-seed"
    elif seen and fault.seen == 0:
        happened += f"; the faults declared before it on {fault.subject} took all of them"
        fix = "lower the earlier faults' times=, or make the code try more often"
    elif seen and fault.seen < fault.at:
        happened, fix = _waits(fault, seen, happened)
    return (
        f"fault on {fault.subject} never fired: {written}\n"
        f"  what happened: {happened}\n"
        f"  fix: {fix}, or add {lenient} if the fault may go unused"
    )


def _only_foreign(requests: int, app: int = 0) -> tuple[str, str]:
    """An http fault without ``url=`` that only requests it does not take could have met.

    Those of other threads, and the test's own calls to an app it serves in process.
    """
    came = "1 request came from a thread" if requests == 1 else f"{requests} requests came"
    others = (
        f"{came} {'that does' if requests == 1 else 'from threads that do'} not carry it (a "
        "background thread: a fixture's health check, a library's telemetry)"
    )
    served = (
        f"{'1 request' if app == 1 else f'{app} requests'} went to an app served in process "
        "(a TestClient, an ASGITransport: the app under test, not what it calls)"
    )
    parts = [part for count, part in ((requests, others), (app, served)) if count]
    lead = "in its own context" if not app else "that this fault could take"
    fix = (
        f"give url= the endpoint (a fault with url= reaches every {'request' if app else 'thread'})"
    )
    if requests:
        fix += (
            ", or run the code in a copy of the test's context "
            "(contextvars.copy_context().run, asyncio.to_thread)"
        )
    if app:
        fix += ", or make the app call what the fault is for (its model provider, its tools' APIs)"
    happened = f"the test made no HTTP request {lead}; {' and '.join(parts)}"
    return happened + ", and a fault without url= is not theirs to take", fix


def _waits(fault: Fault, seen: int, happened: str) -> tuple[str, str]:
    """A fault whose ``at=`` lies past the last occurrence: which one it waited for.

    ``at=`` counts the occurrences the fault saw, and a fault sees none until the faults
    declared before it on its target are done: with those taking ``earlier`` occurrences,
    ``at=N`` waits for occurrence ``earlier + N``, which is what the user can count.
    """
    word = _attempt_word(fault)
    earlier = seen - fault.seen  # the occurrences before this fault became the current one
    if not earlier:
        return (
            f"{happened}, and the fault waits for {word} {fault.at} (at={fault.at})",
            f"lower at= (at=1 is the first {word})",
        )
    took = f"{word} 1" if earlier == 1 else f"{word}s 1-{earlier}"
    return (
        f"{happened}, and the fault waits for {word} {earlier + fault.at}: {took} went to "
        f"the faults declared before it on {fault.subject}, and at={fault.at} counts from "
        f"{word} {earlier + 1}",
        f"lower at= (at=1 is {word} {earlier + 1} here, the first after the earlier faults)",
    )


def _what_and_fix(
    fault: Fault, seen: int, tools_called: set[str], agents_called: Collection[str] | None
) -> tuple[str, str]:
    if isinstance(fault, ToolFault):
        happened = f"{fault.tool} was called {_times(seen)}"
        if seen:
            return happened, "check the test"
        if fault.tool in tools_called:
            # The plan counts a tool's calls only while a fault on it is declared: the tool
            # ran, yet this fault counted nothing, so it was declared after the calls.
            return (
                f"{fault.tool} was called before this fault was declared (a fault counts "
                "only the calls after it; or the calls ran in a fault_scope() that "
                "suspended this plan)",
                "declare faults before running the code under test",
            )
        if fault.function:  # the attribute was patched; a reference taken before is not
            module, _, attribute = fault.tool.partition(":")
            name = attribute.split(".")[0]
            return (
                f"{fault.tool} was not called through that path",
                f"code that took {name} before the test (from {module} import {name}, or an "
                "object built with it at import) still calls the original: put the fault on "
                "the module where that code looks it up, or build that object in the test",
            )
        called = sorted(tools_called)
        if not called:
            return f"{happened}: the agent never called a tool", "make the agent call it"
        listed = ", ".join(called)
        return (
            f"{happened}; the tools called were {listed}",
            "name a tool the agent calls (tool='...' is the tool's name)",
        )
    if isinstance(fault, LLMFault):
        if fault.agent is not None and not seen:
            return _no_agent_calls(fault.agent, agents_called)
        if seen:
            return f"the model was called {_times(seen)}", "check the test"
        # Another framework's agent (pydantic-ai, LangChain, the Agents SDK) may well have
        # called its model, where no llm= fault looks: "0 model calls" would be untrue.
        # Its test model makes no HTTP call at all; a real client's model is reached over
        # HTTP only, so the fix is to point the model there.
        return (
            "no af.Agent model call was seen (llm= faults act on af.Agent's model calls)",
            "run an af.Agent in the test (its model calls are what llm= faults hit). The "
            "model of a pydantic-ai, LangChain or Agents SDK agent is out of llm='s reach, "
            "and a framework's own test model (pydantic-ai's TestModel or FunctionModel, "
            "LangChain's fake chat models) makes no HTTP call, and no fault reaches it: "
            "point the agent's model at the llm_server fixture (an OpenAI client or "
            "provider with base_url=llm_server.base_url('openai')) and fault it with a "
            "fail step of its script, or with http= faults (http=429, http=503 ...) on "
            "the client's requests; to make a FunctionModel's function raise, put a "
            "function='pkg.module:attr' fault on it and build the FunctionModel in the test",
        )
    else:
        assert isinstance(fault, HTTPFault)
        where = " ".join(p for p in (fault.method, fault.url) if p)
        if not seen:
            return (
                f"no HTTP request matched {where}" if where else "the test made no HTTP request",
                "match the requests the code makes (the trace's http.request events list them)"
                if where
                else "send the requests through httpx or httpx2 while the test runs",
            )
        return f"{_times(seen)} an HTTP request matched {where or 'it'}", "check the test"


def _no_agent_calls(agent: str, agents_called: Collection[str] | None) -> tuple[str, str]:
    """An ``agent=`` llm fault that saw no call: most often a misspelt agent name."""
    happened = f"no model call of agent {agent!r} was seen"
    fix = "name an agent that runs (agent= is the name given to af.Agent)"
    if agents_called is None:  # the plan did not record them: the trace's [agent] shows
        return (
            f"{happened}; the agents that ran are the [names] in the trace's run.start events",
            fix,
        )
    others = sorted(set(agents_called) - {agent})
    if not others:
        return f"{happened}; no agent called a model", "run the agent in the test"
    return f"{happened}; the agents that called a model were {', '.join(others)}", fix


def _few(requests: Sequence[str], *, capped: bool, shown: int = 3) -> str:
    """The first ``shown`` of ``requests``, and how many more (a message stays short)."""
    listed = ", ".join(requests[:shown])
    more = len(requests) - shown
    if more <= 0:
        return listed
    return f"{listed} and {'more' if capped else f'{more} more'}"


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _attempt_word(fault: Fault) -> str:
    return {"tool": "call", "llm": "model call", "http": "request"}.get(fault.target, "attempt")
