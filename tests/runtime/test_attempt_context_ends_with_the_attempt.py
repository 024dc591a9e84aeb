"""What a tool attempt sets up ends with the attempt: its deadline, and where events go.

Under the virtual clock an attempt with a timeout has a deadline that cuts waits crossing
it; the backoff wait after a failed attempt is no longer under it. While a fault plan is
active, an attempt makes its run's trace the place HTTP events go; an HTTP request sent
after the run goes to the plan's own recorder, not into the finished run's trace.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import TypeVar

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.testing import FaultPlan

T = TypeVar("T")


def bare(fn: Callable[[], T]) -> T:
    """Run ``fn`` outside the plugin's per-test fault plan, as in an app."""
    return contextvars.Context().run(fn)


def _flaky_agent(clock: af.VirtualClock, *, is_async: bool) -> af.Agent:
    """A tool that fails once, then works; 5 s timeout; a 10 s wait before the retry."""
    calls: list[int] = []

    def body(n: int) -> str:
        calls.append(n)
        if len(calls) == 1:
            raise ConnectionError("reset")
        return "fetched"

    if is_async:

        @af.tool(name="fetch")
        async def fetch_async(n: int) -> str:
            """Fetch."""
            return body(n)

        tool = fetch_async
    else:

        @af.tool(name="fetch")
        def fetch(n: int) -> str:
            """Fetch."""
            return body(n)

        tool = fetch
    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", n=1), say("ok")]),
        tools=[tool],
        clock=clock,
        resilience=af.ResilienceConfig(
            timeout_seconds=5, max_retries=1, strategy="fixed", base_delay=10, jitter_factor=0
        ),
    )


@pytest.mark.parametrize("is_async", [False, True], ids=["sync-tool", "async-tool"])
def test_the_wait_after_a_failed_attempt_is_not_cut_by_its_deadline_in_run(is_async: bool):
    clock = af.VirtualClock()
    result = bare(lambda: _flaky_agent(clock, is_async=is_async).run("go"))
    assert result.output == "ok"
    assert clock.sleeps == [10]
    assert result.trace.count("tool.result", tool="fetch") == 1
    assert [e.error.type for e in result.trace.of("tool.error") if e.error] == ["ConnectionError"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync-tool", "async-tool"])
def test_the_wait_after_a_failed_attempt_is_not_cut_by_its_deadline_in_arun(is_async: bool):
    clock = af.VirtualClock()
    agent = _flaky_agent(clock, is_async=is_async)
    result = bare(lambda: asyncio.run(agent.arun("go")))
    assert result.output == "ok"
    assert clock.sleeps == [10]
    assert result.trace.count("tool.result", tool="fetch") == 1


def _note_agent(*, is_async: bool, timeout: float | None) -> af.Agent:
    if is_async:

        @af.tool(name="note")
        async def note_async(text: str) -> str:
            """Take a note."""
            return "noted"

        tool = note_async
    else:

        @af.tool(name="note")
        def note(text: str) -> str:
            """Take a note."""
            return "noted"

        tool = note
    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("note", text="a"), say("ok")]),
        tools=[tool],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(timeout_seconds=timeout),
    )


def _note_result(result: af.RunResult) -> str:
    return next(m.content for m in result.messages if m.role == "tool")


def _plan() -> FaultPlan:
    plan = FaultPlan(seed=1)
    plan.http("https://api.test/ping").status(503).times(2)
    return plan


CASES = [
    pytest.param(False, None, id="sync-tool-no-timeout"),
    pytest.param(False, 5.0, id="sync-tool-timeout"),
    pytest.param(True, None, id="async-tool-no-timeout"),
    pytest.param(True, 5.0, id="async-tool-timeout"),
]


@pytest.mark.parametrize(("is_async", "timeout"), CASES)
def test_a_request_after_run_is_not_recorded_in_the_finished_runs_trace(is_async, timeout):
    plan = _plan()
    agent = _note_agent(is_async=is_async, timeout=timeout)

    def run_then_request() -> af.RunResult:
        with plan.active():
            result = agent.run("go")
            assert httpx.get("https://api.test/ping").status_code == 503
        return result

    result = bare(run_then_request)
    assert _note_result(result) == "noted"
    assert result.trace.count("http.request") == 0
    assert plan.http_recorder is not None
    assert plan.http_recorder.trace.count("http.request") == 1


@pytest.mark.parametrize(("is_async", "timeout"), CASES)
def test_a_request_after_arun_is_not_recorded_in_the_finished_runs_trace(is_async, timeout):
    plan = _plan()
    agent = _note_agent(is_async=is_async, timeout=timeout)

    async def run_then_request() -> af.RunResult:
        with plan.active():
            result = await agent.arun("go")
            async with httpx.AsyncClient() as client:
                assert (await client.get("https://api.test/ping")).status_code == 503
        return result

    result = bare(lambda: asyncio.run(run_then_request()))
    assert _note_result(result) == "noted"
    assert result.trace.count("http.request") == 0
    assert plan.http_recorder is not None
    assert plan.http_recorder.trace.count("http.request") == 1


def _pinging_agent(ping: af.Tool) -> af.Agent:
    """An agent whose model calls ``ping`` once for api.test, then answers."""
    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("ping", host="api.test"), say("ok")]),
        tools=[ping],
        clock=af.VirtualClock(),
    )


def test_a_request_a_tool_sends_during_run_is_recorded_in_that_runs_trace():
    @af.tool
    def ping(host: str) -> str:
        """Ping a host."""
        return str(httpx.get(f"https://{host}/ping").status_code)

    plan, agent = _plan(), _pinging_agent(ping)

    def run() -> af.RunResult:
        with plan.active():
            return agent.run("go")

    result = bare(run)
    assert _note_result(result) == "503"
    [request] = result.trace.of("http.request")
    assert request.detail == "GET https://api.test/ping"
    assert plan.http_recorder is None  # nothing went elsewhere


def test_a_request_an_async_tool_sends_during_arun_is_recorded_in_that_runs_trace():
    @af.tool
    async def ping(host: str) -> str:
        """Ping a host."""
        async with httpx.AsyncClient() as client:
            return str((await client.get(f"https://{host}/ping")).status_code)

    plan, agent = _plan(), _pinging_agent(ping)

    async def arun() -> af.RunResult:
        with plan.active():
            return await agent.arun("go")

    result = bare(lambda: asyncio.run(arun()))
    assert _note_result(result) == "503"
    assert result.trace.count("http.request") == 1
    assert plan.http_recorder is None
