"""Cancelling a run during a model client's transport-retry wait ends the wait and the run.

The wait is the client's, inside one model call; the run's `CancelToken` must reach it
(a ``Retry-After`` may ask for a minute). A run cancelled there ends ``cancelled``: the
failure that was to be retried is not handed to ``on_llm_error``.
"""

from __future__ import annotations

import asyncio
import threading

import httpx

import pytest_agentfaults as af
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.testing._wire import JSON_TYPE, error_body

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-transport0123456789"
MINUTE = 60.0
GIVE_UP = 30.0


def unavailable() -> httpx.Response:
    body = error_body("openai", 503, "down")
    headers = {"content-type": JSON_TYPE, "retry-after": "60"}
    return httpx.Response(503, content=body, headers=headers)


def agent_with(clock, observer, asked):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY)
    return af.Agent(
        "bot",
        model=model,
        clock=clock,
        observer=observer,
        on_llm_error=lambda exc, attempt: asked.append(exc) or af.LlmErrorDecision.rethrow(),
    )


def test_a_cancel_at_the_transport_retry_ends_the_run_without_the_wait(respx_mock):
    respx_mock.post(URL).mock(return_value=unavailable())
    token, asked, clock = af.CancelToken(), [], af.VirtualClock()

    def stop_at_the_retry(event):
        if event.type == "transport.retry":
            token.cancel("user pressed stop")

    result = agent_with(clock, stop_at_the_retry, asked).run("go", cancel=token)
    assert result.status == "cancelled"
    assert result.trace.of("run.cancelled")[0].reason == "user pressed stop"
    assert clock.sleeps == []
    assert asked == []
    assert respx_mock.calls.call_count == 1


def test_an_async_cancel_at_the_transport_retry_ends_the_run_without_the_wait(respx_mock):
    respx_mock.post(URL).mock(return_value=unavailable())
    token, asked, clock = af.CancelToken(), [], af.VirtualClock()

    def stop_at_the_retry(event):
        if event.type == "transport.retry":
            token.cancel("user pressed stop")

    agent = agent_with(clock, stop_at_the_retry, asked)
    result = asyncio.run(agent.arun("go", cancel=token))
    assert result.status == "cancelled"
    assert clock.sleeps == []
    assert asked == []


def test_a_cancel_from_another_thread_ends_a_real_transport_retry_wait(respx_mock):
    respx_mock.post(URL).mock(return_value=unavailable())
    token, asked = af.CancelToken(), []
    waiting = threading.Event()

    def note(event):
        if event.type == "transport.retry":
            waiting.set()

    agent = agent_with(af.RealClock(), note, asked)
    results: list[af.RunResult] = []
    thread = threading.Thread(target=lambda: results.append(agent.run("go", cancel=token)))
    thread.daemon = True
    thread.start()
    assert waiting.wait(GIVE_UP)
    token.cancel("stop")
    thread.join(GIVE_UP)
    assert not thread.is_alive(), "the run waited out the Retry-After after the cancel"
    (result,) = results
    assert result.status == "cancelled"
    assert asked == []


def test_a_run_cancelled_before_the_failure_announces_no_transport_retry(respx_mock):
    respx_mock.post(URL).mock(return_value=unavailable())
    token, asked, clock = af.CancelToken(), [], af.VirtualClock()

    def stop_at_the_request(event):
        if event.type == "llm.request":
            token.cancel("stop")

    result = agent_with(clock, stop_at_the_request, asked).run("go", cancel=token)
    assert result.status == "cancelled"
    assert result.trace.of("transport.retry") == []
    assert respx_mock.calls.call_count == 1
    assert asked == []
