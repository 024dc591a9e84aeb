"""OllamaModel over /api/chat (JSON and NDJSON streaming), with respx standing in for Ollama."""

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
    UsageError,
)
from pytest_agentfaults.runtime.models.base import Message, ToolCall
from pytest_agentfaults.runtime.models.ollama import OllamaModel

URL = "http://localhost:11434/api/chat"


@pytest.fixture
def model():
    with OllamaModel("llama3.2") as client:
        yield client


def sent(route) -> dict:
    return json.loads(route.calls.last.request.content)


def test_a_text_answer(respx_mock, model, make_request, json_response):
    route = respx_mock.post(URL).mock(return_value=json_response("ollama/chat_text.json"))
    response = model.request(make_request())
    assert sent(route)["stream"] is False  # Ollama streams unless told not to
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (26, 12)
    assert "authorization" not in route.calls.last.request.headers


def test_tool_calls_get_stable_ids(respx_mock, model, make_request, json_response, weather_tool):
    respx_mock.post(URL).mock(return_value=json_response("ollama/chat_tool_calls.json"))
    history = [Message.user("hi"), Message.assistant("hello"), Message.user("weather?")]
    response = model.request(make_request(history, tools=[weather_tool]))
    assert response.tool_calls == [
        ToolCall(id="ollama_call_1_0", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="ollama_call_1_1", name="get_weather", arguments='{"city": "Tokyo"}'),
    ]
    # Ollama says "stop" when it asks for tools; the client reports it as the others do.
    assert response.finish_reason == "tool_calls"


def test_the_request_follows_the_wire_format(respx_mock, model, make_request, weather_tool):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"message": {"role": "assistant", "content": "x"}})
    )
    history = [
        Message.system("You are a weather bot."),
        Message.user("Weather in Paris?"),
        Message.assistant(
            "", [ToolCall(id="ollama_call_0_0", name="get_weather", arguments='{"city": "Paris"}')]
        ),
        Message.tool_result("18°C", tool_call_id="ollama_call_0_0", name="get_weather"),
    ]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    model.request(make_request(history, tools=[weather_tool], output_schema=schema))
    assert sent(route) == {
        "model": "llama3.2",
        "stream": False,
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
                ],
            },
            {"role": "tool", "content": "18°C", "tool_name": "get_weather"},
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
        "format": schema,
    }


def test_extra_body_carries_options(respx_mock, make_request):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"message": {"role": "assistant", "content": "x"}})
    )
    OllamaModel("llama3.2", extra_body={"options": {"temperature": 0}}).request(make_request())
    assert sent(route)["options"] == {"temperature": 0}


def test_an_api_key_is_sent_as_a_bearer_token(respx_mock, make_request):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"message": {"role": "assistant", "content": "x"}})
    )
    OllamaModel("llama3.2", api_key="proxy-token-123").request(make_request())
    assert route.calls.last.request.headers["authorization"] == "Bearer proxy-token-123"


# --------------------------------------------------------------------------- streaming


def test_a_streamed_text_answer(respx_mock, model, make_request, wire, stream_response):
    route = respx_mock.post(URL).mock(
        return_value=stream_response(
            wire("ollama/stream_text.ndjson"), content_type="application/x-ndjson"
        )
    )
    response = model.request(make_request(stream=True))
    assert sent(route)["stream"] is True
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (26, 12)


@pytest.mark.parametrize("size", [1, 50, 100_000])
def test_streamed_tool_calls(respx_mock, model, make_request, wire, stream_response, size):
    body = wire("ollama/stream_tool_calls.ndjson")
    respx_mock.post(URL).mock(return_value=stream_response(body, size=size))
    response = model.request(make_request(stream=True))
    assert [(c.id, c.arguments) for c in response.tool_calls] == [
        ("ollama_call_0_0", '{"city": "Paris"}'),
        ("ollama_call_0_1", '{"city": "Tokyo"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (122, 33)


@pytest.mark.asyncio
async def test_async_stream(respx_mock, make_request, wire, astream_response):
    async with OllamaModel("llama3.2") as model:
        respx_mock.post(URL).mock(return_value=astream_response(wire("ollama/stream_text.ndjson")))
        response = await model.arequest(make_request(stream=True))
    assert response.text == "It is 18°C and sunny in Paris."


def test_a_truncated_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("ollama/stream_truncated.ndjson")))
    with pytest.raises(ModelStreamError, match='ended after 3 lines without "done": true'):
        model.request(make_request(stream=True))


