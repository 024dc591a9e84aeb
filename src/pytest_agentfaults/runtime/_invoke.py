"""`Tool.invoke` and `Tool.ainvoke`: one tool call through its recovery policy, no agent.

The happy path costs about a validated function call: with no trace collector and no
fault injection in force, nothing records, nothing is driven. A bare invoke records no
events; inside a trace collector (the plugin's ``trace`` fixture, `collecting`) it records
them as a run of its own, ``agent="tool:<name>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.runtime._drivers import Steps, adrive, drive, timed_out
from pytest_agentfaults.runtime._finite import dumps
from pytest_agentfaults.runtime._loop_facts import real_now
from pytest_agentfaults.runtime._pending import PENDING, switch_on
from pytest_agentfaults.runtime._recorder import Recorder, active_collectors, read_collecting
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime._toolcalls import ToolCalls
from pytest_agentfaults.runtime.backoff import ResilienceConfig, jitter_rng
from pytest_agentfaults.runtime.clock import (
    REAL_CLOCK,
    Clock,
    RealClock,
    VirtualClock,
    default_clock,
    read_default_clock,
)
from pytest_agentfaults.runtime.hooks import active_interceptors, framework_attempt
from pytest_agentfaults.runtime.models.base import ToolCall

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ainvoke", "invoke"]

_DEFAULT_CONFIG: Final = ResilienceConfig()
_DEFAULT_TIMEOUT: Final = _DEFAULT_CONFIG.timeout_seconds


def invoke(
    tool: BaseTool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    config: ResilienceConfig | None,
    clock: Clock | None,
) -> Any:
    """`Tool.invoke`: validate ``arguments`` and run ``tool`` through its recovery policy.

    The happy path is a plain call after validation: no pipeline, no event, nothing to
    drive. It is taken when nothing could see or change the attempt (no trace collector,
    no fault injection, no timeout that needs a worker thread or virtual deadline); the
    first failure then goes through the whole pipeline, as that attempt's outcome.
    """
    __tracebackhide__ = True
    if config is None:
        config, cut, timeout = _DEFAULT_CONFIG, False, _DEFAULT_TIMEOUT
    else:
        config = config.for_tool(tool.name)
        cut, timeout = _cut(config), config.timeout_seconds
    if PENDING.get() is not None:  # a test's first use of the runtime (`_pending`): once,
        switch_on()  # for the three reads below
    if clock is None:
        clock = read_default_clock() or REAL_CLOCK
    if (
        tool.is_async
        or active_interceptors()
        or read_collecting()[0]
        or (timeout is not None and (cut or type(clock) is VirtualClock))
    ):
        return drive(_standalone(tool, arguments, config, clock))
    checked = tool.quick_check(arguments)
    if checked is None:
        return drive(_standalone(tool, arguments, config, clock))  # invalid: the pipeline
    now = real_now if type(clock) is RealClock else clock.now  # RealClock.now, unwrapped
    start = 0.0 if timeout is None else now()
    try:
        result = tool.function(**checked)
    except Exception as exc:
        return drive(_first_failed(_standalone(tool, arguments, config, clock), exc))
    if timeout is not None and now() - start > timeout:
        late = timed_out(tool.name, timeout)
        return drive(_first_failed(_standalone(tool, arguments, config, clock), late))
    return result


async def ainvoke(
    tool: BaseTool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    config: ResilienceConfig | None,
    clock: Clock | None,
) -> Any:
    """`Tool.ainvoke`: the async twin of `invoke`."""
    __tracebackhide__ = True
    config = _DEFAULT_CONFIG if config is None else config.for_tool(tool.name)
    clock = clock if clock is not None else default_clock()
    return await adrive(_standalone(tool, arguments, config, clock))


def _standalone(
    tool: BaseTool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    config: ResilienceConfig,
    clock: Clock,
) -> Steps[Any]:
    """One tool call through a pipeline of its own: events only for a trace collector."""
    __tracebackhide__ = True
    # Inside another framework's attempt at a tool of this name (the test kit's), this call
    # is that attempt, recorded there: no events here (and the kit's faults pass it by).
    recorded = active_collectors() and framework_attempt() != tool.name
    rec = Recorder(agent=f"tool:{tool.name}", clock=clock) if recorded else None
    rng: list[Any] = []

    def uniform() -> float:
        if not rng:
            rng.append(jitter_rng())
        return float(rng[0].random())

    calls = ToolCalls(
        tools={tool.name: tool}, resilience=config, clock=clock, rec=rec, uniform=uniform
    )
    raw = arguments if isinstance(arguments, str) else dumps(dict(arguments or {}))
    outcome = yield from calls.tool_call(ToolCall(id="invoke", name=tool.name, arguments=raw))
    if outcome.error is not None and not isinstance(outcome.error, ToolFailure):
        raise outcome.error
    return outcome.value


def _first_failed(steps: Steps[Any], error: Exception) -> Steps[Any]:
    """``steps``, whose first tool attempt (already made) ended with ``error``."""
    __tracebackhide__ = True
    next(steps)  # the first Attempt: the caller already ran it
    try:
        effect = steps.throw(error)
    except StopIteration as stop:
        return stop.value
    finally:
        del error  # its traceback holds this frame
    while True:
        try:
            value = yield effect
        except BaseException as exc:  # the driver's outcome for the effect: pass it on
            try:
                effect = steps.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                effect = steps.send(value)
            except StopIteration as stop:
                return stop.value


def _cut(config: ResilienceConfig) -> bool:
    """Whether a timeout the user set cuts a sync attempt short (a worker thread)."""
    return "timeout_seconds" in config.model_fields_set
