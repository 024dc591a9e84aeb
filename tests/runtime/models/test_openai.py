"""OpenAIModel over the chat-completions wire format, with respx standing in for the server."""

from __future__ import annotations

import json

import httpx
import pytest

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelAuthError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.models.base import Message, Model, ModelRequest, ToolCall
from pytest_agentfaults.runtime.models.openai import OpenAIModel

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-openai-0123456789abcdef"


@pytest.fixture
def model():
    with OpenAIModel("gpt-4o-mini", api_key=KEY) as client:
        yield client


def sent(route) -> dict:
    return json.loads(route.calls.last.request.content)


# --------------------------------------------------------------------------- answers


def test_a_text_answer(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("openai/chat_text.json"))
    response = model.request(make_request())
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (82, 11)
    assert response.model == "gpt-4o-mini-2024-07-18"


def test_parallel_tool_calls(respx_mock, model, make_request, json_response, weather_tool):
    respx_mock.post(URL).mock(return_value=json_response("openai/chat_tool_calls.json"))
    response = model.request(make_request(tools=[weather_tool]))
    assert response.tool_calls == [
        ToolCall(id="call_8fZ1qL2wX9pA", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="call_3kR7tY5uB2nM", name="get_weather", arguments='{"city": "Tokyo"}'),
    ]
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (64, 46)


def test_tool_arguments_that_are_not_json_reach_the_agent_verbatim(
    respx_mock, model, make_request, json_response
):
    # The agent judges arguments (InvalidArgsError, so the tool's invalid_args action can
    # repair them); the transport must not swallow what the model sent.
    respx_mock.post(URL).mock(return_value=json_response("openai/chat_tool_args_not_json.json"))
    [call] = model.request(make_request()).tool_calls
    assert call.arguments == "{city: 'Paris',}"


def test_a_refusal_is_reported_as_blocked(respx_mock, model, make_request):
    body = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help."},
                "finish_reason": "stop",
            }
        ]
    }
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=body))
    response = model.request(make_request())
    assert (response.text, response.finish_reason) == ("I can't help.", "refusal")


# --------------------------------------------------------------------------- requests


def test_the_request_follows_the_wire_format(respx_mock, model, make_request, weather_tool):
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    history = [
        Message.system("You are a weather bot."),
        Message.user("Weather in Paris?"),
        Message.assistant(
            "Let me look.",
            [ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')],
        ),
        Message.tool_result("18°C", tool_call_id="call_1", name="get_weather"),
        Message.assistant("", [ToolCall(id="call_2", name="get_weather", arguments="{bad")]),
        Message.tool_result('{"ok": false}', tool_call_id="call_2", name="get_weather"),
    ]
    model.request(make_request(history, tools=[weather_tool]))
    request = route.calls.last.request
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert sent(route) == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{bad"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": '{"ok": false}'},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parameters": weather_tool.parameters,
                },
            }
        ],
    }


def test_structured_output_asks_for_a_json_schema(respx_mock, model, make_request):
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    model.request(make_request(output_schema=schema))
    assert sent(route)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema},
    }


def test_extra_body_and_headers_are_sent(respx_mock, make_request):
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key=KEY,
        headers={"OpenAI-Organization": "org-1"},
        extra_body={"temperature": 0, "max_completion_tokens": 50},
    )
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    model.request(make_request())
    assert sent(route)["temperature"] == 0
    assert sent(route)["max_completion_tokens"] == 50
    assert route.calls.last.request.headers["openai-organization"] == "org-1"


def test_a_tool_without_parameters_gets_an_empty_object_schema(respx_mock, model, make_request):
    from pytest_agentfaults.runtime.models.base import ToolSpec

    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    model.request(make_request(tools=[ToolSpec(name="now")]))
    assert sent(route)["tools"] == [
        {
            "type": "function",
            "function": {"name": "now", "parameters": {"type": "object", "properties": {}}},
        }
    ]


# --------------------------------------------------------------------------- streaming