def test_a_stream_cut_mid_line(respx_mock, model, make_request, wire, stream_response):
    body = wire("ollama/stream_text.ndjson")
    respx_mock.post(URL).mock(return_value=stream_response(body[: body.rindex(b"done") - 5]))
    with pytest.raises(ModelStreamError, match="truncated stream: it ended in the middle"):
        model.request(make_request(stream=True))


def test_an_error_line_mid_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("ollama/stream_error.ndjson")))
    with pytest.raises(ModelStreamError, match="mid-stream: an error was encountered"):
        model.request(make_request(stream=True))


def test_invalid_utf8_in_a_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("ollama/stream_invalid_utf8.bin")))
    with pytest.raises(MalformedResponseError, match="line 2 of the stream is not valid UTF-8"):
        model.request(make_request(stream=True))


def test_a_line_that_is_not_json(respx_mock, model, make_request, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(b'{"done": false}\nnot json\n'))
    with pytest.raises(MalformedResponseError, match="stream line 2 is not JSON"):
        model.request(make_request(stream=True))


# --------------------------------------------------------------------------- malformed and errors


def test_missing_message(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("ollama/chat_missing_message.json"))
    with pytest.raises(MalformedResponseError, match="response.message is missing"):
        model.request(make_request())


def test_a_model_that_is_not_pulled(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("ollama/error_404.json", 404))
    with pytest.raises(ModelHTTPError) as caught:
        model.request(make_request())
    assert caught.value.status == 404
    assert 'model "llama3.2" not found, try pulling it first' in str(caught.value)


def test_a_crashed_runner(respx_mock, model, make_request, json_response, clock):
    respx_mock.post(URL).mock(return_value=json_response("ollama/error_500.json", 500))
    with pytest.raises(ModelServerError, match="llama runner process has terminated"):
        model.request(make_request())
    assert clock.sleeps == [0.25, 0.5]


# --------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("gpu-box:8080", "http://gpu-box:8080/api/chat"),
        ("gpu-box", "http://gpu-box:11434/api/chat"),
        ("0.0.0.0", "http://0.0.0.0:11434/api/chat"),
        ("https://ollama.example.com", "https://ollama.example.com/api/chat"),
        ("http://127.0.0.1:11434/", "http://127.0.0.1:11434/api/chat"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(monkeypatch, host, url):
    monkeypatch.setenv("OLLAMA_HOST", host)
    assert OllamaModel("llama3.2").url == url


@pytest.mark.parametrize(
    ("base_url", "fix"),
    [
        ("http://localhost:11434/api/chat", "so use 'http://localhost:11434'"),
        ("http://localhost:11434/api", "so use 'http://localhost:11434'"),
        ("http://localhost:11434/v1", "use OpenAIModel for that"),
        ("localhost:11434", "has no scheme"),
    ],
)
def test_a_wrong_base_url_is_a_usage_error_naming_the_fix(respx_mock, base_url, fix):
    with pytest.raises(UsageError) as caught:
        OllamaModel("llama3.2", base_url=base_url)
    assert fix in str(caught.value)
    assert respx_mock.calls.call_count == 0


def test_a_wrong_ollama_host_names_the_variable(monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "http://localhost:11434/api/chat")
    with pytest.raises(UsageError, match="OLLAMA_HOST="):
        OllamaModel("llama3.2")


def test_name_and_repr():
    model = OllamaModel("qwen2.5:7b")
    assert model.name == "ollama:qwen2.5:7b"
    assert repr(model) == "OllamaModel(model='qwen2.5:7b', base_url='http://localhost:11434')"


def test_a_401_behind_a_proxy_says_to_pass_a_key(respx_mock, model, make_request):
    respx_mock.post(URL).mock(return_value=httpx.Response(401, text="Unauthorized"))
    with pytest.raises(ModelAuthError, match=r"no API key was sent: pass api_key=\)"):
        model.request(make_request())
