"""``http_faults.script(provider, steps)``: scripted steps as each provider's bodies, in-process.

The real SDKs (openai chat completions and Responses, anthropic, google-genai) and a plain
httpx client for Ollama read the rendered answers, streamed and not, sync and async.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from pytest_agentfaults import UsageError
from pytest_agentfaults.testing import fail, malformed
from pytest_agentfaults.testing.steps import call_tool, say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ASK = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


def test_openai_chat_completions_a_tool_call_then_text(http_faults):
    script = http_faults.script("openai", [call_tool("get_weather", city="Paris"), say("Sunny.")])
    with openai.OpenAI(api_key="sk-test") as client:
        first = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
        (call,) = first.choices[0].message.tool_calls
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "get_weather",
            {"city": "Paris"},
        )
        assert first.choices[0].finish_reason == "tool_calls"
        chunks = list(
            client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True)
        )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Sunny."
    assert [r.stream for r in script.requests] == [False, True]


def test_openai_responses_async_streamed_and_not(http_faults):
    http_faults.script("openai-responses", [call_tool("lookup", q="x"), say("Done.")])

    async def go():
        async with openai.AsyncOpenAI(api_key="sk-test") as client:
            first = await client.responses.create(model="gpt-4o-mini", input="hi")
            stream = await client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
            events = [event async for event in stream]
            return first.output[0], events[-1]

    call, last = asyncio.run(go())
    assert (call.type, call.name) == ("function_call", "lookup")
    assert (last.type, last.response.output_text) == ("response.completed", "Done.")


def test_anthropic_sync_and_async_with_a_streamed_tool_use(http_faults):
    http_faults.script("anthropic", [say("Hello."), call_tool("get_weather", city="Rome")])
    with anthropic.Anthropic(api_key="sk-ant-test") as client:
        message = client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=ASK)
    assert message.content[0].text == "Hello."

    async def go():
        async with (
            anthropic.AsyncAnthropic(api_key="sk-ant-test") as client,
            client.messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=ASK) as stream,
        ):
            return await stream.get_final_message()

    final = asyncio.run(go())
    assert final.stop_reason == "tool_use"
    assert (final.content[0].name, final.content[0].input) == ("get_weather", {"city": "Rome"})


def test_ollama_streams_ndjson_by_default(http_faults):
    http_faults.script("ollama", [say("Hi there."), say("Plain.")])
    url = "http://localhost:11434/api/chat"
    with httpx.Client() as client:
        lines = client.post(url, json={"model": "llama3", "messages": ASK}).text.splitlines()
        plain = client.post(url, json={"model": "llama3", "messages": ASK, "stream": False})
    assert "".join(json.loads(line)["message"]["content"] for line in lines) == "Hi there."
    assert json.loads(lines[-1])["done"] is True
    assert plain.json()["message"]["content"] == "Plain."


def test_gemini_through_google_genai(http_faults):
    genai = pytest.importorskip("google.genai")
    http_faults.script("gemini", [say("Bonjour."), say("Streamed answer")])
    with genai.Client(api_key="gemini-test-key") as client:
        answer = client.models.generate_content(model="gemini-2.0-flash", contents="hi")
        pieces = client.models.generate_content_stream(model="gemini-2.0-flash", contents="hi")
        streamed = "".join(chunk.text for chunk in pieces)
    assert (answer.text, streamed) == ("Bonjour.", "Streamed answer")


def test_http_failure_steps_are_the_providers_statuses(http_faults, trace):
    http_faults.script("anthropic", [fail.http(529), fail.rate_limit(retry_after=2), say("Ok.")])
    with anthropic.Anthropic(api_key="sk-ant-test") as client:
        message = client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=ASK)
    assert message.content[0].text == "Ok."
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [529, 429, 200]
    assert requests[1].field("retry_after") == 2.0


def test_a_malformed_step_is_a_200_that_is_not_json(http_faults):
    http_faults.script("openai", [malformed.not_json("<html>Bad Gateway</html>")])
    with openai.OpenAI(api_key="sk-test", max_retries=0) as client:
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
    assert answer == "<html>Bad Gateway</html>"  # the SDK hands back the text


def test_faults_fire_before_the_scripted_route(http_faults, faults, trace):
    faults.http(url="https://api.openai.com/v1/responses").status(503).times(2)
    http_faults.script("openai-responses", [say("After two 503s.")])
    with openai.OpenAI(api_key="sk-test") as client:
        answer = client.responses.create(model="gpt-4o-mini", input="hi")
    assert answer.output_text == "After two 503s."
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]


def test_a_custom_base_url_takes_url(http_faults):
    http_faults.script(
        "openai", [say("Via the proxy.")], url="https://proxy.test/v1/chat/completions"
    )
    with openai.OpenAI(api_key="sk-test", base_url="https://proxy.test/v1") as client:
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
    assert answer.choices[0].message.content == "Via the proxy."


@pytest.mark.parametrize(
    ("provider", "base_url"),
    [
        ("openai", "https://proxy.test/v1"),
        ("openai", "https://proxy.test/v1/"),
        ("openai-responses", "https://proxy.test/v1"),
        ("anthropic", "https://proxy.test"),
    ],
)
def test_url_takes_the_base_url_the_sdk_client_was_given(http_faults, provider, base_url):
    # the docs say url= is "for another base URL": the one the client is built with
    http_faults.script(provider, [say("Via the proxy.")], url=base_url)
    if provider == "anthropic":
        with anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url) as client:
            message = client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=ASK)
        assert message.content[0].text == "Via the proxy."
        return
    with openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0) as client:
        if provider == "openai":
            answer = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
            assert answer.choices[0].message.content == "Via the proxy."
        else:
            assert client.responses.create(model="m", input="hi").output_text == "Via the proxy."


def test_url_takes_an_ollama_host_and_a_gemini_base_url(http_faults):
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    http_faults.script("ollama", [say("Local.")], url="http://ollama.test:11434")
    http_faults.script("gemini", [say("Bonjour."), say("Streamed")], url="https://gemini.test")
    with httpx.Client() as plain:
        body = {"model": "llama3.2", "stream": False, "messages": []}
        local = plain.post("http://ollama.test:11434/api/chat", json=body)
    assert local.json()["message"]["content"] == "Local."
    options = types.HttpOptions(base_url="https://gemini.test")
    with genai.Client(api_key="gemini-test-key", http_options=options) as client:
        answer = client.models.generate_content(model="gemini-2.0-flash", contents="hi")
        pieces = client.models.generate_content_stream(model="gemini-2.0-flash", contents="hi")
        streamed = "".join(chunk.text for chunk in pieces)
    assert (answer.text, streamed) == ("Bonjour.", "Streamed")


@pytest.mark.parametrize("url", ["proxy.test/v1", "/v1/chat/completions", "ftp://proxy.test/v1"])
def test_a_url_without_http_scheme_and_host_is_a_usage_error(http_faults, url):
    with pytest.raises(UsageError, match=r"url=.*'https://proxy\.example\.com/v1'") as raised:
        http_faults.script("openai", [say("x")], url=url)
    assert repr(url) in str(raised.value)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda h: h.script("mistral", [say("x")]), "unknown provider"),
        (lambda h: h.script("open-ai", [say("x")]), "unknown provider.*did you mean 'openai'"),
        (lambda h: h.script("openai", "say"), "steps must be a list"),
        (lambda h: h.script("openai", [say("x")], url=3), "url= must be"),
        (lambda h: h.script("openai", [say("x")], strict="yes"), "strict= must be True or False"),
    ],
)
def test_bad_arguments_are_usage_errors(http_faults, call, match):
    with pytest.raises(UsageError, match=match):
        call(http_faults)


def test_strict_false_allows_leftover_steps(http_faults):
    http_faults.assert_all_called = False
    script = http_faults.script("ollama", [say("never asked")], strict=False)
    assert script.remaining == 1


def test_transport_failure_steps_point_to_http_faults(http_faults):
    http_faults.script("openai", [fail.timeout()])
    with (
        openai.OpenAI(api_key="sk-test", max_retries=0) as client,
        pytest.raises(UsageError, match=r"faults\.http\(url=\.\.\.\)\.timeout\(\)"),
    ):
        client.chat.completions.create(model="gpt-4o-mini", messages=ASK)


def test_a_responses_stream_cut_in_process_after_two_events(http_faults, faults):
    faults.http(url="https://api.openai.com/v1/responses").truncated_stream(after=2)
    http_faults.script("openai-responses", [say("After the cut.")])
    seen = []
    with openai.OpenAI(api_key="sk-test") as client:
        stream = client.responses.create(model="gpt-4o-mini", input="hi", stream=True)
        with pytest.raises(openai.APIConnectionError):
            seen.extend(event.type for event in stream)
        again = client.responses.create(model="gpt-4o-mini", input="hi")  # the app re-asks
    assert seen == ["response.created", "response.in_progress"]
    assert again.output_text == "After the cut."


def test_gemini_context_length_in_process(faults):
    genai = pytest.importorskip("google.genai")
    errors = pytest.importorskip("google.genai.errors")
    faults.http(url="https://generativelanguage.googleapis.com/").context_length()
    with (
        genai.Client(api_key="gemini-test-key") as client,
        pytest.raises(errors.ClientError) as raised,
    ):
        client.models.generate_content(model="gemini-2.0-flash", contents="hi")
    assert (raised.value.code, raised.value.status) == (400, "INVALID_ARGUMENT")
    assert "exceeds the maximum number of tokens" in raised.value.message