def test_a_streamed_text_answer(respx_mock, model, make_request, wire, stream_response):
    route = respx_mock.post(URL).mock(return_value=stream_response(wire("openai/stream_text.txt")))
    response = model.request(make_request(stream=True))
    assert sent(route)["stream"] is True
    assert sent(route)["stream_options"] == {"include_usage": True}
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (82, 11)


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
def test_streamed_tool_calls_are_assembled_from_fragments(
    respx_mock, model, make_request, wire, stream_response, size
):
    body = wire("openai/stream_tool_calls.txt")
    respx_mock.post(URL).mock(return_value=stream_response(body, size=size))
    response = model.request(make_request(stream=True))
    assert response.tool_calls == [
        ToolCall(id="call_8fZ1qL2wX9pA", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="call_3kR7tY5uB2nM", name="get_weather", arguments='{"city": "Tokyo"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (64, 46)


def test_a_server_that_ignores_stream_true_is_read_whole(
    respx_mock, model, make_request, json_response
):
    respx_mock.post(URL).mock(return_value=json_response("openai/chat_text.json"))
    assert model.request(make_request(stream=True)).text == "It is 18°C and sunny in Paris."


@pytest.mark.asyncio
async def test_async_streamed_tool_calls(respx_mock, make_request, wire, astream_response):
    async with OpenAIModel("gpt-4o-mini", api_key=KEY) as model:
        respx_mock.post(URL).mock(
            return_value=astream_response(wire("openai/stream_tool_calls.txt"), size=11)
        )
        response = await model.arequest(make_request(stream=True))
    assert [c.arguments for c in response.tool_calls] == ['{"city": "Paris"}', '{"city": "Tokyo"}']


@pytest.mark.asyncio
async def test_async_text_answer(respx_mock, make_request, json_response):
    async with OpenAIModel("gpt-4o-mini", api_key=KEY) as model:
        respx_mock.post(URL).mock(return_value=json_response("openai/chat_text.json"))
        response = await model.arequest(make_request())
    assert response.text == "It is 18°C and sunny in Paris."


# --------------------------------------------------------------------------- malformed


def test_a_2xx_that_is_not_json(respx_mock, model, make_request, wire):
    respx_mock.post(URL).mock(
        return_value=httpx.Response(
            200, content=wire("common/not_json.txt"), headers={"content-type": "text/plain"}
        )
    )
    with pytest.raises(MalformedResponseError) as caught:
        model.request(make_request())
    message = str(caught.value)
    assert message.startswith("openai:gpt-4o-mini: malformed response: the body is not JSON")
    assert "content-type 'text/plain'" in message
    assert "upstream connect error" in message
    assert caught.value.body == wire("common/not_json.txt").decode()


def test_an_html_page_with_200(respx_mock, model, make_request, wire):
    page = wire("common/html_error_page.html")
    respx_mock.post(URL).mock(
        return_value=httpx.Response(200, content=page, headers={"content-type": "text/html"})
    )
    with pytest.raises(MalformedResponseError, match="the body is an HTML page") as caught:
        model.request(make_request())
    assert caught.value.body.startswith("<!DOCTYPE html>")


def test_an_html_page_with_502_is_a_server_error_naming_the_page(respx_mock, make_request, wire):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=False)
    page = wire("common/html_error_page.html")
    respx_mock.post(URL).mock(
        return_value=httpx.Response(502, content=page, headers={"content-type": "text/html"})
    )
    with pytest.raises(ModelServerError) as caught:
        model.request(make_request())
    assert "HTML page: api.example.com | 502: Bad gateway" in str(caught.value)
    assert caught.value.status == 502


def test_an_html_page_on_a_stream(respx_mock, model, make_request, wire):
    page = wire("common/html_error_page.html")
    respx_mock.post(URL).mock(
        return_value=httpx.Response(200, content=page, headers={"content-type": "text/html"})
    )
    with pytest.raises(MalformedResponseError, match="HTML page"):
        model.request(make_request(stream=True))


@pytest.mark.parametrize(
    ("fixture", "what"),
    [
        ("openai/chat_missing_choices.json", "response.choices is missing"),
        (
            "openai/chat_tool_call_missing_name.json",
            "response.choices[0].message.tool_calls[0].function.name is missing",
        ),
    ],
)
def test_missing_fields_are_named(respx_mock, model, make_request, json_response, fixture, what):
    respx_mock.post(URL).mock(return_value=json_response(fixture))
    with pytest.raises(MalformedResponseError) as caught:
        model.request(make_request())
    assert what in str(caught.value)
    assert caught.value.model == "openai:gpt-4o-mini"


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ([], "the response is a list, expected an object"),
        ({"choices": []}, "response.choices is empty"),
        ({"choices": [{"message": "hi"}]}, "response.choices[0].message is a string"),
        ({"choices": [{"message": {"content": 3}}]}, "content is a number"),
        ({"error": {"message": "quota"}}, "a 2xx response holds an error"),
    ],
)
def test_wrong_shapes_are_named(respx_mock, model, make_request, body, what):
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(MalformedResponseError, match="malformed response") as caught:
        model.request(make_request())
    assert what in str(caught.value)


