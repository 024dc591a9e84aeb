"""Tool.invoke without an agent: the happy path is a validated call, failures recover.

A bare invoke records no events; inside a trace collector it records them as a run of its
own. Its first failure goes through the tool's recovery policy as that attempt's outcome.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Annotated, TypeVar

import pytest
from pydantic import BaseModel, Field

import pytest_agentfaults as af
from pytest_agentfaults.errors import NEVER_RECOVERED, classify
from pytest_agentfaults.runtime._recorder import collecting

T = TypeVar("T")


def bare(fn: Callable[[], T]) -> T:
    """Run ``fn`` outside the plugin's per-test trace and fault plan, as in an app."""
    return contextvars.Context().run(fn)


class CountingClock:
    """A clock of its own kind (neither real nor virtual): invoke may take its plain path."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


def test_a_bare_invoke_records_nothing_and_a_collector_sees_its_events():
    @af.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def outside_then_inside() -> af.Trace:
        outside = af.Trace()
        with collecting(outside):
            pass
        assert add.invoke({"a": 1, "b": 2}) == 3
        assert outside.events == []
        inside = af.Trace()
        with collecting(inside):
            assert add.invoke('{"a": 1, "b": 2}') == 3
        return inside

    inside = bare(outside_then_inside)
    assert [e.type for e in inside.events] == ["tool.call", "tool.result"]
    assert {e.agent for e in inside.events} == {"tool:add"}


def test_the_first_failure_of_the_plain_path_is_recovered_by_the_tools_policy():
    calls: list[int] = []

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=3, strategy="fixed")))
    def flaky(n: int) -> int:
        """Fails twice."""
        calls.append(n)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return n * 2

    clock = CountingClock()
    assert bare(lambda: flaky.invoke({"n": 4}, clock=clock)) == 8
    assert calls == [4, 4, 4]  # the failed first attempt ran once, never twice
    assert clock.sleeps == [1.0, 1.0]


def test_a_plain_attempt_past_its_timeout_is_a_timeout_the_policy_sees():
    runs: list[float] = []
    clock = CountingClock()

    @af.tool(on_error=af.OnError(timeout=af.retry(max_attempts=2, strategy="fixed")))
    def slow() -> str:
        """Takes 90 s of this clock the first time."""
        runs.append(clock.t)
        clock.t += 90.0 if len(runs) == 1 else 1.0
        return "done"

    # The default 60 s timeout is checked when a sync tool returns: a timeout, retried.
    assert bare(lambda: slow.invoke({}, clock=clock)) == "done"
    assert runs == [0.0, 91.0]
    assert clock.sleeps == [1.0]


def test_the_plain_path_validates_as_the_schema_does():
    class Point(BaseModel):
        x: int
        y: int

    @af.tool
    def place(at: Point, zoom: Annotated[int, Field(gt=0)] = 1, json: str = "") -> str:
        """Place a point."""
        return f"{at.x},{at.y}@{zoom}{json}"

    assert bare(lambda: place.invoke({"at": {"x": 1, "y": 2}})) == "1,2@1"
    given = '{"at": {"x": 1, "y": 2}, "zoom": 3, "json": "!"}'
    assert bare(lambda: place.invoke(given)) == "1,2@3!"
    with pytest.raises(af.InvalidArgsError, match="zoom: Input should be greater than 0") as info:
        bare(lambda: place.invoke({"at": {"x": 1, "y": 2}, "zoom": 0}))
    assert info.value.tool == "place"
    with pytest.raises(af.InvalidArgsError, match="nope: Extra inputs are not permitted"):
        bare(lambda: place.invoke({"at": {"x": 1, "y": 2}, "nope": 1}))


def test_a_tool_failure_comes_back_from_the_plain_path():
    @af.tool
    def read(path: str) -> str | af.ToolFailure:
        """Read."""
        return af.ToolFailure(error="File not found")

    assert bare(lambda: read.invoke({"path": "x"})) == af.ToolFailure(error="File not found")


@pytest.mark.parametrize(
    "error", [af.UsageError("bad"), AssertionError("mock"), af.NetworkBlockedError("refused")]
)
def test_never_recovered_errors_pass_through_invoke_untouched(error: Exception):
    calls: list[int] = []

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=5)))
    def broken() -> str:
        """Raises a developer's or a test's mistake."""
        calls.append(1)
        raise error

    with pytest.raises(type(error)):
        bare(lambda: broken.invoke({}, clock=CountingClock()))
    assert calls == [1]


def test_never_recovered_is_one_list_classify_agrees_with():
    made = {
        af.BudgetExceededError: af.BudgetExceededError("cap", limit="max_turns", value=1),
        af.UsageError: af.UsageError("misuse"),
        AssertionError: AssertionError("exhausted script"),
        af.NetworkBlockedError: af.NetworkBlockedError("refused", host="api.openai.com"),
    }
    assert set(NEVER_RECOVERED) == set(made)
    for error in made.values():
        assert classify(error).retryable is False


def test_the_happy_path_builds_no_agent_records_nothing_and_drives_nothing(monkeypatch):
    # What made invoke cost ~20x a validated call: an Agent per call, its events, and the
    # driven generator. The plain path must need none of them (the cost itself is measured
    # in benchmarks/bench_runtime.py, never timed here).
    from pytest_agentfaults.runtime import _invoke, agent

    @af.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the happy path must not get here")

    monkeypatch.setattr(agent.Agent, "__init__", forbidden)
    monkeypatch.setattr(_invoke, "drive", forbidden)
    monkeypatch.setattr(_invoke, "Recorder", forbidden)
    assert bare(lambda: add.invoke({"a": 1, "b": 2})) == 3
    with pytest.raises(AssertionError, match="must not get here"):
        bare(lambda: add.invoke({"a": "x", "b": 2}))  # an invalid call takes the pipeline


@pytest.mark.parametrize("invoke_async", [False, True], ids=["invoke", "ainvoke"])
def test_a_respond_with_policy_gives_invoke_its_substitute_instead_of_the_error(invoke_async):
    @af.tool(on_error=af.OnError(execution=af.respond_with({"cached": True})))
    def lookup(key: str) -> dict[str, bool]:
        """Always fails; its policy answers from a cache."""
        raise ConnectionError(f"reset while reading {key}")

    if invoke_async:
        result = bare(lambda: asyncio.run(lookup.ainvoke({"key": "k"})))
    else:
        result = bare(lambda: lookup.invoke({"key": "k"}))
    assert result == {"cached": True}
