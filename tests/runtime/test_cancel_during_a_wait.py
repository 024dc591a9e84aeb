"""A `CancelToken` cancelled while the run waits out a backoff ends the wait at once.

In real time a tool's backoff may be a minute (``max_delay``) and a model retry's wait as
long as a ``Retry-After`` (up to 300 s): a user who presses stop must not wait it out. The
run used to notice the token only once the wait was over. A token cancelled before the
wait starts means no wait at all.

No test here sleeps: each wait is an hour long, and ends only because it is cancelled
(a regression shows as a run still waiting when the test gives up on it).
"""

from __future__ import annotations

import asyncio
import threading

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, say

HOUR = 3600.0
GIVE_UP = 30.0  # seconds a test waits for the run before calling it stuck


@af.tool
def fetch(url: str) -> str:
    """Fetch a page that is always down."""
    raise ConnectionError("reset")


@af.tool
async def afetch(url: str) -> str:
    """Fetch a page that is always down, asynchronously."""
    raise ConnectionError("reset")


def hour_long_backoff(tool: af.Tool, observer=None) -> af.Agent:
    model = ScriptedModel([call_tool(tool.name, url="x"), say("never")], strict=False)
    config = af.ResilienceConfig(strategy="fixed", base_delay=HOUR, max_delay=HOUR)
    return af.Agent(
        "bot", model=model, tools=[tool], resilience=config, clock=af.RealClock(), observer=observer
    )


def hour_long_model_retry(observer=None) -> af.Agent:
    model = ScriptedModel([fail.http(503), say("never")], strict=False)
    return af.Agent(
        "bot",
        model=model,
        clock=af.RealClock(),
        observer=observer,
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(
            max_attempts=3, initial_backoff=HOUR, max_backoff=HOUR
        ),
    )


def in_a_thread(run) -> tuple[threading.Thread, list[af.RunResult]]:
    results: list[af.RunResult] = []
    thread = threading.Thread(target=lambda: results.append(run()), daemon=True)
    thread.start()
    return thread, results


def test_a_token_cancelled_before_the_backoff_means_no_wait():
    token = af.CancelToken()

    def stop_at_the_retry(event):
        if event.type == "tool.retry":
            token.cancel("user pressed stop")

    agent = hour_long_backoff(fetch, stop_at_the_retry)
    thread, results = in_a_thread(lambda: agent.run("go", cancel=token))
    thread.join(GIVE_UP)
    assert not thread.is_alive(), "the run waited out its backoff after the cancel"
    (result,) = results
    assert result.status == "cancelled"
    assert result.trace.of("run.cancelled")[0].reason == "user pressed stop"


def test_a_cancel_from_another_thread_ends_a_tool_backoff():
    token, waiting = af.CancelToken(), threading.Event()
    agent = hour_long_backoff(fetch, lambda e: e.type == "tool.retry" and waiting.set())
    thread, results = in_a_thread(lambda: agent.run("go", cancel=token))
    assert waiting.wait(GIVE_UP)
    token.cancel("user pressed stop")
    thread.join(GIVE_UP)
    assert not thread.is_alive(), "the cancel did not end the wait"
    assert results[0].status == "cancelled"
    assert results[0].trace.retries("fetch") == 1
    assert results[0].trace.count("tool.call") == 1  # no attempt after the cancel


def test_a_cancel_from_another_thread_ends_a_model_retry_wait():
    token, waiting = af.CancelToken(), threading.Event()
    agent = hour_long_model_retry(lambda e: e.type == "llm.retry" and waiting.set())
    thread, results = in_a_thread(lambda: agent.run("go", cancel=token))
    assert waiting.wait(GIVE_UP)
    token.cancel()
    thread.join(GIVE_UP)
    assert not thread.is_alive(), "the cancel did not end the wait"
    assert results[0].status == "cancelled"
    assert results[0].trace.count("llm.request") == 1


def test_a_cancel_ends_the_wait_of_an_async_run():
    async def scenario() -> af.RunResult:
        token, waiting = af.CancelToken(), asyncio.Event()
        agent = hour_long_backoff(afetch, lambda e: e.type == "tool.retry" and waiting.set())
        run = asyncio.ensure_future(agent.arun("go", cancel=token))
        await asyncio.wait_for(waiting.wait(), GIVE_UP)
        token.cancel("stop")
        return await asyncio.wait_for(run, GIVE_UP)

    result = asyncio.run(scenario())
    assert result.status == "cancelled"
    assert result.trace.retries("afetch") == 1


def test_a_cancel_from_another_thread_ends_the_wait_of_an_async_run():
    async def scenario() -> af.RunResult:
        token, waiting = af.CancelToken(), threading.Event()
        agent = hour_long_model_retry(lambda e: e.type == "llm.retry" and waiting.set())
        run = asyncio.ensure_future(agent.arun("go", cancel=token))
        stopper = threading.Thread(target=lambda: waiting.wait(GIVE_UP) and token.cancel())
        stopper.start()
        try:
            return await asyncio.wait_for(run, GIVE_UP)
        finally:
            stopper.join(GIVE_UP)

    assert asyncio.run(scenario()).status == "cancelled"


def test_parallel_calls_all_stop_waiting_at_one_cancel():
    async def scenario() -> af.RunResult:
        token, retries = af.CancelToken(), []

        def count(event):
            if event.type == "tool.retry":
                retries.append(event)

        model = ScriptedModel(
            [af.call_tools([("afetch", {"url": "a"}), ("afetch", {"url": "b"})]), say("never")],
            strict=False,
        )
        config = af.ResilienceConfig(strategy="fixed", base_delay=HOUR, max_delay=HOUR)
        agent = af.Agent(
            "bot", model=model, tools=[afetch], resilience=config, clock=af.RealClock()
        )
        run = asyncio.ensure_future(agent.arun("go", cancel=token))
        for _ in range(1000):  # both calls failed and are waiting
            await asyncio.sleep(0)
        token.cancel()
        return await asyncio.wait_for(run, GIVE_UP)

    result = asyncio.run(scenario())
    assert result.status == "cancelled"
    assert result.trace.retries("afetch") == 2


def test_a_virtual_wait_is_still_recorded_before_the_cancel_is_seen():
    token, clock = af.CancelToken(), af.VirtualClock()

    def stop_at_the_retry(event):
        if event.type == "tool.retry":
            token.cancel()

    model = ScriptedModel([call_tool("fetch", url="x")], strict=False)
    config = af.ResilienceConfig(strategy="fixed", base_delay=2, max_delay=2)
    agent = af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        resilience=config,
        clock=clock,
        observer=stop_at_the_retry,
    )
    assert agent.run("go", cancel=token).status == "cancelled"
    assert clock.sleeps == []  # cancelled before the wait: none asked for
