"""The OpenAI Responses API (``POST /v1/responses``) on ``llm_server``, with the real SDK.

``client.responses.create`` sync and async, streamed and not, tool calls as
``function_call`` items, the faults the server serves, and pydantic-ai's
`OpenAIResponsesModel` (what ``Agent("openai:...")`` uses by default) driving it.
"""

from __future__ import annotations

import asyncio

import pytest

from pytest_agentfaults.testing.steps import call_tool, say

openai = pytest.importorskip("openai")

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    """The SDKs' backoff in virtual time (a no-op where virtual time is the default)."""
    virtual_clock.patch_sleep()


@pytest.fixture
def client(llm_server):
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="sk-test") as made:
        yield made


def test_a_tool_call_then_the_answer(llm_server, client):
    script = llm_server.script([call_tool("get_weather", city="Paris"), say("It is sunny.")])
    first = client.responses.create(model="gpt-4o-mini", input="Weather in Paris?", tools=TOOLS)
    (call,) = first.output
    assert (call.type, call.name, call.arguments) == (
        "function_call",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert first.status == "completed"
    second = client.responses.create(
        model="gpt-4o-mini",
        input=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
        instructions="Be brief.",
        tools=TOOLS,
    )
    assert second.output_text == "It is sunny."
    assert second.usage.total_tokens == second.usage.input_tokens + second.usage.output_tokens
    assert [r.path for r in llm_server.requests] == ["/v1/responses"] * 2
    # the script saw the request as a conversation: instructions, the user, the call, its result
    seen = script.requests[1]
    assert [m.role for m in seen.messages] == ["system", "user", "assistant", "tool"]
    assert seen.messages[3].tool_call_id == call.call_id
    assert [t.name for t in seen.tools] == ["get_weather"]


def test_a_streamed_answer_sends_the_apis_event_sequence(llm_server, client):
    llm_server.script([say("Streamed hello")])
    events = list(client.responses.create(model="gpt-4o-mini", input="hi", stream=True))
    assert [e.type for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == (
        "Streamed hello"
    )
    assert events[-1].response.output_text == "Streamed hello"


def test_a_streamed_tool_call_through_the_sdks_stream_helper(llm_server, client):
    llm_server.script([call_tool("get_weather", city="Rome")])
    with client.responses.stream(model="gpt-4o-mini", input="Rome?", tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.delta" in kinds
    assert kinds[-1] == "response.completed"
    (call,) = final.output
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Rome"}')


def test_the_async_client_streamed_and_not(llm_server):
    llm_server.script([say("one"), say("two words")])

    async def go():
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test"
        ) as client:
            plain = await client.responses.create(model="gpt-4o-mini", input="hi")
            stream = await client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
            events = [event async for event in stream]
            return plain.output_text, events[-1].response.output_text

    assert asyncio.run(go()) == ("one", "two words")


@pytest.mark.inject_fault(http=503, times=2, url="/v1/responses")
def test_503_503_then_the_answer_with_the_sdks_retries(llm_server, client, trace):
    llm_server.script([say("It is sunny.")])
    answer = client.responses.create(model="gpt-4o-mini", input="Weather?")
    assert answer.output_text == "It is sunny."
    assert [r.fault for r in llm_server.requests] == ["503", "503", None]
    assert [r.retry_count for r in llm_server.requests] == [0, 1, 2]
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]


@pytest.mark.inject_fault(http=429, retry_after=1)
def test_a_429s_error_body_is_openais(llm_server, trace):
    llm_server.script([say("ok")], strict=False)
    with (
        openai.OpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test", max_retries=0
        ) as client,
        pytest.raises(openai.RateLimitError) as raised,
    ):
        client.responses.create(model="gpt-4o-mini", input="hi")
    assert raised.value.code == "rate_limit_exceeded"
    assert raised.value.response.headers["retry-after"] == "1"


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("timeout", "APITimeoutError"),
        ("connect_error", "APIConnectionError"),
        ("reset", "APIConnectionError"),
        ("read_error", "APIConnectionError"),
    ],
)
def test_transport_faults_reach_the_sdk(kind, error, llm_server, faults):
    llm_server.script([say("unused")], strict=False)
    faults.http(url="/v1/responses")._kind(kind)
    with (
        openai.OpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test", max_retries=0, timeout=0.2
        ) as client,
        pytest.raises(getattr(openai, error)),
    ):
        client.responses.create(model="gpt-4o-mini", input="hi")
    assert [r.fault for r in llm_server.requests] == [kind]


@pytest.mark.inject_fault(http="truncated_stream", url="/v1/responses")
def test_a_cut_stream_never_completes(llm_server, client):
    llm_server.script([say("unused")], strict=False)
    stream = client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
    seen = []
    with pytest.raises(openai.APIConnectionError):
        seen.extend(event.type for event in stream)
    assert seen[0] == "response.created"
    assert "response.completed" not in seen


