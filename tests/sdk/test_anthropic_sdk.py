"""The official anthropic SDK (over httpx2), default settings, through faults in virtual time."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

anthropic = pytest.importorskip("anthropic")

URL = "https://api.anthropic.com/v1/messages"
WIRE = Path(__file__).parents[2] / "fixtures" / "wire" / "anthropic"
MESSAGE = (WIRE / "messages_text.json").read_bytes()
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def ok(http_faults):
    return http_faults.post(URL).respond(
        200, content=MESSAGE, headers={"content-type": "application/json"}
    )


@pytest.fixture
def client():
    with anthropic.Anthropic(api_key="sk-ant-test-0123456789abcdef") as made:
        yield made


@pytest.fixture
def no_jitter(monkeypatch):
    """Pin the SDK's jitter so its waits are exact: 0.5 s, then 1 s."""
    monkeypatch.setattr("anthropic._base_client.random", lambda: 0.0)


def ask(client):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES)


@pytest.mark.inject_fault(http=529, times=2)
def test_overloaded_twice_then_success(client, ok, trace, virtual_clock, no_jitter):
    virtual_clock.patch_sleep()
    answer = ask(client)
    assert answer.content[0].text
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [529, 529, 200]
    assert [e.field("retry_count") for e in requests] == [0, 1, 2]
    assert virtual_clock.sleeps == [0.5, 1.0]
    trace.assert_resilient()


@pytest.mark.inject_fault(http=429, retry_after=3)
def test_a_429_with_retry_after_is_honoured(client, ok, trace, virtual_clock):
    virtual_clock.patch_sleep()
    ask(client)
    assert virtual_clock.sleeps == [3.0]
    trace.assert_resilient()


@pytest.mark.inject_fault(http=529, times=3)
def test_it_gives_up_after_two_retries(client, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    with pytest.raises(anthropic.InternalServerError) as caught:
        ask(client)
    assert caught.value.status_code == 529
    assert caught.value.body["error"]["type"] == "overloaded_error"
    assert len(trace.of("http.request")) == 3
    assert len(virtual_clock.sleeps) == 2


@pytest.mark.inject_fault(http=401)
def test_a_401_is_not_retried(client, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    with pytest.raises(anthropic.AuthenticationError):
        ask(client)
    assert len(trace.of("http.request")) == 1
    assert virtual_clock.sleeps == []


@pytest.mark.inject_fault(http="reset", times=2)
def test_resets_are_retried_by_the_async_client(ok, trace, virtual_clock, no_jitter):
    virtual_clock.patch_sleep()

    async def go():
        async with anthropic.AsyncAnthropic(api_key="sk-ant-test-0123456789abcdef") as client:
            return await client.messages.create(
                model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES
            )

    asyncio.run(go())
    assert [e.error and e.error.type for e in trace.of("http.request")] == [
        "ReadError",
        "ReadError",
        None,
    ]
    assert virtual_clock.sleeps == [0.5, 1.0]


@pytest.mark.inject_fault(http=529, times=2)
def test_the_same_scenario_against_the_loopback_server(llm_server, trace, virtual_clock, no_jitter):
    from pytest_agentfaults.testing import say

    virtual_clock.patch_sleep()
    llm_server.script([say("Sunny.")])
    with anthropic.Anthropic(base_url=llm_server.base_url("anthropic"), api_key="k") as client:
        assert ask(client).content[0].text == "Sunny."
    assert [r.retry_count for r in llm_server.requests] == [0, 1, 2]
    assert llm_server.requests[0].headers["authorization"] == "[REDACTED]"
    assert [e.at for e in trace.of("http.request")] == [0.0, 0.5, 1.5]
    trace.assert_resilient()


def test_streaming_tool_use_from_the_loopback_server(llm_server):
    from pytest_agentfaults.testing import call_tool

    llm_server.script([call_tool("get_weather", city="Paris")])
    with (
        anthropic.Anthropic(base_url=llm_server.base_url("anthropic"), api_key="k") as client,
        client.messages.stream(
            model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES
        ) as stream,
    ):
        message = stream.get_final_message()
    (block,) = message.content
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
    assert message.stop_reason == "tool_use"
