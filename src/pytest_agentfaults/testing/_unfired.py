"""Why a strict fault never fired, in words: what the test wrote, what happened, the fix.

`FaultPlan.check` reports each unfired strict fault with `explain_unfired`; the message is
meant to be enough on its own (the plugin prints it without a traceback).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_agentfaults.testing._fault import HTTPFault, LLMFault, ToolFault

if TYPE_CHECKING:
    from pytest_agentfaults.testing._fault import Fault

__all__ = ["explain_unfired"]


def explain_unfired(
    fault: Fault, occurrences: dict[tuple[Any, ...], int], tools_called: set[str]
) -> str:
    """Three lines: the fault as the test wrote it, what happened instead, and the fix.

    ``occurrences`` is the plan's count of attempts per target (`FaultPlan.next_fault`),
    ``tools_called`` the tools the agents tried while the plan was active.
    """
    written = fault.source or fault.describe()
    lenient = "strict=False" if written.startswith("@pytest.mark") else ".strict(False)"
    seen = occurrences.get(fault.key, 0)
    happened, fix = _what_and_fix(fault, seen, tools_called)
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
        fix = f"lower at= (at=1 is the first {_attempt_word(fault)})"
        happened += f", and the fault waits for {_attempt_word(fault)} {fault.at} (at={fault.at})"
    return (
        f"fault on {fault.subject} never fired: {written}\n"
        f"  what happened: {happened}\n"
        f"  fix: {fix}, or add {lenient} if the fault may go unused"
    )


def _what_and_fix(fault: Fault, seen: int, tools_called: set[str]) -> tuple[str, str]:
    if isinstance(fault, ToolFault):
        happened = f"{fault.tool} was called {_times(seen)}"
        if seen:
            return happened, "check the test"
        called = sorted(tools_called)
        if not called:
            return f"{happened}: the agent never called a tool", "make the agent call it"
        listed = ", ".join(called)
        return (
            f"{happened}; the tools called were {listed}",
            "name a tool the agent calls (tool='...' is the tool's name)",
        )
    if isinstance(fault, LLMFault):
        return (
            f"the model was called {_times(seen)}",
            "run an agent in the test (its model calls are what llm= faults hit)",
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


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _attempt_word(fault: Fault) -> str:
    return {"tool": "call", "llm": "model call", "http": "request"}.get(fault.target, "attempt")
