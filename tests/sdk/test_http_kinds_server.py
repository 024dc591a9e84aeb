"""The newer ``http=`` kinds served by ``llm_server`` over its socket, to the real SDKs.

Chat completions and the Responses API (openai), messages (anthropic), sync and async.
Stalls and slow first tokens wait in real time on the server (at most ``timeout_hold``),
so the clients here have small timeouts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_agentfaults.testing.steps import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


def openai_chat(server, *, stream=False, **options) -> Any:
    with openai.OpenAI(base_url=server.base_url("openai"), api_key="sk-test", **options) as c:
        answer = c.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=stream)
        if not stream:
            return answer.choices[0].message.content
        return list(answer)


def anthropic_async(server, *, stream=False, **options) -> Any:
    async def go():
        async with anthropic.AsyncAnthropic(
            base_url=server.base_url("anthropic"), api_key="sk-ant-test", **options
        ) as client:
            answer = await client.messages.create(
                model="claude-haiku-4-5", max_tokens=64, messages=ASK, stream=stream
            )
            if not stream:
                return answer.content[0].text
            return [event async for event in answer]

    return asyncio.run(go())


def responses(server, **options) -> Any:
    with openai.OpenAI(base_url=server.base_url("openai"), api_key="sk-test", **options) as c:
        return c.responses.create(model="gpt-4o-mini", input="hi").output_text


@pytest.mark.inject_fault(http="not_json")
def test_not_json(llm_server):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(ValueError, match="Expecting value"):
        openai_chat(llm_server, max_retries=0)
    assert llm_server.requests[0].fault == "not_json"


@pytest.mark.inject_fault(http="proxy_html", status=503, retry_after=1)
def test_proxy_html_then_the_answer(llm_server, trace, virtual_clock):
    llm_server.script([say("Through the proxy.")])
    assert anthropic_async(llm_server) == "Through the proxy."
    assert [e.status for e in trace.of("http.request")] == [503, 200]
    assert virtual_clock.sleeps == [1.0]


@pytest.mark.inject_fault(http="context_length", url="/v1/responses")
def test_context_length_on_the_responses_api(llm_server):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(openai.BadRequestError) as raised:
        responses(llm_server)
    assert raised.value.code == "context_length_exceeded"
    assert raised.value.param == "input"
    assert len(llm_server.requests) == 1


@pytest.mark.inject_fault(http="quota", retry_after=2, retry_after_format="seconds")
def test_quota_on_anthropic(llm_server, virtual_clock):
    llm_server.script([say("Within quota.")])
    assert anthropic_async(llm_server) == "Within quota."
    assert virtual_clock.sleeps == [2.0]
    assert [r.fault for r in llm_server.requests] == ["quota", None]


@pytest.mark.inject_fault(http=503, should_retry=False)
def test_should_retry_false_over_the_socket(llm_server):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(openai.InternalServerError):
        openai_chat(llm_server)
    assert len(llm_server.requests) == 1


@pytest.mark.inject_fault(http="truncated_stream", after=1)
def test_a_stream_cut_after_one_event(llm_server):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(httpx2.RemoteProtocolError):
        anthropic_async(llm_server, stream=True, max_retries=0)


@pytest.mark.inject_fault(http="stall", after=2)
def test_a_stalled_stream_ends_when_the_client_gives_up(llm_server, trace):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(openai.APITimeoutError):
        openai_chat(llm_server, stream=True, max_retries=0, timeout=0.1)
    (event,) = trace.of("http.request")
    assert (event.status, event.error.type, event.field("fault")) == (200, "ReadTimeout", "stall")


@pytest.mark.inject_fault(http="stall")
def test_a_stall_the_client_never_gives_up_on_fails_the_test(llm_server):
    llm_server.script([say("unused")], strict=False)
    llm_server.timeout_hold = 0.05
    try:
        with pytest.raises(openai.APIConnectionError):  # the server closes after its hold
            openai_chat(llm_server, stream=True, max_retries=0, timeout=5)
        assert "'stall'" in llm_server.problems[0]
    finally:
        llm_server.timeout_hold = 1.0
        llm_server.problems.clear()


@pytest.mark.inject_fault(http="slow_first_token", delay=0.05)
def test_a_slow_first_token_still_answers(llm_server, trace):
    llm_server.script([say("Slow start.")])
    chunks = openai_chat(llm_server, stream=True, timeout=2)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Slow start."
    assert llm_server.requests[0].fault == "slow_first_token"


@pytest.mark.inject_fault(http="slow_first_token", delay=0.05)
def test_a_slow_answer_the_client_waited_for_takes_its_step_and_bounds_its_copy(llm_server):
    script = llm_server.script([say("Slow start.")])
    long = "x" * (llm_server.max_stored_body + 100)
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="sk-test") as c:
        messages = [{"role": "user", "content": long}]
        answer = c.chat.completions.create(model="gpt-4o-mini", messages=messages, timeout=2)
    assert answer.choices[0].message.content == "Slow start."
    assert script.remaining == 0  # taken once the answer went out
    (request,) = script.requests
    assert request.messages[-1].content.endswith("...[100 more characters]")


@pytest.mark.inject_fault(http="slow_first_token", delay=0.5)
def test_a_slow_first_token_past_the_timeout_is_retried(llm_server, trace):
    # the client gave up before the answer came: the step stays for the retry
    llm_server.script([say("The retry.")])
    assert openai_chat(llm_server, timeout=0.1) == "The retry."
    assert [r.fault for r in llm_server.requests] == ["slow_first_token", None]
