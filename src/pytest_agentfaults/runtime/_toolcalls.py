"""Running one tool call through its recovery policy: the tool half of the run loop.

`ToolCalls` is mixed into the run (`agent._Run`): it validates the model's arguments,
runs attempts as effects, classifies failures, and applies the resolved action (retry
after a wait, a fixer round, feed back, raise, respond), recording an event at each step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from pytest_agentfaults.errors import (
    BudgetExceededError,
    EscalationError,
    InvalidArgsError,
    Severity,
    ToolExecutionError,
    ToolTimeoutError,
    UnknownToolError,
    UsageError,
    classify,
    is_ambiguous,
)
from pytest_agentfaults.runtime._idempotency import must_not_rerun, non_idempotent, with_recheck
from pytest_agentfaults.runtime._loop import Attempt, Sleep, Steps
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.output import unfence
from pytest_agentfaults.runtime.policy import (
    Action,
    FailureKind,
    FeedBack,
    Fix,
    PolicySources,
    RaiseError,
    RespondWith,
    Retry,
)
from pytest_agentfaults.runtime.redact import redact_text
from pytest_agentfaults.runtime.tools import Tool, ToolFailure, render_result

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.runtime.agent import Agent, CancelToken, Usage
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.models.base import ToolCall

__all__ = ["BUILTIN_TOOLS", "ToolCalls"]


def _escalate(reason: str, severity: Severity = Severity.MEDIUM) -> str:
    """Give up on the task and hand it back, with the reason and how serious it is."""
    raise EscalationError(reason, severity)


def _throw_exception(reason: str) -> str:
    """Stop everything: a failure that must not be retried or worked around."""
    raise ToolExecutionError(reason)


BUILTIN_TOOLS: Final[dict[str, Tool[Any, Any]]] = {
    "escalate": Tool(_escalate, name="escalate"),
    "throw_exception": Tool(_throw_exception, name="throw_exception"),
}


# Never handled by a recovery policy: budget caps, and mistakes of the developer or the test
# (a UsageError, an exhausted script or unmatched mock raising AssertionError).
_PASS_THROUGH = (BudgetExceededError, UsageError, AssertionError)


_NON_IDEMPOTENT: Final[dict[str, Any]] = {"idempotent": False}


class _Cancelled(Exception):
    """The run's CancelToken was cancelled during a wait."""


@dataclass(slots=True)
class _Outcome:
    """The end of one tool call: what the model is told, and what happened."""

    content: str
    value: Any = None
    error: BaseException | ToolFailure | None = None
    attempts: int = 0


