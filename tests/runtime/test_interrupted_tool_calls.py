"""A tool call stopped by an interruption is closed in the trace, then the stop goes on.

KeyboardInterrupt, SystemExit, asyncio.CancelledError, and the errors never recovered (a
failed assertion, a UsageError, a budget cap) raised by a tool end the run; the trace
still answers the ``tool.call`` with a ``tool.error`` of kind "aborted".
"""

from __future__ import annotations

import asyncio
import contextvars

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool
from pytest_agentfaults.runtime._recorder import collecting

STOPS = [
    KeyboardInterrupt(),
    SystemExit(3),
    asyncio.CancelledError(),
    AssertionError("a mock's check"),
    af.UsageError("misused"),
    af.BudgetExceededError("over", limit="max_tool_calls", value=1),
]


def ids(error: BaseException) -> str:
    return type(error).__name__


def assert_closed(events: list[af.Event], error: BaseException, *, seen: str = "") -> None:
    calls = [e for e in events if e.type == "tool.call"]
    errors = [e for e in events if e.type == "tool.error"]
    assert len(calls) == 1
    (closing,) = errors
    assert (closing.tool, closing.call_id, closing.attempt) == (
        calls[0].tool,
        calls[0].call_id,
        calls[0].attempt,
    )
    assert closing.error.kind == "aborted"
    assert closing.error.type == (seen or type(error).__name__)
    assert closing.error.retryable is False


@pytest.mark.parametrize("error", STOPS, ids=ids)
def test_a_sync_agents_interrupted_tool_call_is_closed_and_the_stop_propagates(error):
    @af.tool
    def work() -> str:
        """Work."""
        raise error

    model = ScriptedModel([call_tool("work")], strict=False)
    agent = af.Agent(
        "bot", model=model, tools=[work], clock=af.VirtualClock(), observer=(events := []).append
    )
    if isinstance(error, af.BudgetExceededError):
        agent.run("x")  # a budget cap ends the run with a result, not a raise
    else:
        with pytest.raises(type(error)) as caught:
            agent.run("x")
        assert caught.value is error
    assert_closed(events, error)


@pytest.mark.parametrize("error", STOPS, ids=ids)
def test_an_async_agents_interrupted_tool_call_is_closed_and_the_stop_propagates(error):
    @af.tool
    async def work() -> str:
        """Work."""
        raise error

    model = ScriptedModel([call_tool("work")], strict=False)
    agent = af.Agent(
        "bot", model=model, tools=[work], clock=af.VirtualClock(), observer=(events := []).append
    )

    async def main() -> None:
        await agent.arun("x")

    if isinstance(error, af.BudgetExceededError):
        asyncio.run(main())  # a budget cap ends the run with a result, not a raise
    else:
        with pytest.raises(type(error)) as caught:
            asyncio.run(main())
        assert caught.value is error
    # asyncio lets a KeyboardInterrupt or SystemExit of the tool's task (its timeout's) out
    # of the loop, and cancels the run's task: the run ends by that cancellation.
    seen = "CancelledError" if isinstance(error, (KeyboardInterrupt, SystemExit)) else ""
    assert_closed(events, error, seen=seen)


@pytest.mark.parametrize("error", STOPS, ids=ids)
def test_an_interrupted_invoke_is_closed_in_the_collectors_trace(error):
    @af.tool
    def work() -> str:
        """Work."""
        raise error

    trace = af.Trace()

    def inside() -> None:
        with collecting(trace):
            work.invoke({})

    with pytest.raises(type(error)) as caught:
        contextvars.Context().run(inside)
    assert caught.value is error
    assert_closed(trace.events, error)


def test_classify_calls_every_interruption_aborted():
    for error in (KeyboardInterrupt(), SystemExit(0), asyncio.CancelledError()):
        info = af.classify(error)
        assert (info.kind, info.retryable) == ("aborted", False)


def test_a_tool_call_closed_unfinished_records_no_aborted_error():
    # A tool_call generator closed while an attempt is out (the garbage collector closing
    # one nobody drives any more) was not interrupted by the tool: no tool.error is made
    # up for it, at whatever moment the collector runs.
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.runtime._toolcalls import ToolCalls
    from pytest_agentfaults.runtime.models.base import ToolCall

    @af.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    clock = af.VirtualClock()
    calls = ToolCalls(
        tools={"add": add},
        resilience=af.ResilienceConfig(),
        clock=clock,
        rec=Recorder(agent="bot", clock=clock),
        uniform=lambda: 0.5,
    )
    steps = calls.tool_call(ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'))
    next(steps)  # the attempt is out
    steps.close()
    assert [event.type for event in calls.rec.trace] == ["tool.call"]
