"""Running one tool call through its recovery policy: the tool-call pipeline.

`ToolCalls` (a run's, or `Tool.invoke`'s alone) validates the model's arguments, runs attempts
as effects, classifies failures and applies the resolved action (retry after a wait, a fixer
round, feed back, raise, respond), with an event at each step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.errors import (
    NEVER_RECOVERED,
    PLAIN_TRANSIENT,
    EscalationError,
    InvalidArgsError,
    ToolExecutionError,
    ToolTimeoutError,
    UnknownToolError,
    classify,
    is_ambiguous,
)
from pytest_agentfaults.runtime._drivers import Sleep, Steps
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.runtime._fixers import run_fixer, run_function_fixer
from pytest_agentfaults.runtime._idempotency import non_idempotent, with_recheck
from pytest_agentfaults.runtime._recorder import Recorder, close_aborted
from pytest_agentfaults.runtime._result import CancelToken, Usage
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.hooks import Attempt
from pytest_agentfaults.runtime.models.base import ToolCall
from pytest_agentfaults.runtime.output import preview, render_result
from pytest_agentfaults.runtime.policy import (
    Action,
    FailureKind,
    FeedBack,
    Fix,
    RaiseError,
    Resolutions,
    RespondWith,
    RetryPlan,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.policy import OnError
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Cancelled", "Outcome", "ToolCalls"]


_NON_IDEMPOTENT: Final[dict[str, Any]] = {"idempotent": False}
#: no built-ins, no per-tool policies: one read-only mapping, not a new dict per run
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
#: the failures no recovery policy handles: a hard failure, an escalation
_HARD: Final = (ToolExecutionError, EscalationError)
#: the ``framework`` field of this runtime's tool events (other frameworks' tools have theirs)
_OURS: Final = "agentfaults"
#: The trace record of the last plain transient failure, with its key (class, message,
#: ``retryable``): a pure function of that key, frozen, so every pipeline shares it.
_last_plain: Final[list[tuple[tuple[object, ...], ErrorRecord] | None]] = [None]


class Cancelled(Exception):
    """The run's CancelToken was cancelled during a wait."""


def _no_event(type: str, /, **fields: Any) -> None:
    return None


@dataclass(slots=True)
class Outcome:
    """The end of one tool call: what the model is told, and what happened."""

    content: str
    value: Any = None
    error: BaseException | ToolFailure | None = None
    attempts: int = 0