def test_invalid_utf8_body(respx_mock, model, make_request, wire):
    respx_mock.post(URL).mock(
        return_value=httpx.Response(200, content=wire("openai/chat_invalid_utf8.bin"))
    )
    with pytest.raises(MalformedResponseError, match=r"not valid UTF-8 \(byte \d+ is b'\\xb0'\)"):
        model.request(make_request())


def test_an_empty_2xx_body(respx_mock, model, make_request):
    respx_mock.post(URL).mock(return_value=httpx.Response(200, content=b""))
    with pytest.raises(MalformedResponseError, match=r"the body is empty.*Body: '\(empty\)'"):
        model.request(make_request())


def test_a_long_malformed_body_is_truncated(respx_mock, model, make_request):
    respx_mock.post(URL).mock(return_value=httpx.Response(200, content=b"<" + b"x" * 9000))
    with pytest.raises(MalformedResponseError) as caught:
        model.request(make_request())
    assert caught.value.body.endswith("[7001 more characters]")
    assert len(str(caught.value)) < 600


def test_a_truncated_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("openai/stream_truncated.txt")))
    with pytest.raises(ModelStreamError) as caught:
        model.request(make_request(stream=True))
    assert "truncated stream: it ended after 3 events without data: [DONE]" in str(caught.value)


def test_a_stream_cut_in_the_middle_of_an_event(
    respx_mock, model, make_request, wire, stream_response
):
    respx_mock.post(URL).mock(return_value=stream_response(wire("openai/stream_cut_mid_event.txt")))
    with pytest.raises(ModelStreamError, match="truncated stream: it ended in the middle"):
        model.request(make_request(stream=True))


def test_an_error_event_mid_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("openai/stream_error_event.txt")))
    with pytest.raises(ModelStreamError, match="error mid-stream: The server had an error"):
        model.request(make_request(stream=True))


def test_an_event_that_is_not_json(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(
        return_value=stream_response(wire("openai/stream_not_json_event.txt"))
    )
    with pytest.raises(MalformedResponseError, match="stream event 3 is not JSON"):
        model.request(make_request(stream=True))


def test_invalid_utf8_in_a_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("openai/stream_invalid_utf8.bin")))
    with pytest.raises(MalformedResponseError, match="of the stream is not valid UTF-8"):
        model.request(make_request(stream=True))


def test_an_empty_stream(respx_mock, model, make_request, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(b""))
    with pytest.raises(ModelStreamError, match="the stream was empty"):
        model.request(make_request(stream=True))


# --------------------------------------------------------------------------- errors


def test_a_429_with_the_providers_message(respx_mock, make_request, json_response):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=False)
    respx_mock.post(URL).mock(
        return_value=json_response("openai/error_429.json", 429, **{"retry-after": "20"})
    )
    with pytest.raises(RateLimitError) as caught:
        model.request(make_request())
    assert caught.value.retry_after == 20.0
    assert "requests: Rate limit reached for gpt-4o-mini" in str(caught.value)


def test_a_404_hints_at_base_url_and_model(respx_mock, model, make_request):
    respx_mock.post(URL).mock(return_value=httpx.Response(404, json={"error": "nope"}))
    with pytest.raises(ModelHTTPError, match="check base_url and the model name"):
        model.request(make_request())


def test_a_redirect_hints_at_the_new_base_url(respx_mock, make_request):
    model = OpenAIModel("m", base_url="http://llm.local/v1")
    respx_mock.post("http://llm.local/v1/chat/completions").mock(
        return_value=httpx.Response(
            301, headers={"location": "https://llm.local/v1/chat/completions"}
        )
    )
    with pytest.raises(ModelHTTPError, match="redirects to https://llm.local/v1/chat/completions"):
        model.request(make_request())


def test_a_401_without_a_key_says_how_to_send_one(respx_mock, make_request):
    model = OpenAIModel("m", base_url="http://llm.local/v1")
    respx_mock.post("http://llm.local/v1/chat/completions").mock(
        return_value=httpx.Response(401, json={"error": {"message": "unauthorized"}})
    )
    with pytest.raises(ModelAuthError, match="no API key was sent: set OPENAI_API_KEY"):
        model.request(make_request())


