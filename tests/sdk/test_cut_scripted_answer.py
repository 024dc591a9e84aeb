"""A cut or stalled stream cuts the answer the test scripted, through the real SDKs.

``http="truncated_stream"`` and ``http="stall"`` on a streamed request send the first
``after`` events of the script's next step (`http_faults.script` in-process,
`llm_server.script` over the socket), and leave that step for the request asked again.
Without a step to cut, they send their own partial answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from pytest_agentfaults import call_tool, fail, say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

ASK = [{"role": "user", "content": "Weather in Paris?"}]
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def openai_texts(chunks: Any, received: list[str]) -> None:
    received.extend(c.choices[0].delta.content or "" for c in chunks if c.choices)


def openai_stream(received: list[str], *, mode: str, **options: Any) -> None:
    """Read one streamed chat completion into ``received`` (its text deltas)."""
    if mode == "sync":
        with openai.OpenAI(api_key="sk-test", **options) as client:
            chunks = client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True)
            openai_texts(chunks, received)
        return

    async def go() -> None:
        async with openai.AsyncOpenAI(api_key="sk-test", **options) as client:
            chunks = await client.chat.completions.create(
                model="gpt-4o-mini", messages=ASK, stream=True
            )
            async for chunk in chunks:  # one by one: the cut raises mid-way
                if chunk.choices:
                    received.append(chunk.choices[0].delta.content or "")

    asyncio.run(go())


def anthropic_stream(events: list[Any], *, mode: str, **options: Any) -> None:
    """Read one streamed message into ``events`` (the SDK's raw stream events)."""
    if mode == "sync":
        with anthropic.Anthropic(api_key="sk-ant-test", **options) as client:
            stream = client.messages.create(
                model="claude-haiku-4-5", max_tokens=64, messages=ASK, stream=True
            )
            events.extend(stream)
        return

    async def go() -> None:
        async with anthropic.AsyncAnthropic(api_key="sk-ant-test", **options) as client:
            stream = await client.messages.create(
                model="claude-haiku-4-5", max_tokens=64, messages=ASK, stream=True
            )
            async for event in stream:
                events.append(event)

    asyncio.run(go())


def anthropic_text(events: list[Any]) -> str:
    return "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )


def stream_lines(client: Any, url: str, got: list[str], **request: Any) -> list[str]:
    """Read the lines of one streamed answer into ``got``."""
    with client.stream("POST", url, **request) as response:
        got.extend(line for line in response.iter_lines() if line)
    return got


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# ----------------------------------------------------------------------------- in-process


def test_an_openai_cut_carries_the_scripted_answer_then_the_retry_gets_it_whole(
    mode, faults, http_faults
):
    faults.http(url=OPENAI_URL).truncated_stream(after=2)
    script = http_faults.script("openai", [say("Sunny all week.")])
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        openai_stream(received, mode=mode)
    assert received == ["", "Sunny a"]  # the role chunk, then the script's first half
    assert script.remaining == 1  # the cut took no step
    again: list[str] = []
    openai_stream(again, mode=mode)
    assert "".join(again) == "Sunny all week."
    assert script.remaining == 0


def test_an_anthropic_cut_carries_the_scripted_answer(mode, faults, http_faults):
    faults.http(url=ANTHROPIC_URL).truncated_stream(after=3)
    http_faults.script("anthropic", [say("Sunny all week.")])
    events: list[Any] = []
    with pytest.raises(httpx2.RemoteProtocolError):  # anthropic lets httpx2's error through
        anthropic_stream(events, mode=mode, max_retries=0)
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    assert anthropic_text(events) == "Sunny a"
    again: list[Any] = []
    anthropic_stream(again, mode=mode)
    assert anthropic_text(again) == "Sunny all week."


def test_a_cut_tool_call_stops_in_its_streamed_arguments(faults, http_faults):
    faults.http(url=OPENAI_URL).truncated_stream(after=3)
    http_faults.script("openai", [call_tool("get_weather", city="Paris")])
    arguments: list[str] = []

    def read(chunks: Any) -> None:
        for chunk in chunks:
            for call in chunk.choices[0].delta.tool_calls or []:
                assert call.function.name in (None, "get_weather")
                arguments.append(call.function.arguments)

    with openai.OpenAI(api_key="sk-test") as client:
        with pytest.raises(openai.APIConnectionError):
            read(client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True))
        assert arguments == ["", '{"city":']  # the call's start, half its arguments
        arguments.clear()
        read(client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True))
    assert json.loads("".join(arguments)) == {"city": "Paris"}


