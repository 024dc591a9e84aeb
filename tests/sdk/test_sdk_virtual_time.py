"""The official SDKs back off in virtual time with no call at all (issue 19, section 1).

No ``patch_sleep()`` here: a test that uses the kit waits in virtual time by default. The
SDKs' waits (0.5 s then 1 s, less up to 25 % jitter) add up to at least 1.125 s, so a run
well under that proves they were not slept; the clock proves they were made, and the
verdict, which reads the gaps between attempts on that clock, sees the backoff.
"""

from __future__ import annotations

import asyncio
import time

import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from pytest_agentfaults.testing import say  # noqa: E402 - after the SDKs' importorskip

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
KEY = "sk-test-0123456789abcdef"
REAL_WAITS = 1.125  # the least the two waits take in real time


def assert_backed_off_in_virtual_time(trace, virtual_clock, started: float) -> None:
    assert time.perf_counter() - started < REAL_WAITS
    first, second = virtual_clock.sleeps
    assert 0.375 <= first <= 0.5
    assert 0.75 <= second <= 1.0
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [503, 503, 200]
    assert [e.at for e in requests] == [0.0, first, first + second]
    assert "no_backoff" not in trace.verdict().codes
    trace.assert_resilient()


@pytest.mark.inject_fault(http=503, times=2)
def test_openai_503_503_200_over_the_loopback_server(llm_server, trace, virtual_clock):
    llm_server.script([say("It is sunny.")])
    started = time.perf_counter()
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key=KEY) as client:
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert answer.choices[0].message.content == "It is sunny."
    assert_backed_off_in_virtual_time(trace, virtual_clock, started)


@pytest.mark.inject_fault(http=503, times=2)
def test_async_openai_503_503_200_over_the_loopback_server(llm_server, trace, virtual_clock):
    llm_server.script([say("It is sunny.")])

    async def go():
        base_url = llm_server.base_url("openai")
        async with openai.AsyncOpenAI(base_url=base_url, api_key=KEY) as client:
            return await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    started = time.perf_counter()
    answer = asyncio.run(go())
    assert answer.choices[0].message.content == "It is sunny."
    assert_backed_off_in_virtual_time(trace, virtual_clock, started)


@pytest.mark.inject_fault(http=503, times=2)
def test_anthropic_503_503_200_over_the_loopback_server(llm_server, trace, virtual_clock):
    llm_server.script([say("It is sunny.")])
    started = time.perf_counter()
    with anthropic.Anthropic(base_url=llm_server.base_url("anthropic"), api_key=KEY) as client:
        answer = client.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES)
    assert answer.content[0].text == "It is sunny."
    assert_backed_off_in_virtual_time(trace, virtual_clock, started)


@pytest.mark.asyncio
@pytest.mark.inject_fault(http=503, times=2)
async def test_async_anthropic_503_503_200_over_the_loopback_server(
    llm_server, trace, virtual_clock
):
    llm_server.script([say("It is sunny.")])
    started = time.perf_counter()
    base_url = llm_server.base_url("anthropic")
    async with anthropic.AsyncAnthropic(base_url=base_url, api_key=KEY) as client:
        answer = await client.messages.create(
            model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES
        )
    assert answer.content[0].text == "It is sunny."
    assert_backed_off_in_virtual_time(trace, virtual_clock, started)


@pytest.mark.asyncio
@pytest.mark.inject_fault(http=503, times=3, url="https://api.openai.com/v1/chat/completions")
async def test_three_concurrent_async_clients_back_off_together(http_faults, virtual_clock):
    """Three requests, each 503-ed once, wait side by side: the clock moves by one wait."""
    http_faults.post("https://api.openai.com/v1/chat/completions").respond(200, json=_chat("ok"))
    async with openai.AsyncOpenAI(api_key=KEY, max_retries=1) as client:
        ask = client.chat.completions.create
        answers = await asyncio.gather(
            *(ask(model="gpt-4o-mini", messages=MESSAGES) for _ in range(3))
        )
    assert [a.choices[0].message.content for a in answers] == ["ok", "ok", "ok"]
    assert len(virtual_clock.sleeps) == 3
    assert virtual_clock.now() == max(virtual_clock.sleeps)  # overlapped, not added


def _chat(text: str) -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


@pytest.mark.inject_fault(http=503, times=2)
def test_an_sdk_called_on_a_worker_thread_backs_off_in_virtual_time(
    openai_client, http_faults, trace, virtual_clock
):
    """An app that calls the SDK through ``asyncio.to_thread`` (a sync client in an async app).

    The worker carries the test's context, so the SDK's waits are the test's: before, they
    really waited there, the clock never moved, and the verdict said ``no_backoff`` about
    an SDK that had backed off.
    """
    http_faults.script("openai", [say("It is sunny.")])

    def ask() -> str:
        reply = openai_client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        return reply.choices[0].message.content

    started = time.perf_counter()
    assert asyncio.run(asyncio.to_thread(ask)) == "It is sunny."
    assert_backed_off_in_virtual_time(trace, virtual_clock, started)