# --------------------------------------------------------------------------- secrets


def test_the_key_never_leaks_into_errors_events_or_reprs(respx_mock, make_request, wire):
    key = "my-own-key-that-looks-like-nothing"
    model = OpenAIModel("gpt-4o-mini", api_key=key)
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {key}."}})
    respx_mock.post(URL).mock(
        side_effect=[
            httpx.Response(503, content=f"overloaded for {key}".encode()),
            httpx.ConnectError(f"proxy rejected {key}"),
            httpx.Response(401, content=echo.encode()),
        ]
    )
    recorder = Recorder(agent="bot", clock=make_request().clock)
    request = make_request()
    request.emit = recorder.emit
    with pytest.raises(ModelAuthError) as caught:
        model.request(request)
    error = caught.value
    texts = [
        str(error),
        repr(error),
        error.body,
        json.dumps(error.headers),
        *getattr(error, "__notes__", []),
        recorder.trace.to_json(),
        recorder.trace.render(),
        repr(model),
        str(model),
    ]
    assert len(recorder.trace.of("transport.retry")) == 2
    for text in texts:
        assert key not in text
    assert "Incorrect API key provided: [REDACTED]" in str(error)


def test_repr_shows_model_and_base_url_only():
    model = OpenAIModel("gpt-4o-mini", api_key=KEY)
    assert repr(model) == "OpenAIModel(model='gpt-4o-mini', base_url='https://api.openai.com/v1')"
    for name in dir(model):
        if not name.startswith("_"):
            assert KEY not in repr(getattr(model, name)), name


# --------------------------------------------------------------------------- configuration


def test_it_is_a_model():
    model = OpenAIModel("gpt-4o-mini", api_key=KEY)
    assert isinstance(model, Model)
    assert model.name == "openai:gpt-4o-mini"
    assert model.model == "gpt-4o-mini"
    assert model.url == URL


def test_the_key_comes_from_the_environment(respx_mock, monkeypatch, make_request):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789abc")
    route = respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    OpenAIModel("gpt-4o-mini").request(make_request())
    assert route.calls.last.request.headers["authorization"] == "Bearer sk-from-env-0123456789abc"


def test_a_missing_key_is_a_usage_error_naming_the_variable(respx_mock):
    with pytest.raises(UsageError, match="set the OPENAI_API_KEY environment variable"):
        OpenAIModel("gpt-4o-mini")
    assert respx_mock.calls.call_count == 0


def test_a_custom_server_needs_no_key(respx_mock, make_request):
    route = respx_mock.post("http://localhost:8000/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=_ok())
    )
    OpenAIModel("llama", base_url="http://localhost:8000/v1/").request(make_request())
    assert "authorization" not in route.calls.last.request.headers


def test_base_url_from_the_environment(respx_mock, monkeypatch, make_request):
    monkeypatch.setenv("OPENAI_BASE_URL", "https://gateway.example.com/openai/v1")
    model = OpenAIModel("gpt-4o-mini")
    assert model.url == "https://gateway.example.com/openai/v1/chat/completions"


@pytest.mark.parametrize(
    ("base_url", "fix"),
    [
        (
            "api.openai.com/v1",
            "has no scheme; write it with http:// or https://, e.g. 'https://api.openai.com/v1'",
        ),
        (
            "https://api.openai.com",
            "a bare host; an OpenAI-style base_url ends in /v1, so use 'https://api.openai.com/v1'",
        ),
        ("http://localhost:8000/", "so use 'http://localhost:8000/v1'"),
        (
            "https://api.openai.com/v1/chat/completions",
            "the client adds /chat/completions itself, so use 'https://api.openai.com/v1'",
        ),
    ],
)
def test_a_wrong_base_url_is_a_usage_error_naming_the_fix(respx_mock, base_url, fix):
    with pytest.raises(UsageError) as caught:
        OpenAIModel("gpt-4o-mini", base_url=base_url, api_key=KEY)
    assert fix in str(caught.value)
    assert respx_mock.calls.call_count == 0


def test_a_wrong_openai_base_url_env_names_the_variable(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000/v1")
    with pytest.raises(UsageError, match="OPENAI_BASE_URL='localhost:8000/v1' has no scheme"):
        OpenAIModel("gpt-4o-mini")


def test_an_empty_model_name_is_a_usage_error():
    with pytest.raises(UsageError, match="model must be a model name"):
        OpenAIModel(" ", api_key=KEY)


def test_a_sync_client_cannot_serve_arequest():
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, http_client=httpx.Client())
    with pytest.raises(UsageError, match="pass async_http_client=httpx.AsyncClient"):
        model._async_http_client()


