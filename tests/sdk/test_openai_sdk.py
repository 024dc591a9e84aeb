"""The official openai SDK (over httpx2), default settings, through faults in virtual time.

Its retry loop is the SDK's own: 2 retries by default, a wait of 0.5 s then 1 s less up to
25 % jitter, or the server's Retry-After; ``virtual_clock.patch_sleep()`` makes the waits
instant and records them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

URL = "https://api.openai.com/v1/chat/completions"
CHAT = (Path(__file__).parents[2] / "fixtures" / "wire" / "openai" / "chat_text.json").read_bytes()
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


@pytest.fixture
def ok(http_faults):
    """The success answer, after whatever the faults inject first."""
    return http_faults.post(URL).respond(
        200, content=CHAT, headers={"content-type": "application/json"}
    )


@pytest.fixture
def client():
    with openai.OpenAI(api_key="sk-test-0123456789abcdef") as made:
        yield made


@pytest.fixture
def no_jitter(monkeypatch):
    """Pin the SDK's jitter so its waits are exact: 0.5 s, then 1 s."""
    monkeypatch.setattr("openai._base_client.random", lambda: 0.0)


def ask(client):
    return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)


@pytest.mark.inject_fault(http=503, times=2)
def test_503_503_then_success(client, ok, trace, virtual_clock, no_jitter):
    virtual_clock.patch_sleep()
    answer = ask(client)
    assert answer.choices[0].message.content.startswith("It is 18")
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [503, 503, 200]
    assert [e.field("retry_count") for e in requests] == [0, 1, 2]
    assert virtual_clock.sleeps == [0.5, 1.0]
    assert [e.at for e in requests] == [0.0, 0.5, 1.5]
    trace.assert_resilient()


@pytest.mark.inject_fault(http=503, times=2)
def test_the_jittered_waits_stay_within_the_sdks_bounds(client, ok, virtual_clock):
    virtual_clock.patch_sleep()
    ask(client)
    first, second = virtual_clock.sleeps
    assert 0.375 <= first <= 0.5
    assert 0.75 <= second <= 1.0


@pytest.mark.inject_fault(http=429, retry_after=2)
def test_a_429_with_retry_after_is_honoured(client, ok, trace, virtual_clock):
    virtual_clock.patch_sleep()
    ask(client)
    assert virtual_clock.sleeps == [2.0]
    assert [e.field("retry_after") for e in trace.of("http.request")] == [2.0, None]
    trace.assert_resilient()


@pytest.mark.inject_fault(http="timeout", times=3)
def test_timeouts_are_retried_then_raised(client, ok, http_faults, trace, virtual_clock, faults):
    http_faults.assert_all_called = False  # the point: the success route is never reached
    virtual_clock.patch_sleep()
    with pytest.raises(openai.APITimeoutError):
        ask(client)
    requests = trace.of("http.request")
    assert [e.error.type for e in requests] == ["ReadTimeout"] * 3
    assert len(virtual_clock.sleeps) == 2
    assert [f.kind for f in faults.fired] == ["timeout"] * 3
    ok.calls.assert_not_called()
    trace.assert_resilient()  # three attempts with backoff: giving up then is fine


@pytest.mark.inject_fault(http="connect_error", times=2)
def test_connection_errors_are_retried(client, ok, trace, virtual_clock):
    virtual_clock.patch_sleep()
    ask(client)
    assert [e.error and e.error.type for e in trace.of("http.request")] == [
        "ConnectError",
        "ConnectError",
        None,
    ]


@pytest.mark.inject_fault(http=400)
def test_a_400_is_not_retried(client, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    with pytest.raises(openai.BadRequestError):
        ask(client)
    assert len(trace.of("http.request")) == 1
    assert virtual_clock.sleeps == []
    trace.assert_resilient()


@pytest.mark.inject_fault(http=503, times=2)
def test_the_async_client_backs_off_in_virtual_time_too(ok, trace, virtual_clock, no_jitter):
    virtual_clock.patch_sleep()

    async def go():
        async with openai.AsyncOpenAI(api_key="sk-test-0123456789abcdef") as client:
            return await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    asyncio.run(go())
    assert virtual_clock.sleeps == [0.5, 1.0]
    assert [e.field("retry_count") for e in trace.of("http.request")] == [0, 1, 2]


@pytest.mark.inject_fault(http="truncated_stream")
def test_a_cut_stream_raises_while_iterating(client, http_faults, trace):
    text = []
    with pytest.raises(openai.APIError):  # noqa: PT012 - the error comes while iterating
        for chunk in client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True
        ):
            text.extend(c.delta.content or "" for c in chunk.choices)
    assert trace.of("http.request")[0].field("fault") == "truncated_stream"


# ---------------------------------------------------------------------------- over the socket


@pytest.mark.inject_fault(http=503, times=2)
def test_the_same_scenario_against_the_loopback_server(llm_server, trace, virtual_clock, no_jitter):
    from pytest_agentfaults.testing import say

    virtual_clock.patch_sleep()
    llm_server.script([say("It is sunny.")])
    with openai.OpenAI(
        base_url=llm_server.base_url("openai"), api_key="sk-test-0123456789"
    ) as client:
        answer = ask(client)
    assert answer.choices[0].message.content == "It is sunny."
    assert [r.fault for r in llm_server.requests] == ["503", "503", None]
    assert [r.retry_count for r in llm_server.requests] == [0, 1, 2]
    assert llm_server.requests[0].headers["authorization"] == "[REDACTED]"
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [503, 503, 200]
    assert [e.at for e in requests] == [0.0, 0.5, 1.5]
    assert virtual_clock.sleeps == [0.5, 1.0]
    trace.assert_resilient()


@pytest.mark.inject_fault(http="timeout")
def test_a_timeout_over_the_socket(llm_server, trace, virtual_clock):
    from pytest_agentfaults.testing import say

    virtual_clock.patch_sleep()
    llm_server.script([say("second try")])
    with openai.OpenAI(
        base_url=llm_server.base_url("openai"), api_key="sk-test-0123456789", timeout=0.3
    ) as client:
        assert ask(client).choices[0].message.content == "second try"
    assert [r.fault for r in llm_server.requests] == ["timeout", None]
    assert len(virtual_clock.sleeps) == 1


def test_streaming_from_the_loopback_server(llm_server):
    from pytest_agentfaults.testing import say

    llm_server.script([say("streamed words")])
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        text = "".join(c.delta.content or "" for chunk in stream for c in chunk.choices)
    assert text == "streamed words"