def test_a_stall_sends_the_scripted_answers_first_events(mode, faults, http_faults):
    faults.http(url=OPENAI_URL).stall(after=2)
    http_faults.script("openai", [say("Sunny all week.")])
    received: list[str] = []
    with pytest.raises(openai.APITimeoutError):
        openai_stream(received, mode=mode, max_retries=0)
    assert received == ["", "Sunny a"]
    again: list[str] = []
    openai_stream(again, mode=mode)
    assert "".join(again) == "Sunny all week."


def test_a_cut_with_no_step_left_sends_its_own_partial_answer(faults, http_faults):
    faults.http(url=OPENAI_URL).truncated_stream(after=2)
    http_faults.script("openai", [], strict=False)
    http_faults.assert_all_called = False
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        openai_stream(received, mode="sync")
    assert received == ["", "The answer was cut off "]


def test_a_cut_before_a_failure_step_sends_its_own_partial_answer(faults, http_faults):
    faults.http(url=OPENAI_URL).truncated_stream(after=2)
    script = http_faults.script("openai", [fail.http(503), say("Back.")])
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        openai_stream(received, mode="sync")
    assert received == ["", "The answer was cut off "]  # a 503 has no stream to cut
    assert script.remaining == 2
    again: list[str] = []
    openai_stream(again, mode="sync", max_retries=1)  # the 503, retried: the answer
    assert "".join(again) == "Back."


def test_a_cut_body_keeps_its_own_half_body(faults, http_faults):
    faults.http(url=OPENAI_URL).truncated_stream()
    script = http_faults.script("openai", [say("Sunny all week.")])
    with openai.OpenAI(api_key="sk-test", max_retries=1) as client:  # a cut body is retried
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
    assert answer.choices[0].message.content == "Sunny all week."
    assert script.remaining == 0


# ----------------------------------------------------------------------------- llm_server


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


@pytest.mark.inject_fault(http="truncated_stream", after=2)
def test_the_server_cuts_the_scripted_openai_answer(mode, llm_server):
    llm_server.script([say("Sunny all week.")])
    received: list[str] = []
    base_url = llm_server.base_url("openai")
    with pytest.raises(openai.APIConnectionError):
        openai_stream(received, mode=mode, base_url=base_url)
    assert received == ["", "Sunny a"]
    assert llm_server.scripted.remaining == 1
    again: list[str] = []
    openai_stream(again, mode=mode, base_url=base_url)
    assert "".join(again) == "Sunny all week."
    assert [r.fault for r in llm_server.requests] == ["truncated_stream", None]


@pytest.mark.inject_fault(http="truncated_stream", after=3)
def test_the_server_cuts_a_scripted_anthropic_tool_call_in_its_arguments(mode, llm_server):
    llm_server.script([call_tool("get_weather", city="Paris")])
    base_url = llm_server.base_url("anthropic")
    events: list[Any] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        anthropic_stream(events, mode=mode, base_url=base_url, max_retries=0)
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    assert events[1].content_block.name == "get_weather"
    assert events[2].delta.partial_json == '{"city":'
    again: list[Any] = []
    anthropic_stream(again, mode=mode, base_url=base_url)
    partial = "".join(e.delta.partial_json for e in again if e.type == "content_block_delta")
    assert json.loads(partial) == {"city": "Paris"}


@pytest.mark.inject_fault(http="stall", after=2)
def test_the_server_stalls_after_the_scripted_answers_first_events(llm_server):
    llm_server.script([say("Sunny all week.")])
    base_url = llm_server.base_url("openai")
    received: list[str] = []
    with pytest.raises(openai.APITimeoutError):
        openai_stream(received, mode="sync", base_url=base_url, max_retries=0, timeout=0.2)
    assert received == ["", "Sunny a"]
    again: list[str] = []
    openai_stream(again, mode="sync", base_url=base_url)
    assert "".join(again) == "Sunny all week."


