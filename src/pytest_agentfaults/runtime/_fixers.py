"""Fixer rounds: a fixer agent (or function) repairs a failed tool call's arguments.

Part of the tool-call pipeline (`ToolCalls.recover` runs them for a `Fix` action).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from pytest_agentfaults.errors import NEVER_RECOVERED, EscalationError, ToolExecutionError
from pytest_agentfaults.runtime._drivers import Steps
from pytest_agentfaults.runtime._finite import dumps
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.output import preview, unfence

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._toolcalls import Outcome, ToolCalls
    from pytest_agentfaults.runtime.models.base import ToolCall
    from pytest_agentfaults.runtime.policy import Fix

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["run_fixer", "run_function_fixer"]


def run_fixer(
    calls: ToolCalls,
    action: Fix,
    tool: BaseTool[Any, Any],
    call: ToolCall,
    error: Exception,
    raw: str,
    round_: int,
) -> Steps[Outcome | str | None]:
    """One fixer round: new arguments (str), an `Outcome` that ends the call, or None."""
    __tracebackhide__ = True
    fixer = action.agent
    _fixer_call(calls, action, tool, call, error, round_)
    try:
        produced = yield from fixer.fixer_steps(calls, tool, error, raw)
    except Exception as exc:
        return _fixer_failed(calls, tool, call, round_, exc)
    return _fixer_done(calls, tool, call, raw, round_, produced)


def run_function_fixer(
    calls: ToolCalls,
    action: Fix,
    tool: BaseTool[Any, Any],
    call: ToolCall,
    error: Exception,
    raw: str,
    round_: int,
) -> Outcome | str | None:
    """`run_fixer` for a function fixer: a plain call, no nested run and no generator."""
    __tracebackhide__ = True
    function = action.agent.fixer_function
    assert function is not None
    _fixer_call(calls, action, tool, call, error, round_)
    try:
        produced = function(raw)
    except Exception as exc:
        return _fixer_failed(calls, tool, call, round_, exc)
    return _fixer_done(calls, tool, call, raw, round_, produced)


def _fixer_call(
    calls: ToolCalls,
    action: Fix,
    tool: BaseTool[Any, Any],
    call: ToolCall,
    error: Exception,
    round_: int,
) -> None:
    calls.emit(
        "fixer.call",
        tool=tool.name,
        call_id=call.id,
        attempt=round_,
        max_attempts=action.retries,
        detail=action.agent.name,
        error=calls.record(error),
    )
    calls.usage.fixer_calls += 1


def _fixer_failed(
    calls: ToolCalls, tool: BaseTool[Any, Any], call: ToolCall, round_: int, exc: Exception
) -> Outcome | None:
    """A fixer that escalated (an outcome), failed hard (raised) or broke (None)."""
    emit, name = calls.emit, tool.name
    if isinstance(exc, EscalationError):
        emit("fixer.result", tool=name, call_id=call.id, attempt=round_, status="escalated")
        return calls.escalated(name, call, exc, 0)
    if isinstance(exc, ToolExecutionError):
        exc.tool = exc.tool or name
        emit(
            "fixer.result",
            tool=name,
            call_id=call.id,
            attempt=round_,
            status="failed",
            error=calls.record(exc),
        )
        raise exc
    if isinstance(exc, NEVER_RECOVERED):
        raise exc
    emit(
        "fixer.result",
        tool=name,
        call_id=call.id,
        attempt=round_,
        status="error",
        error=calls.record(exc),
    )
    return None


def _fixer_done(
    calls: ToolCalls, tool: BaseTool[Any, Any], call: ToolCall, raw: str, round_: int, produced: Any
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
    calls.emit(
        "fixer.result",
        tool=tool.name,
        call_id=call.id,
        attempt=round_,
        status=status,
        detail=preview(fixed if fixed is not None else repr(produced)),
    )
    return fixed if status == "fixed" else None


def _as_arguments(produced: Any) -> str | None:
    """A fixer's output as an arguments JSON string (None when it is not usable)."""
    if isinstance(produced, str):
        return unfence(produced)
    if isinstance(produced, Mapping):
        return dumps(dict(produced))
    if isinstance(produced, BaseModel):
        return produced.model_dump_json(by_alias=True)  # aliases are the wire names
    return None
