"""One attempt of another framework's tool, through the active fault plan.

Every adapter (pydantic-ai, LangChain, the OpenAI Agents SDK, MCP, a patched function)
wraps the framework's own call of a tool in `run_attempt` / `arun_attempt`:

```python
def call_tool(self, name, args, ctx, tool):          # the framework's tool path
    return run_attempt("pydantic_ai", name, args,
                       lambda: original(self, name, args, ctx, tool),
                       lambda failure: _raise(ModelRetry(failure.error)))
```

With no plan active in the context the call just runs. Otherwise the attempt is counted
as an occurrence of ``tool`` with the same counting our own runtime uses (``times``,
``at``, ``probability``), a fault of that name is applied, and ``tool.call`` /
``tool.fault`` / ``tool.error`` / ``tool.result`` events, each with a ``framework`` field,
go to the test's trace. An attempt the framework makes in answer to a failed one (a later
model turn of the same run, the same call again: see `Site`) is its retry, with a
``tool.retry`` event; ``attempt`` counts within such a streak, as our runtime's do, and
``by`` says who retried: the code around the tool (its wait is ``delay``) or the model.
While an attempt runs, it is marked (``hooks.framework_attempt``): an ``af.tool`` of the
same name invoked inside it is this attempt, neither recorded nor faulted again. A
tool that pauses for a human or hands off (LangGraph's ``interrupt()``, pydantic-ai's
``ApprovalRequired``) has no outcome event: it did not fail.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import advance_virtually, default_clock
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.hooks import (
    attempting,
    reset_framework_attempt,
    set_framework_attempt,
)
from pytest_agentfaults.runtime.output import preview
from pytest_agentfaults.testing._current import current_plan
from pytest_agentfaults.testing._declared import as_declared
from pytest_agentfaults.testing._fault import NOTHING, ToolFault
from pytest_agentfaults.testing._frameworks._claims import (
    Claim,
    Outcome,
    claim,
    claim_of,
    release,
)
from pytest_agentfaults.testing._frameworks._streaks import (
    Failing,
    Site,
    answers,
    run_key,
    same_run,
    waited,
)

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import FaultPlan

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK_NAMES", "Outcome", "Site", "arun_attempt", "failure_text", "run_attempt"]

T = TypeVar("T")

#: The ``framework`` field's values, as API.md names them.
FRAMEWORK_NAMES: Final = (
    "agentfaults",
    "pydantic_ai",
    "langchain",
    "openai_agents",
    "mcp",
    "anthropic",
    "google_genai",
    "function",
)


_UNKNOWN: Final = Site()


def failure_text(failure: ToolFailure) -> str:
    """What the model reads of a ``returns=af.ToolFailure(...)``, in every framework alike."""
    if not failure.recommendations:
        return failure.error
    return failure.error + " Recommendations: " + "; ".join(failure.recommendations)


def run_attempt(
    framework: str,
    tool: str,
    args: Mapping[str, Any] | None,
    call: Callable[[], T],
    failure: Callable[[ToolFailure], T],
    site: Site = _UNKNOWN,
    faultable: bool = True,
) -> T:
    """Make one attempt at ``tool`` of ``framework``: ``call()``, or the fault in its place.

    ``failure`` turns a ``returns=af.ToolFailure(...)`` fault into the framework's own
    way of reporting a failed tool (it may raise, e.g. pydantic-ai's ``ModelRetry``).
    ``site`` is what the framework says of the attempt, to tell its retries (`Site`).
    ``faultable=False``: an attempt the framework refuses before the tool runs (as for
    `arun_attempt`).
    """
    __tracebackhide__ = True
    plan = current_plan()
    if plan is None or claim_of(tool) is not None or attempting() == tool:
        return call()  # no test, or inside an attempt at this tool: that attempt's
    _, token = claim((tool,))
    inside = set_framework_attempt(tool)  # an af.tool of this name invoked inside: this one
    try:
        return _run(plan, framework, tool, args, call, failure, site, faultable)
    finally:
        reset_framework_attempt(inside)
        release(token)


def _run(
    plan: FaultPlan,
    framework: str,
    tool: str,
    args: Mapping[str, Any] | None,
    call: Callable[[], T],
    failure: Callable[[ToolFailure], T],
    site: Site,
    faultable: bool,
) -> T:
    __tracebackhide__ = True
    attempt = _Attempt(plan, framework, tool, args, site, faultable=faultable)
    fault = attempt.fault() if faultable else None
    if fault is not None:
        if fault.delay is None:
            return attempt.instead(fault, failure)
        clock = attempt.recorder.clock
        if not advance_virtually(clock, fault.delay):
            clock.sleep(fault.delay)
    try:
        result = call()
    except Exception as exc:
        attempt.ended(exc)
        raise
    attempt.succeeded(result)
    return result


async def arun_attempt(
    framework: str,
    tool: str,
    args: Mapping[str, Any] | None,
    call: Callable[[], Awaitable[T]],
    failure: Callable[[ToolFailure], T],
    site: Site = _UNKNOWN,
    nested: tuple[str, ...] = (),
    faultable: bool = True,
    outcome: Outcome | None = None,
) -> T:
    """`run_attempt` for an async tool path: ``await call()``, or the fault in its place.

    ``nested`` names the tool also goes by inside ``call()`` (an MCP tool the Agents SDK
    shows the model under a server-prefixed name): the attempts made under those names
    within this one are this attempt, not others. ``faultable=False``: an attempt the
    framework is bound to refuse before the tool runs (arguments it cannot parse), traced
    but neither counted by the faults' ``times=`` / ``at=`` nor replaced by one.
    ``outcome`` reads what the attempt returned (`Outcome`): a value that reports a
    failure is a ``tool.error``, and a result shows the text it gives. Inside another
    attempt at the same tool, ``outcome`` reads for that attempt (`Claim`).
    """
    __tracebackhide__ = True
    plan = current_plan()
    if plan is None or attempting() == tool:  # inside the runtime's attempt at this tool
        return await call()
    outer = claim_of(tool)
    if outer is not None:
        return await outer.inside(call, outcome)
    held, token = claim((tool, *nested))
    inside = set_framework_attempt(tool)
    try:
        return await _arun(
            plan, framework, tool, args, call, failure, site, faultable, outcome, held
        )
    finally:
        reset_framework_attempt(inside)
        release(token)


async def _arun(
    plan: FaultPlan,
    framework: str,
    tool: str,
    args: Mapping[str, Any] | None,
    call: Callable[[], Awaitable[T]],
    failure: Callable[[ToolFailure], T],
    site: Site,
    faultable: bool,
    outcome: Outcome | None,
    held: Claim,
) -> T:
    __tracebackhide__ = True
    attempt = _Attempt(plan, framework, tool, args, site, outcome, held, faultable)
    fault = attempt.fault() if faultable else None
    if fault is not None:
        if fault.delay is None:
            return attempt.instead(fault, failure)
        clock = attempt.recorder.clock
        if not advance_virtually(clock, fault.delay):
            await clock.asleep(fault.delay)
    try:
        result = await call()
    except Exception as exc:
        attempt.ended(exc)
        raise
    attempt.succeeded(result)
    return result


class _Attempt:
    """One attempt's bookkeeping: its number, its events, the fault that hits it."""

    __slots__ = (
        "again",
        "claim",
        "failing",
        "key",
        "marks",
        "name",
        "number",
        "outcome",
        "plan",
        "recorder",
        "retry",
        "site",
    )

    def __init__(
        self,
        plan: FaultPlan,
        framework: str,
        tool: str,
        args: Mapping[str, Any] | None,
        site: Site,
        outcome: Outcome | None = None,
        held: Claim | None = None,
        faultable: bool = True,
    ) -> None:
        self.plan = plan
        self.name = tool
        self.site = site
        self.outcome = outcome
        self.claim = held
        self.recorder = _recorder(plan, framework)
        # for the message of a tool fault that never fired: a call the framework refused
        # before the tool ran is no call a fault could take, and the message says so
        called = plan.tools_called if faultable else _side(plan).setdefault("refused", set())
        called.add(tool)
        # A tool declared non-idempotent for the test says so on its events (the verdict's
        # retried_non_idempotent reads them), as our own runtime's events do.
        self.marks: dict[str, Any] = {"framework": framework}
        if any(
            isinstance(f, ToolFault) and f.tool == tool and f.idempotent is False
            for f in plan.faults
        ):
            self.marks["idempotent"] = False
        # An attempt the framework makes in answer to a failed one of the same tool (see
        # `Site`: pydantic-ai asks the model again, LangChain's with_retry ...) is its
        # retry: a ``tool.retry`` event, numbered within that streak of failures, as our
        # runtime numbers its own retries; any other attempt is attempt 1 of a new call.
        # It says who retried (``by``): the code around the tool (with_retry, a RetryPolicy,
        # an app's loop), whose wait since the failure is its ``delay``, judged as our
        # backoff; or the model, told the failure (the error fed back): no wait is owed.
        # One streak per tool and run: runs of the same agent may interleave (gathered).
        # Where the framework says nothing of which call this is (no turn, no call id: a
        # LangChain tool invoked directly or in a batch, an MCP session, a function), the
        # same call again is told by its arguments: a loop over customers is two calls.
        text = _args_text(args)
        same_call = text if site.call_id is None and site.turn is None else None
        self.key: tuple[str, str, object, str | None] = (
            framework,
            tool,
            run_key(site.run),
            same_call,
        )
        self.failing: dict[tuple[str, str, object, str | None], Failing] = _side(plan).setdefault(
            "failing", {}
        )
        before = self.failing.get(self.key)
        if before is not None and not same_run(before.site.run, site.run):
            before = None  # an id of a run gone, reused by this one
        retry = None if before is None else answers(before, site)
        self.retry = retry is not None
        self.again = False  # the same call attempted again (else a later turn's call)
        if retry is not None and before is not None:
            self.number, error, self.again, by_model = retry
            wait = None if by_model else waited(before, self.recorder.clock)
            who = {"by": "model"} if by_model else {"by": "code", "delay": wait}
            self.recorder.emit(
                "tool.retry", tool=tool, attempt=self.number, error=error, **who, **self.marks
            )
        else:
            self.number = 1
        self.emit("tool.call", detail=None if text is None else preview(text))

    def emit(self, kind: str, **fields: Any) -> None:
        self.recorder.emit(kind, tool=self.name, attempt=self.number, **self.marks, **fields)

    def fault(self) -> ToolFault | None:
        """The fault that hits this attempt (recorded as fired, with its event), if any."""
        framework = self.marks["framework"]
        by_path = framework == "function"
        candidates = [
            f
            for f in self.plan.faults
            if isinstance(f, ToolFault) and f.tool == self.name and f.function == by_path
        ]
        if not candidates:
            return None
        hit = self.plan.next_fault(("tool", self.name), candidates)
        if hit is None:
            return None
        fault, occurrence = hit
        fault.check()
        self.plan.record(fault, self.name, fault.action or "", occurrence)
        self.emit("tool.fault", status=fault.action, detail=fault.describe())
        return fault

    def instead(self, fault: ToolFault, failure: Callable[[ToolFailure], T]) -> T:
        """What a raises= or returns= fault gives in place of the tool's run."""
        __tracebackhide__ = True
        if fault.raises is not None:
            exc = fault.raises
            error = exc() if isinstance(exc, type) else as_declared(exc)
            self.ended(error)
            raise error
        value = fault.returns
        if isinstance(value, ToolFailure):
            self.failed(value)
            return failure(value)
        self.succeeded(value)
        return value  # type: ignore[no-any-return]

    def ended(self, error: BaseException) -> None:
        """The attempt raised ``error``: it failed, unless the framework steers with it."""
        if not _steers(error):
            self.failed(error)
        # else the tool paused for a human or handed off: no outcome, and no failure

    def failed(self, error: BaseException | ToolFailure) -> None:
        record = ErrorRecord.from_exception(error, tool=self.name)
        self.emit("tool.error", error=record)
        before = self.failing.get(self.key)
        call_id = self.site.call_id
        at, wall = self.recorder.clock.now(), time.perf_counter()
        if before is None or not same_run(before.site.run, self.site.run):
            calls = {} if call_id is None else {call_id: (self.number, record)}
            self.failing[self.key] = Failing(self.number, record, self.site, calls, at, wall)
            return
        # a retry that failed again, or a parallel call of a failed one that failed too
        before.streak = max(before.streak, self.number)
        before.error, before.site = record, self.site
        before.at, before.wall = at, wall
        if call_id is not None:
            before.calls[call_id] = (self.number, record)

    def succeeded(self, result: object) -> None:
        """The attempt returned ``result``: a success, unless it reports a failure.

        Its value may say so (`Outcome`), or a call made inside it may have read it (an
        MCP ``is_error`` result the Agents SDK turned into the model's text).
        """
        read = None if self.outcome is None else self.outcome(result)
        error = read[1] if read is not None else None
        if error is None and self.claim is not None:
            error = self.claim.error()
        if error is not None:
            self.failed(error)
            return
        before = self.failing.get(self.key)
        if self.retry and before is not None:
            # A later turn's call that worked ends the streak; the same call attempted
            # again ends only its own failure: a parallel one may still be rerun.
            if self.again and self.site.call_id is not None:
                before.calls.pop(self.site.call_id, None)
            if not self.again or not before.calls:
                self.failing.pop(self.key, None)
        shown = _shown_result(result) if read is None else preview(read[0])
        self.emit("tool.result", detail=shown)


#: Exceptions a framework's tool raises to steer the run, not because it failed: a pause
#: for a human (LangGraph's ``interrupt()``, pydantic-ai's ``ApprovalRequired`` and
#: ``CallDeferred``) or a handoff (LangGraph's ``ParentCommand``). Looked up among the
#: modules already imported: nothing is imported for it.
_STEERING: Final = (
    ("langgraph.errors", "GraphBubbleUp"),
    ("pydantic_ai.exceptions", "CallDeferred"),
    ("pydantic_ai.exceptions", "ApprovalRequired"),
)


def _steers(error: BaseException) -> bool:
    for module, name in _STEERING:
        kind = getattr(sys.modules.get(module), name, None)
        if isinstance(kind, type) and isinstance(error, kind):
            return True
    return False


def _recorder(plan: FaultPlan, framework: str) -> Recorder:
    """The recorder of ``framework``'s tool events for ``plan``: into the test's trace.

    The plugin (and `af.fault_scope`) point the plan's ``http_recorder`` at the test's
    trace and clock; a framework's events go to the same trace, on the same clock.
    """
    recorders = _side(plan).setdefault("recorders", {})
    recorder: Recorder | None = recorders.get(framework)
    if recorder is None:
        base = plan.http_recorder
        if base is None:  # a plan activated by hand: its events reach the collectors
            recorder = Recorder(agent=framework, clock=default_clock(), run_id=framework)
        else:
            recorder = Recorder(
                agent=framework, clock=base.clock, trace=base.trace, run_id=framework
            )
            recorder.start = base.start  # the test's time axis, as its HTTP events
        recorders[framework] = recorder
    return recorder


def _side(plan: FaultPlan) -> dict[str, Any]:
    """What this module keeps per plan (so per test): recorders and failure streaks."""
    return plan.framework_state


def _args_text(args: Mapping[str, Any] | None) -> str | None:
    """The arguments as JSON with sorted keys (their repr if not JSON; None: unknown)."""
    if args is None:
        return None
    try:
        return json.dumps(dict(args), default=repr, sort_keys=True)
    except (TypeError, ValueError):
        return repr(args)


def _shown_result(result: object) -> str:
    if result is NOTHING or result is None:
        return "None"
    if isinstance(result, str):
        return preview(result)
    try:
        text = json.dumps(result, default=repr)
    except (TypeError, ValueError):
        text = repr(result)
    return preview(text)