@pytest.mark.inject_fault(http="malformed_body", url="/v1/responses")
def test_a_malformed_body_is_not_a_response(llm_server, client):
    llm_server.script([say("unused")], strict=False)
    answer = client.responses.create(model="gpt-4o-mini", input="hi")
    assert isinstance(answer, str)  # what the SDK hands back: the page as text
    assert answer.startswith("<html>")


@pytest.mark.inject_fault(http="malformed_body", url="/v1/responses")
def test_a_malformed_stream_fails_to_parse(llm_server, client):
    llm_server.script([say("unused")], strict=False)
    with pytest.raises(ValueError, match="Expecting value"):
        list(client.responses.create(model="gpt-4o-mini", input="hi", stream=True))


# ----------------------------------------------------------------------------- pydantic-ai


def _pydantic_ai_agent(client):
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=client)
    agent = pydantic_ai.Agent(OpenAIResponsesModel("gpt-4o-mini", provider=provider))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    return agent


def _run(llm_server, prompt, *, stream=False):
    """Run a pydantic-ai agent on the Responses API of ``llm_server``, in one event loop."""

    async def go():
        async with openai.AsyncOpenAI(
            base_url=llm_server.base_url("openai"), api_key="sk-test"
        ) as client:
            agent = _pydantic_ai_agent(client)
            if not stream:
                return (await agent.run(prompt)).output
            async with agent.run_stream(prompt) as run:
                return await run.get_output()

    return asyncio.run(go())


def test_pydantic_ais_responses_model_runs_a_tool_loop(llm_server):
    script = llm_server.script([call_tool("get_weather", city="Paris"), say("Sunny in Paris.")])
    assert _run(llm_server, "Weather in Paris?") == "Sunny in Paris."
    assert [m.role for m in script.requests[1].messages][-1] == "tool"
    assert script.requests[1].messages[-1].content == "sunny in Paris"


@pytest.mark.inject_fault(http=503, url="/v1/responses")
def test_pydantic_ais_responses_model_streams_after_a_503(llm_server, trace):
    llm_server.script([call_tool("get_weather", city="Rome"), say("Rome is sunny too.")])
    assert _run(llm_server, "Weather in Rome?", stream=True) == "Rome is sunny too."
    assert [e.status for e in trace.of("http.request")] == [503, 200, 200]


@pytest.mark.inject_fault(http=503, url="/v1/responses")
def test_pydantic_ais_default_openai_model_reaches_the_responses_api(llm_server, monkeypatch):
    """``Agent("openai:...")`` is an `OpenAIResponsesModel`: it got a 404 here before."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    for name, value in llm_server.env().items():
        monkeypatch.setenv(name, value)
    llm_server.script([say("From the default model.")])
    agent = pydantic_ai.Agent("openai:gpt-4o-mini")

    async def go():
        async with agent:  # closes the provider's http client
            return (await agent.run("hi")).output

    assert asyncio.run(go()) == "From the default model."
    assert [(r.path, r.fault) for r in llm_server.requests] == [
        ("/v1/responses", "503"),
        ("/v1/responses", None),
    ]


# ----------------------------------------------------------------------------- langchain-openai


def _chat_openai(llm_server, **clients):
    langchain_openai = pytest.importorskip("langchain_openai")
    return langchain_openai.ChatOpenAI(
        model="gpt-4o-mini",
        base_url=llm_server.base_url("openai"),
        api_key="sk-test",
        use_responses_api=True,
        **clients,
    )


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.inject_fault(http=503, url="/v1/responses")
def test_langchain_openai_on_the_responses_api_sync(llm_server, trace):
    llm_server.script([call_tool("get_weather", city="Paris"), say("streamed words")])
    chat = _chat_openai(llm_server)
    message = chat.bind_tools([get_weather]).invoke("Weather in Paris?")
    assert message.tool_calls[0]["name"] == "get_weather"
    assert message.tool_calls[0]["args"] == {"city": "Paris"}
    pieces = [chunk.text for chunk in chat.stream("hi")]
    assert "".join(pieces) == "streamed words"
    assert [e.status for e in trace.of("http.request")] == [503, 200, 200]


def test_langchain_openai_on_the_responses_api_async(llm_server):
    httpx2 = pytest.importorskip("httpx2")
    llm_server.script([say("one"), say("two words")])

    async def go():
        async with httpx2.AsyncClient() as http:  # closed here, in the loop that used it
            chat = _chat_openai(llm_server, http_async_client=http)
            plain = await chat.ainvoke("hi")
            pieces = [chunk.text async for chunk in chat.astream("hi")]
        return plain.text, "".join(pieces)

    assert asyncio.run(go()) == ("one", "two words")