def test_a_cut_responses_api_stream_carries_the_scripted_answer(faults, http_faults):
    faults.http(url="https://api.openai.com/v1/responses").truncated_stream(after=5)
    http_faults.script("openai-responses", [say("Sunny all week.")])
    with openai.OpenAI(api_key="sk-test") as client:
        events: list[Any] = []
        with pytest.raises(openai.APIConnectionError):
            events.extend(client.responses.create(model="gpt-4o-mini", input="hi", stream=True))
        deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
        assert deltas == ["Sunny a"]
        assert "response.completed" not in [e.type for e in events]
        again = client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
        done = [e for e in again if e.type == "response.completed"]
    assert done[0].response.output_text == "Sunny all week."


@pytest.mark.parametrize(
    ("provider", "url"),
    [
        ("ollama", "http://localhost:11434/api/chat"),
        (
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash"
            ":streamGenerateContent?alt=sse",
        ),
    ],
)
def test_a_cut_ollama_or_gemini_stream_carries_the_scripted_answer(
    provider, url, faults, http_faults
):
    faults.http(url=url.split("?")[0]).truncated_stream(after=1)
    http_faults.script(provider, [say("Sunny all week.")])
    body = {"model": "llama3", "messages": [], "stream": True, "contents": []}

    with httpx2.Client() as client:
        cut: list[str] = []
        with pytest.raises(httpx2.RemoteProtocolError):
            stream_lines(client, url, cut, json=body)
        again = stream_lines(client, url, [], json=body)
    assert len(cut) == 1
    assert "Sunny a" in cut[0]
    assert "The answer was cut off" not in cut[0]
    assert len(again) > 1
    assert "Sunny a" in again[0]


def test_a_route_that_answers_before_the_script_leaves_the_cut_its_own(faults, http_faults):
    faults.http(url=OPENAI_URL).truncated_stream(after=2)
    # first, and another pattern (respx merges routes of the same one): it answers, not the script
    http_faults.post(url__startswith="https://api.openai.com/").respond(200, json={})
    script = http_faults.script("openai", [say("Never sent.")], strict=False)
    http_faults.assert_all_called = False
    received: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        openai_stream(received, mode="sync")
    assert received == ["", "The answer was cut off "]
    assert script.remaining == 1


def test_a_cut_no_script_route_answers_is_the_kits_own(faults, http_faults):
    faults.http(url=ANTHROPIC_URL).truncated_stream(after=3)
    script = http_faults.script("openai", [say("Not for Anthropic.")], strict=False)
    http_faults.assert_all_called = False
    events: list[Any] = []
    with pytest.raises(httpx2.RemoteProtocolError):
        anthropic_stream(events, mode="sync", max_retries=0)
    assert anthropic_text(events) == "The answer was cut off "
    assert script.remaining == 1


GEMINI_STREAM = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent"
)


def test_a_cut_stream_whose_body_is_not_json_is_the_kits_own(faults, http_faults):
    faults.http(url=GEMINI_STREAM).truncated_stream(after=1)
    script = http_faults.script("gemini", [say("Sunny all week.")], strict=False)
    http_faults.assert_all_called = False
    cut: list[str] = []
    with httpx2.Client() as client, pytest.raises(httpx2.RemoteProtocolError):
        stream_lines(client, GEMINI_STREAM, cut, content=b"{not json")
    assert "The answer was cut off" in cut[0]
    assert script.remaining == 1


@pytest.mark.inject_fault(http="truncated_stream", after=1)
def test_the_server_cuts_its_own_answer_for_a_body_that_is_not_json(llm_server):
    llm_server.script([say("Sunny all week.")], strict=False)
    url = llm_server.base_url("gemini") + "/models/gemini-2.0-flash:streamGenerateContent"
    cut: list[str] = []
    with httpx2.Client() as client, pytest.raises(httpx2.RemoteProtocolError):
        stream_lines(client, url, cut, content=b"{not json")
    assert "The answer was cut off" in cut[0]
    assert llm_server.scripted.remaining == 1
