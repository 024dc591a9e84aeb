"""Gemini on ``llm_server``: ``generateContent`` and ``streamGenerateContent`` for google-genai."""

from __future__ import annotations

import asyncio

import pytest

from pytest_agentfaults.testing.steps import call_tool, say

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
errors = pytest.importorskip("google.genai.errors")

MODEL = "gemini-2.0-flash"


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


@pytest.fixture
def clients():
    """Every client a test makes, closed at its end (a collected client closes too early)."""
    made = []
    yield made
    for client in made:
        client.close()


@pytest.fixture
def make_client(clients):
    def make(llm_server, **options):
        http = types.HttpOptions(base_url=llm_server.base_url("gemini"), **options)
        client = genai.Client(api_key="gemini-test-key", http_options=http)
        clients.append(client)
        return client

    return make


def test_a_function_call_then_the_answer(llm_server, make_client):
    script = llm_server.script([call_tool("get_weather", city="Paris"), say("It is sunny.")])
    client = make_client(llm_server)
    first = client.models.generate_content(model=MODEL, contents="Weather in Paris?")
    (call,) = first.function_calls
    assert (call.name, call.args) == ("get_weather", {"city": "Paris"})
    second = client.models.generate_content(
        model=MODEL,
        contents=[
            types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name="get_weather", response={"sky": "sun"})
                ],
            ),
        ],
        config=types.GenerateContentConfig(system_instruction="Be brief."),
    )
    assert second.text == "It is sunny."
    assert second.usage_metadata.total_token_count > 0
    assert [m.role for m in script.requests[1].messages] == ["system", "user", "assistant", "tool"]
    assert all(r.path.endswith(f"/models/{MODEL}:generateContent") for r in llm_server.requests)


def test_a_streamed_answer_comes_in_pieces(llm_server, make_client):
    llm_server.script([say("Streamed hello world")])
    client = make_client(llm_server)
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
    assert len(chunks) == 2
    assert "".join(c.text for c in chunks) == "Streamed hello world"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert llm_server.requests[0].stream


def test_the_async_client(llm_server, make_client):
    llm_server.script([say("one"), say("two words")])
    client = make_client(llm_server)

    async def go():
        plain = await client.aio.models.generate_content(model=MODEL, contents="hi")
        pieces = [
            chunk.text
            async for chunk in await client.aio.models.generate_content_stream(
                model=MODEL, contents="hi"
            )
        ]
        await client.aio.aclose()
        return plain.text, "".join(pieces)

    assert asyncio.run(go()) == ("one", "two words")


@pytest.mark.inject_fault(http=503)
def test_a_503_is_googles_error_shape(llm_server, make_client):
    llm_server.script([say("unused")], strict=False)
    client = make_client(llm_server)
    with pytest.raises(errors.ServerError) as raised:
        client.models.generate_content(model=MODEL, contents="hi")
    assert raised.value.code == 503
    assert raised.value.status == "UNAVAILABLE"


@pytest.mark.inject_fault(http="quota")
def test_a_per_minute_quota_429(llm_server, make_client):
    llm_server.script([say("unused")], strict=False)
    client = make_client(llm_server)
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model=MODEL, contents="hi")
    assert raised.value.code == 429
    assert raised.value.status == "RESOURCE_EXHAUSTED"
    assert raised.value.details["error"]["details"][1]["retryDelay"] == "1s"


@pytest.mark.inject_fault(http=503)
def test_the_sdks_own_retry_options_retry_the_503(llm_server, trace, make_client):
    llm_server.script([say("after the retry")])
    client = make_client(
        llm_server, retry_options=types.HttpRetryOptions(attempts=2, initial_delay=0.5)
    )
    answer = client.models.generate_content(model=MODEL, contents="hi")
    assert answer.text == "after the retry"
    assert [e.status for e in trace.of("http.request")] == [503, 200]