class ToolCalls:
    """The tool-call half of a run. The run provides the attributes declared here."""

    agent: Agent
    rec: Recorder
    clock: Clock
    usage: Usage
    cancel: CancelToken
    _record: tuple[object, ErrorRecord] | None

    if TYPE_CHECKING:  # supplied by the run

        def uniform(self) -> float: ...
        def check_cancel(self) -> None: ...
        def absorb(self, child: Any) -> None: ...

    def record(self, error: BaseException | ToolFailure) -> ErrorRecord:
        """The trace record of ``error``, built once however many events carry it."""
        cached = self._record
        if cached is not None and cached[0] is error:
            return cached[1]
        record = ErrorRecord.from_exception(error)
        self._record = (error, record)
        return record

    def tool_call(self, call: ToolCall) -> Steps[_Outcome]:
        """Run one tool call the model asked for, through its recovery policy."""
        agent, rec = self.agent, self.rec
        name = call.name
        tool = agent.tools.get(name)
        builtin = False
        if tool is None and name in agent.builtin_tools:
            tool, builtin = BUILTIN_TOOLS[name], True
        if tool is None:
            available = [*agent.tools, *agent.builtin_tools]
            error = UnknownToolError(
                f"unknown tool {name!r}; available: {', '.join(available) or '(none)'}",
                tool=name,
                available=available,
            )
            self.tool_error(call, None, error)
            return _Outcome(self.payload(name, error, 0), error=error)

        config = agent.resilience.for_tool(name)
        # A tool that must not run twice says so on its events, for the verdict.
        marks: dict[str, Any] = _NON_IDEMPOTENT if non_idempotent(tool) else {}
        sources: PolicySources | None = None  # built on the first failure only
        raw = call.arguments
        attempts = 0
        used: dict[int, int] = {}
        while True:
            checked = tool.check_arguments(raw)
            if isinstance(checked, InvalidArgsError):
                # The message already quotes the raw arguments: no detail needed.
                self.tool_error(call, None, checked)
                kind: FailureKind = "invalid_args"
                failure: Exception = checked
            else:
                attempts += 1
                rec.emit(
                    "tool.call",
                    tool=name,
                    call_id=call.id,
                    attempt=attempts,
                    detail=_preview(raw),
                    **marks,
                )
                try:
                    result = yield Attempt(
                        tool,
                        checked,
                        config.timeout_seconds,
                        self.clock,
                        rec.emit,
                        call.id,
                        attempts,
                        "timeout_seconds" in config.model_fields_set,
                    )
                except _PASS_THROUGH:
                    raise
                except Exception as exc:
                    if isinstance(exc, ToolExecutionError | EscalationError):
                        exc.tool = exc.tool or name
                    if marks:
                        self.tool_error(call, attempts, exc, **marks, ambiguous=is_ambiguous(exc))
                    else:
                        self.tool_error(call, attempts, exc)
                    if isinstance(exc, ToolExecutionError):
                        raise  # a hard failure: no retry, no further model call
                    if isinstance(exc, EscalationError):
                        if builtin:
                            raise  # this agent escalates to whoever runs it
                        return self.escalated(name, call, exc, attempts)
                    kind = "timeout" if isinstance(exc, ToolTimeoutError) else "execution"
                    failure = exc
                else:
                    if isinstance(result, ToolFailure):
                        self.tool_error(call, attempts, result)
                        return _Outcome(
                            self.payload(name, result, attempts),
                            value=result,
                            error=result,
                            attempts=attempts,
                        )
                    content = render_result(result)
                    rec.emit(
                        "tool.result",
                        tool=name,
                        call_id=call.id,
                        attempt=attempts,
                        detail=_preview(content),
                    )
                    return _Outcome(content, value=result, attempts=attempts)

            if sources is None:
                sources = PolicySources(
                    levels=(tool.on_error, agent.on_tool_error.get(name), agent.tool_defaults),
                    config=config,
                )
            action = sources.resolve(kind)
            try:
                step = yield from self.recover(
                    action, kind, failure, tool, call, raw, attempts, used, config
                )
            finally:
                # The failure's traceback holds this frame: drop the reference so no
                # exception -> traceback -> frame -> exception cycle outlives the call.
                del failure
                self._record = None
            if isinstance(step, _Outcome):
                return step
            raw = step

    def recover(
        self,
        action: Action,
        kind: FailureKind,
        error: Exception,
        tool: Tool[Any, Any],
        call: ToolCall,
        raw: str,
        attempts: int,
        used: dict[int, int],
        config: ResilienceConfig,
    ) -> Steps[_Outcome | str]:
        """Apply ``action`` to a failure: an `_Outcome` ends the call, a str is new arguments."""
        rec, name = self.rec, tool.name
        key = id(action)
        if isinstance(action, Retry):
            runs = used.get(key, 0) + 1
            used[key] = runs
            if runs < action.max_attempts and action.should_retry(error):
                if must_not_rerun(tool, error, action):
                    # It may have taken effect: the model checks before calling it again.
                    if config.on_exhaustion == "raise":
                        return self.exhausted(name, error, attempts, config)
                    return self.fed_back(tool, error, attempts)
                delay = action.delay(runs, config, self.uniform())
                rec.emit(
                    "tool.retry",
                    tool=name,
                    call_id=call.id,
                    attempt=runs + 1,
                    max_attempts=action.max_attempts,
                    delay=delay,
                    error=self.record(error),
                )
                self.usage.retries += 1
                yield Sleep(self.clock, delay)
                self.check_cancel()
                return raw
            return self.exhausted(name, error, attempts, config)
        if isinstance(action, Fix):
            rounds = used.get(key, 0) + 1
            used[key] = rounds
            if rounds > action.retries:
                return self.exhausted(name, error, attempts, config)
            if action.agent._function is not None:
                fixed = self.run_function_fixer(action, tool, call, error, raw, rounds)
            else:
                fixed = yield from self.run_fixer(action, tool, call, error, raw, rounds)
            if isinstance(fixed, _Outcome):
                return fixed
            if fixed is None:  # unusable or unchanged: another round would change nothing
                return self.exhausted(name, error, attempts, config)
            return fixed
        if isinstance(action, RespondWith):
            content = render_result(action.value)
            rec.emit(
                "tool.result",
                tool=name,
                call_id=call.id,
                attempt=attempts or None,
                detail=f"respond_with: {_preview(content)}",
            )
            return _Outcome(content, value=action.value, error=error, attempts=attempts)
        if isinstance(action, RaiseError):
            raise error
        assert isinstance(action, FeedBack)
        return self.fed_back(tool, error, attempts)

    def fed_back(self, tool: Tool[Any, Any], error: Exception, attempts: int) -> _Outcome:
        """The failure as the model gets it.

        A non-idempotent tool's ambiguous failure comes with the advice to check first.
        """
        content = self.payload(tool.name, error, attempts)
        if is_ambiguous(error) and non_idempotent(tool):
            content = with_recheck(content, tool.name)
        return _Outcome(content, error=error, attempts=attempts)

    def run_fixer(
        self,
        action: Fix,
        tool: Tool[Any, Any],
        call: ToolCall,
        error: Exception,
        raw: str,
        round_: int,
    ) -> Steps[_Outcome | str | None]:
        """One fixer round: new arguments (str), an `_Outcome` that ends the call, or None."""
        fixer = action.agent
        self.fixer_call(action, tool, call, error, round_)
        try:
            produced = yield from fixer._fixer_step(self, tool, error, raw)
        except Exception as exc:
            return self.fixer_failed(tool, call, round_, exc)
        return self.fixer_done(tool, call, raw, round_, produced)

    def run_function_fixer(
        self,
        action: Fix,
        tool: Tool[Any, Any],
        call: ToolCall,
        error: Exception,
        raw: str,
        round_: int,
    ) -> _Outcome | str | None:
        """`run_fixer` for a function fixer: a plain call, no nested run and no generator."""
        function = action.agent._function
        assert function is not None
        self.fixer_call(action, tool, call, error, round_)
        try:
            produced = function(raw)
        except Exception as exc:
            return self.fixer_failed(tool, call, round_, exc)
        return self.fixer_done(tool, call, raw, round_, produced)

    def fixer_call(
        self, action: Fix, tool: Tool[Any, Any], call: ToolCall, error: Exception, round_: int
    ) -> None:
        self.rec.emit(
            "fixer.call",
            tool=tool.name,
            call_id=call.id,
            attempt=round_,
            max_attempts=action.retries,
            detail=action.agent.name,
            error=self.record(error),
        )
        self.usage.fixer_calls += 1

    def fixer_failed(
        self, tool: Tool[Any, Any], call: ToolCall, round_: int, exc: Exception
    ) -> _Outcome | None:
        """A fixer that escalated (an outcome), failed hard (raised) or broke (None)."""
        rec, name = self.rec, tool.name
        if isinstance(exc, EscalationError):
            rec.emit("fixer.result", tool=name, call_id=call.id, attempt=round_, status="escalated")
            return self.escalated(name, call, exc, 0)
        if isinstance(exc, ToolExecutionError):
            exc.tool = exc.tool or name
            rec.emit(
                "fixer.result",
                tool=name,
                call_id=call.id,
                attempt=round_,
                status="failed",
                error=self.record(exc),
            )
            raise exc
        if isinstance(exc, _PASS_THROUGH):
            raise exc
        rec.emit(
            "fixer.result",
            tool=name,
            call_id=call.id,
            attempt=round_,
            status="error",
            error=self.record(exc),
        )
        return None

    def fixer_done(
        self, tool: Tool[Any, Any], call: ToolCall, raw: str, round_: int, produced: Any
    ) -> str | None:
        """Record what a fixer returned: new arguments, or None when unusable or unchanged.

        Arguments are compared as the tool reads them (stripped, unfenced), so a fixer that
        only trims whitespace has not changed them.
        """
        fixed = _as_arguments(produced)
        if fixed is None:
            status = "invalid"
        else:
            # unfence only shortens: longer output cannot be the same arguments.
            same = fixed == raw or (len(fixed) < len(raw) and fixed == unfence(raw))
            status = "unchanged" if same else "fixed"
        self.rec.emit(
            "fixer.result",
            tool=tool.name,
            call_id=call.id,
            attempt=round_,
            status=status,
            detail=_preview(fixed if fixed is not None else repr(produced)),
        )
        return fixed if status == "fixed" else None

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
        self,
        call: ToolCall,
        attempt: int | None,
        error: BaseException | ToolFailure,
        **marks: Any,
    ) -> None:
        self.rec.emit(
            "tool.error",
            tool=call.name,
            call_id=call.id,
            attempt=attempt,
            error=self.record(error),
            **marks,
        )

    def escalated(self, name: str, call: ToolCall, exc: EscalationError, attempts: int) -> _Outcome:
        self.rec.emit(
            "escalation",
            tool=name,
            call_id=call.id,
            reason=exc.reason,
            severity=exc.severity.name,
        )
        return _Outcome(f"ERROR: Tool '{name}' failed: {exc.reason}", error=exc, attempts=attempts)

    def exhausted(
        self, name: str, error: Exception, attempts: int, config: ResilienceConfig
    ) -> _Outcome:
        if config.on_exhaustion == "raise":
            raise ToolExecutionError(
                f"tool {name!r} failed after {attempts} attempt(s): "
                f"{type(error).__name__}: {error}",
                tool=name,
            ) from error
        return _Outcome(self.payload(name, error, attempts), error=error, attempts=attempts)


def _as_arguments(produced: Any) -> str | None:
    """A fixer's output as an arguments JSON string (None when it is not usable)."""
    if isinstance(produced, str):
        return unfence(produced)
    if isinstance(produced, Mapping):
        return json.dumps(dict(produced))
    if isinstance(produced, BaseModel):
        return produced.model_dump_json(by_alias=True)  # aliases are the wire names
    return None


def _preview(text: str, limit: int = 120) -> str:
    text = text.replace("\n", " ")
    if len(text) <= limit:
        return text  # the recorder redacts it
    # redacted before it is cut: a key cut short no longer looks like one
    text = redact_text(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