def test_an_async_client_cannot_serve_request(make_request):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, http_client=httpx.AsyncClient())
    with pytest.raises(UsageError, match="call arequest()"):
        model.request(make_request())


def test_http_client_type_is_checked():
    with pytest.raises(UsageError, match="http_client must be an httpx.Client.*not object$"):
        OpenAIModel("gpt-4o-mini", api_key=KEY, http_client=object())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="async_http_client must be an httpx.AsyncClient"):
        OpenAIModel("m", api_key=KEY, async_http_client=httpx.Client())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="both http_client and async_http_client"):
        OpenAIModel(
            "m", api_key=KEY, http_client=httpx.AsyncClient(), async_http_client=httpx.AsyncClient()
        )


@pytest.mark.asyncio
async def test_injected_clients_serve_both_flavours_over_a_mock_transport(make_request):
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_ok())

    transport = httpx.MockTransport(handler)
    sync, asynchronous = httpx.Client(transport=transport), httpx.AsyncClient(transport=transport)
    model = OpenAIModel(
        "gpt-4o-mini", api_key=KEY, http_client=sync, async_http_client=asynchronous
    )
    assert model.request(make_request()).text == "ok"
    assert (await model.arequest(make_request())).text == "ok"
    await model.aclose()
    assert not sync.is_closed  # injected clients belong to the caller
    assert not asynchronous.is_closed
    sync.close()
    await asynchronous.aclose()


def test_close_closes_the_client_it_created(respx_mock, make_request):
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    with OpenAIModel("gpt-4o-mini", api_key=KEY) as model:
        model.request(make_request())
        client = model._client
        assert client is not None
    assert client.is_closed
    model.close()  # twice is fine


def test_a_request_without_an_agent_works(respx_mock):
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=_ok()))
    model = OpenAIModel("gpt-4o-mini", api_key=KEY)
    assert model.request(ModelRequest(messages=[Message.user("hi")])).text == "ok"


def _ok() -> dict[str, object]:
    return {
        "id": "chatcmpl-ok",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
    }


def test_a_streamed_tool_call_without_a_name(respx_mock, model, make_request, stream_response):
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
        b'"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    respx_mock.post(URL).mock(return_value=stream_response(body))
    with pytest.raises(MalformedResponseError, match="streamed tool call 0 never got a function"):
        model.request(make_request(stream=True))


def test_an_error_event_at_the_very_end_without_a_blank_line(
    respx_mock, model, make_request, stream_response
):
    body = b'data: {"choices":[]}\n\ndata: {"error": {"message": "quota exceeded"}}'
    respx_mock.post(URL).mock(return_value=stream_response(body))
    with pytest.raises(ModelStreamError, match="error mid-stream: quota exceeded"):
        model.request(make_request(stream=True))


def test_done_without_a_final_line_end_is_accepted(respx_mock, model, make_request, wire):
    body = wire("openai/stream_text.txt").rstrip(b"\n")
    respx_mock.post(URL).mock(
        return_value=httpx.Response(
            200, content=body, headers={"content-type": "text/event-stream"}
        )
    )
    assert model.request(make_request(stream=True)).text == "It is 18°C and sunny in Paris."


def test_a_401_for_a_wrong_key(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("openai/error_401.json", 401))
    with pytest.raises(ModelAuthError) as caught:
        model.request(make_request())
    message = str(caught.value)
    assert "invalid_request_error: Incorrect API key provided: sk-proj-****" in message
    assert "(check the API key (OPENAI_API_KEY or api_key=) and its permissions)" in message
    assert caught.value.status == 401


@pytest.mark.parametrize("keyword", ["http_client", "async_http_client"])
def test_an_httpx2_client_is_named_as_such_with_the_fix(keyword):
    import httpx2  # the SDKs' fork, installed with the test extra

    client = httpx2.AsyncClient()
    with pytest.raises(UsageError) as caught:
        OpenAIModel("gpt-4o-mini", api_key=KEY, **{keyword: client})
    message = str(caught.value)
    assert f"{keyword} must be" in message
    assert "not httpx2.AsyncClient" in message
    assert "pass an httpx client" in message