class ToolCalls:
    """The tool-call pipeline: runs the tool calls of one run, or one `Tool.invoke`.

    It owns what a tool call needs and nothing of the run around it: the tools by name
    (``builtins`` are the agent's chosen built-ins), the policy levels, where events go
    (``rec``; None records nothing), the clock, the usage it bumps, the cancel token and
    ``uniform`` (the run's jitter stream).
    """

    __slots__ = (
        "_record",
        "builtins",
        "cancel",
        "clock",
        "emit",
        "memo",
        "on_tool_error",
        "rec",
        "resilience",
        "tool_defaults",
        "tools",
        "uniform",
        "usage",
    )

    # Positional or keyword: a run passes them in order (keywords cost a dict each), per run.
    def __init__(
        self,
        tools: Mapping[str, BaseTool[Any, Any]],
        resilience: ResilienceConfig,
        clock: Clock,
        rec: Recorder | None,
        uniform: Callable[[], float],
        builtins: Mapping[str, BaseTool[Any, Any]] | None = None,
        on_tool_error: Mapping[str, OnError] | None = None,
        tool_defaults: OnError | None = None,
        usage: Usage | None = None,
        cancel: CancelToken | None = None,
        memo: Resolutions | None = None,
    ) -> None:
        self.tools = tools
        self.builtins = builtins or _EMPTY
        self.resilience = resilience
        self.on_tool_error = on_tool_error or _EMPTY
        self.tool_defaults = tool_defaults
        self.clock = clock
        self.rec = rec
        self.emit: Callable[..., object] = rec.emit if rec is not None else _no_event
        self.uniform = uniform
        self.usage = usage if usage is not None else Usage()
        self.cancel = cancel
        self._record: tuple[object, ErrorRecord] | None = None
        self.memo = memo if memo is not None else Resolutions()  # the agent's, else its own

    def check_cancel(self) -> None:
        """Raise `Cancelled` when the run's token was cancelled."""
        if self.cancel is not None and self.cancel.cancelled:
            raise Cancelled

    def absorb(self, child: Usage) -> None:
        """Count a nested run's (a fixer's) model use in this pipeline's usage."""
        mine = self.usage
        mine.llm_calls += child.llm_calls
        mine.input_tokens += child.input_tokens
        mine.output_tokens += child.output_tokens

    def record(self, error: BaseException | ToolFailure) -> ErrorRecord:
        """The trace record of ``error``, built once however many events carry it."""
        cached = self._record
        if cached is not None and cached[0] is error:
            return cached[1]
        cls = error.__class__
        if cls in PLAIN_TRANSIENT:
            # Its record follows from its class, its message and its ``retryable`` alone:
            # a failure like the last one (a retried call's, mostly) shares that record.
            key = (cls, exception_text(error), getattr(error, "retryable", None))
            plain = _last_plain[0]
            if plain is not None and plain[0] == key:
                record = plain[1]
            else:
                record = ErrorRecord.from_exception(error)
                _last_plain[0] = (key, record)
        else:
            record = ErrorRecord.from_exception(error)
        self._record = (error, record)
        return record

    def tool_call(self, call: ToolCall) -> Steps[Outcome]:
        """Run one tool call the model asked for, through its recovery policy."""
        __tracebackhide__ = True
        # A `ToolCall`'s fields read from its dict (cheaper); a client's own call class's not
        fields = (
            call.__dict__
            if type(call) is ToolCall
            else {"name": call.name, "arguments": call.arguments, "id": call.id}
        )
        rec, name = self.rec, fields["name"]
        tool = self.tools.get(name)
        builtin = False
        if tool is None and name in self.builtins:
            tool, builtin = self.builtins[name], True
        if tool is None:
            available = [*self.tools, *self.builtins]
            error = UnknownToolError(
                f"unknown tool {name!r}; available: {', '.join(available) or '(none)'}",
                tool=name,
                available=available,
            )
            # `offered` (built-ins apart): fault coverage counts the call for each of them
            self.tool_error(call, None, error, offered=[*self.tools])
            return Outcome(self.payload(name, error, 0), error=error)

        config = self.resilience.for_tool(name)
        # A tool that must not run twice says so on its events, for the verdict.
        marks: dict[str, Any] = _NON_IDEMPOTENT if non_idempotent(tool) else {}
        # the last kind, its action, its `Retry` plan, whether an ambiguous failure stops it
        resolved: tuple[FailureKind, Action, RetryPlan | None, bool] | None = None
        raw = fields["arguments"]
        call_id, clock, emit, timeout = fields["id"], self.clock, self.emit, config.timeout_seconds
        cancel = self.cancel
        attempts = 0
        used: dict[int, int] = {}
        last: tuple[str, dict[str, Any]] | None = None  # arguments checked, when reusable
        shown: tuple[str, str] | None = None  # arguments and their event detail, redacted
        cut = "timeout_seconds" in config.model_fields_set  # a timeout the user set cuts
        while True:
            checked: dict[str, Any] | InvalidArgsError
            if last is not None and last[0] is raw:
                checked = dict(last[1])  # a retry with the same arguments: checked already
            else:
                checked = tool.check_arguments(raw)
                if type(checked) is dict:
                    # Only values no attempt can change are reused (a list the tool appended
                    # to comes fresh again). A loop, not ``all(...)``: every tool call is here.
                    for value in checked.values():
                        if type(value) not in _SCALARS:
                            break
                    else:
                        last = (raw, checked)
            if isinstance(checked, InvalidArgsError):
                # The message already quotes the raw arguments: no detail needed.
                self.tool_error(call, None, checked)
                kind: FailureKind = "invalid_args"
                failure: Exception = checked
                record: ErrorRecord | None = None
            else:
                attempts += 1
                if rec is not None:
                    if shown is None or shown[0] is not raw:
                        shown = (raw, redact(preview(raw)))
                    rec.tool_step("tool.call", name, call_id, attempts, shown[1], marks)
                try:
                    result = yield Attempt(
                        tool, checked, timeout, clock, emit, call_id, attempts, cut, rec
                    )
                except Exception as exc:
                    # The usual failure is none of these, told by its class; others by isinstance
                    if exc.__class__ in PLAIN_TRANSIENT:
                        hard = False
                    elif isinstance(exc, NEVER_RECOVERED):
                        close_aborted(rec, name, call_id, attempts, exc, marks)
                        raise
                    else:
                        hard = isinstance(exc, _HARD)
                    if hard:
                        exc.tool = exc.tool or name  # type: ignore[attr-defined]
                    record = self.record(exc)
                    if rec is not None:
                        rec.tool_error(
                            name,
                            call_id,
                            attempts,
                            record,
                            {**marks, "ambiguous": is_ambiguous(exc)} if marks else marks,
                        )
                    if hard:
                        if isinstance(exc, ToolExecutionError):
                            raise  # a hard failure: no retry, no further model call
                        if builtin:
                            raise  # this agent escalates to whoever runs it
                        return self.escalated(name, call, exc, attempts)  # type: ignore[arg-type]
                    kind = "timeout" if isinstance(exc, ToolTimeoutError) else "execution"
                    failure = exc
                except GeneratorExit:
                    raise  # closed undriven (by the collector): nothing interrupted the tool
                except BaseException as exc:  # KeyboardInterrupt, CancelledError, SystemExit
                    close_aborted(rec, name, call_id, attempts, exc, marks)
                    raise
                else:
                    if isinstance(result, ToolFailure):
                        self.tool_error(call, attempts, result)
                        return Outcome(
                            self.payload(name, result, attempts),
                            value=result,
                            error=result,
                            attempts=attempts,
                        )
                    content = render_result(result)
                    if rec is not None:
                        detail = redact(preview(content))
                        rec.tool_step("tool.result", name, call_id, attempts, detail, {})
                    return Outcome(content, result, None, attempts)  # positional: no kwargs dict

            # The same kind resolves to the same action all through the call.
            if resolved is None or resolved[0] != kind:
                action, plan = self.memo.resolve(
                    kind,
                    name,
                    (tool.on_error, self.on_tool_error.get(name), self.tool_defaults),
                    config,
                )
                guarded = plan is not None and bool(marks) and not plan.action.allow_non_idempotent
                resolved = (kind, action, plan, guarded)
            else:
                action, plan, guarded = resolved[1], resolved[2], resolved[3]
            try:
                if plan is not None:  # the usual action: no generator of its own
                    step: Outcome | str | float = self.retried(
                        plan,
                        failure,
                        tool,
                        call_id,
                        attempts,
                        used,
                        config,
                        self.record(failure) if record is None else record,
                        guarded,
                    )
                    if step.__class__ is not Outcome:
                        # `check_cancel`, inline (the token's flag: its property is a call),
                        # before the wait (a cancelled run waits for nothing) and after it
                        if cancel is not None and cancel._cancelled:  # noqa: SLF001
                            raise Cancelled
                        yield Sleep(clock, step, cancel)  # type: ignore[arg-type]
                        if cancel is not None and cancel._cancelled:  # noqa: SLF001
                            raise Cancelled
                        step = raw
                else:
                    step = yield from self.recover(
                        action, kind, failure, tool, call, raw, attempts, used, config
                    )
            finally:
                # Its traceback holds this frame: no exception-frame cycle outlives the call.
                retried = failure
                del failure
                self._record = None
            if isinstance(step, Outcome):
                return step
            # Retried: nothing of the run shows this failure again. Its traceback would keep
            # the run's frames (the run, its trace, the agent) alive as long as the exception
            # lives, and a marker's exception is one instance that lives the whole session.
            retried.__traceback__ = None
            del retried
            raw = step

    def retried(
        self,
        plan: RetryPlan,
        error: Exception,
        tool: BaseTool[Any, Any],
        call_id: str | None,
        attempts: int,
        used: dict[int, int],
        config: ResilienceConfig,
        record: ErrorRecord,
        guarded: bool,
    ) -> Outcome | float:
        """Apply a `Retry` (its ``plan``) to a failure: the wait before the next try, or an end.

        ``call_id`` is the tool call's id; ``record`` the failure's trace record; ``guarded``
        says an ambiguous failure ends the retries (a tool that must not run twice).
        """
        __tracebackhide__ = True
        action = plan.action
        key = id(action)
        runs = used.get(key, 0) + 1
        used[key] = runs
        # By default the trace record says it: what `Retry.should_retry` would classify.
        retry = record.retryable if action.retry_on is None else action.should_retry(error)
        name, max_attempts = tool.name, plan.max_attempts
        if runs < max_attempts and retry:
            if guarded and is_ambiguous(error):
                # It may have taken effect: the model checks before calling it again.
                if config.on_exhaustion == "raise":
                    return self.exhausted(name, error, attempts, config)
                return self.fed_back(tool, error, attempts)
            delay = plan.delay(runs, self.uniform())
            rec = self.rec
            if rec is not None:
                rec.tool_retry(name, call_id, runs + 1, max_attempts, delay, record)
            self.usage.retries += 1
            return delay
        if runs >= max_attempts > 1:  # every attempt the policy allows failed
            self.emit(
                "tool.exhausted",
                tool=name,
                call_id=call_id,
                framework=_OURS,
                attempt=runs,
                max_attempts=max_attempts,
                error=record,
            )
        return self.exhausted(name, error, attempts, config)

    def recover(
        self,
        action: Action,
        kind: FailureKind,
        error: Exception,
        tool: BaseTool[Any, Any],
        call: ToolCall,
        raw: str,
        attempts: int,
        used: dict[int, int],
        config: ResilienceConfig,
    ) -> Steps[Outcome | str]:
        """Apply ``action`` to a failure: an `Outcome` ends the call, a str is new arguments."""
        __tracebackhide__ = True
        emit, name = self.emit, tool.name
        key = id(action)
        if isinstance(action, Fix):  # (a `Retry` is the caller's: see `retried`)
            rounds = used.get(key, 0) + 1
            used[key] = rounds
            if rounds > action.retries:
                return self.exhausted(name, error, attempts, config)
            if action.agent.fixer_function is not None:
                fixed = run_function_fixer(self, action, tool, call, error, raw, rounds)
            else:
                fixed = yield from run_fixer(self, action, tool, call, error, raw, rounds)
            if isinstance(fixed, Outcome):
                return fixed
            if fixed is None:  # unusable or unchanged: another round would change nothing
                return self.exhausted(name, error, attempts, config)
            return fixed
        if isinstance(action, RespondWith):
            content = render_result(action.value)
            emit(
                "tool.result",
                tool=name,
                call_id=call.id,
                attempt=attempts or None,
                framework=_OURS,
                detail=f"respond_with: {preview(content)}",
            )
            # The substitute is the call's result: `Tool.invoke` returns it, as a run hands it
            # to the model.
            return Outcome(content, value=action.value, attempts=attempts)
        if isinstance(action, RaiseError):
            raise error
        assert isinstance(action, FeedBack)
        return self.fed_back(tool, error, attempts)

    def fed_back(self, tool: BaseTool[Any, Any], error: Exception, attempts: int) -> Outcome:
        """The failure as the model gets it.

        A non-idempotent tool's ambiguous failure comes with the advice to check first.
        """
        content = self.payload(tool.name, error, attempts)
        if is_ambiguous(error) and non_idempotent(tool):
            content = with_recheck(content, tool.name)
        return Outcome(content, error=error, attempts=attempts)

    def payload(self, name: str, error: BaseException | ToolFailure, attempts: int) -> str:
        """The JSON object the model sees for a failed tool.

        Its ``error`` is the trace record's text, so the message is redacted once.
        """
        info = classify(error, tool=name)
        record = self.record(error)
        return json.dumps(
            {
                "ok": False,
                "tool": name,
                "error": str(record) if isinstance(error, BaseException) else record.message,
                "error_type": info.kind,
                "retryable": info.retryable,
                "attempts": attempts,
                "recommendations": info.recommendations,
            }
        )

    def tool_error(
        self, call: ToolCall, attempt: int | None, error: BaseException | ToolFailure, **marks: Any
    ) -> None:
        record = self.record(error)
        if self.rec is not None:
            self.rec.tool_error(call.name, call.id, attempt, record, marks)

    def escalated(self, name: str, call: ToolCall, exc: EscalationError, attempts: int) -> Outcome:
        self.emit(
            "escalation",
            tool=name,
            call_id=call.id,
            reason=exc.reason,
            severity=exc.severity.name,
        )
        return Outcome(f"ERROR: Tool '{name}' failed: {exc.reason}", error=exc, attempts=attempts)

    def exhausted(
        self, name: str, error: Exception, attempts: int, config: ResilienceConfig
    ) -> Outcome:
        __tracebackhide__ = True
        if config.on_exhaustion == "raise":
            raise ToolExecutionError(
                f"tool {name!r} failed after {attempts} attempt(s): "
                f"{type(error).__name__}: {exception_text(error)}",
                tool=name,
            ) from error
        return Outcome(self.payload(name, error, attempts), error=error, attempts=attempts)
