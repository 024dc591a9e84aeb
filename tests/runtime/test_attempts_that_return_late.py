"""An attempt that returns past its timeout timed out all the same; one that returns at it
did not.

On a clock of its own kind (neither real nor virtual) nothing cuts the attempt: the
timeout is checked when the tool returns, against the time the clock says it took.
"""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


class StepClock:
    """A clock of its own kind: time moves only when someone sleeps on it."""

    def __init__(self) -> None:
        self.t = 100.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    async def asleep(self, seconds: float) -> None:
        self.t += seconds


def _agent(took: float, *, is_async: bool) -> af.Agent:
    clock = StepClock()
    if is_async:

        @af.tool(name="report")
        async def slow_async(pages: int) -> str:
            """Build a report."""
            clock.sleep(took)
            return "built"

        tool = slow_async
    else:

        @af.tool(name="report")
        def slow(pages: int) -> str:
            """Build a report."""
            clock.sleep(took)
            return "built"

        tool = slow

    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("report", pages=3), say("ok")]),
        tools=[tool],
        clock=clock,  # type: ignore[arg-type]
        resilience=af.ResilienceConfig(timeout_seconds=2.0, max_retries=0),
    )


def _tool_message(result: af.RunResult) -> str:
    return next(m.content for m in result.messages if m.role == "tool")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_attempt_returning_past_its_timeout_is_a_timeout(is_async: bool) -> None:
    result = _agent(2.5, is_async=is_async).run("go")
    [error] = result.trace.of("tool.error", tool="report")
    assert error.error is not None
    assert error.error.type == "ToolTimeoutError"
    assert error.error.message == "tool 'report' did not finish within 2s"
    assert json.loads(_tool_message(result))["error"].startswith("ToolTimeoutError")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_attempt_returning_at_its_timeout_succeeded(is_async: bool) -> None:
    result = _agent(2.0, is_async=is_async).run("go")
    assert result.trace.count("tool.error") == 0
    assert _tool_message(result) == "built"


@pytest.mark.asyncio
@pytest.mark.parametrize("took", [2.0, 2.5])
async def test_arun_checks_the_timeout_when_the_attempt_returns(took: float) -> None:
    result = await _agent(took, is_async=False).arun("go")
    timed_out = took > 2.0
    assert result.trace.count("tool.error") == int(timed_out)
    assert (_tool_message(result) == "built") is not timed_out
