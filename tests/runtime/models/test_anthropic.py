"""AnthropicModel over the Messages API wire format, with respx standing in for the server."""

from __future__ import annotations

import json

import httpx
import pytest

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelAuthError,
    ModelServerError,
    ModelStreamError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import Message, ToolCall

URL = "https://api.anthropic.com/v1/messages"
KEY = "sk-ant-api03-test0123456789abcdef"


@pytest.fixture
def model():
    with AnthropicModel("claude-3-5-haiku-latest", api_key=KEY) as client:
        yield client


def sent(route) -> dict:
    return json.loads(route.calls.last.request.content)


def test_a_text_answer(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("anthropic/messages_text.json"))
    response = model.request(make_request())
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (412, 14)
    assert response.model == "claude-3-5-haiku-20241022"


def test_tool_use_blocks(respx_mock, model, make_request, json_response, weather_tool):
    respx_mock.post(URL).mock(return_value=json_response("anthropic/messages_tool_use.json"))
    response = model.request(make_request(tools=[weather_tool]))
    assert response.text == "I'll check the weather in both cities."
    assert response.tool_calls == [
        ToolCall(
            id="toolu_01A09q90qw90lq917835lq9", name="get_weather", arguments='{"city": "Paris"}'
        ),
        ToolCall(
            id="toolu_01B18r81rx81mr828946mr8", name="get_weather", arguments='{"city": "Tokyo"}'
        ),
    ]
    assert response.finish_reason == "tool_calls"
    # Cached input tokens are input tokens too.
    assert (response.usage.input_tokens, response.usage.output_tokens) == (400, 98)


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("pause_turn", "pause_turn"),
    ],
)
def test_stop_reasons_are_normalised(respx_mock, model, make_request, raw, normalised):
    body = {"content": [{"type": "text", "text": "x"}], "stop_reason": raw}
    respx_mock.post(URL).mock(return_value=httpx.Response(200, json=body))
    assert model.request(make_request()).finish_reason == normalised


def test_the_request_follows_the_wire_format(respx_mock, model, make_request, weather_tool):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"content": [], "stop_reason": "end_turn"})
    )
    history = [
        Message.system("You are a weather bot."),
        Message.user("Weather in Paris and Tokyo?"),
        Message.assistant(
            "Checking.",
            [
                ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}'),
                ToolCall(id="toolu_2", name="get_weather", arguments="{city: Tokyo"),
            ],
        ),
        Message.tool_result("18°C", tool_call_id="toolu_1", name="get_weather"),
        Message.tool_result('{"ok": false}', tool_call_id="toolu_2", name="get_weather"),
        Message.user("Thanks. And tomorrow?"),
        Message.assistant(""),
    ]
    model.request(make_request(history, tools=[weather_tool]))
    request = route.calls.last.request
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert sent(route) == {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 4096,
        "system": "You are a weather bot.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"raw_arguments": "{city: Tokyo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": '{"ok": false}'},
                ],
            },
            {"role": "user", "content": "Thanks. And tomorrow?"},
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "input_schema": weather_tool.parameters,
            }
        ],
    }


def test_max_tokens_is_configurable_and_checked(respx_mock, make_request):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"content": [{"type": "text", "text": "x"}]})
    )
    AnthropicModel("claude", api_key=KEY, max_tokens=10).request(make_request())
    assert sent(route)["max_tokens"] == 10
    with pytest.raises(UsageError, match="max_tokens=0"):
        AnthropicModel("claude", api_key=KEY, max_tokens=0)


# --------------------------------------------------------------------------- streaming


def test_a_streamed_text_answer(respx_mock, model, make_request, wire, stream_response):
    route = respx_mock.post(URL).mock(
        return_value=stream_response(wire("anthropic/stream_text.txt"))
    )
    response = model.request(make_request(stream=True))
    assert sent(route)["stream"] is True
    assert response.text == "It is 18°C and sunny in Paris."
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (412, 14)


@pytest.mark.parametrize("size", [1, 13, 100_000])
def test_streamed_tool_use_is_assembled(
    respx_mock, model, make_request, wire, stream_response, size
):
    body = wire("anthropic/stream_tool_use.txt")
    respx_mock.post(URL).mock(return_value=stream_response(body, size=size))
    response = model.request(make_request(stream=True))
    assert response.text == "I'll check the weather in both cities."
    assert response.tool_calls == [
        ToolCall(
            id="toolu_01A09q90qw90lq917835lq9", name="get_weather", arguments='{"city": "Paris"}'
        ),
        ToolCall(
            id="toolu_01B18r81rx81mr828946mr8", name="get_weather", arguments='{"city": "Tokyo"}'
        ),
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (380, 98)


def test_streamed_arguments_that_are_not_json_reach_the_agent_verbatim(
    respx_mock, model, make_request, wire, stream_response
):
    body = wire("anthropic/stream_tool_args_not_json.txt")
    respx_mock.post(URL).mock(return_value=stream_response(body))
    [call] = model.request(make_request(stream=True)).tool_calls
    assert call.arguments == "{city: 'Paris'"


@pytest.mark.asyncio
async def test_async_streamed_tool_use(respx_mock, make_request, wire, astream_response):
    async with AnthropicModel("claude-3-5-haiku-latest", api_key=KEY) as model:
        respx_mock.post(URL).mock(
            return_value=astream_response(wire("anthropic/stream_tool_use.txt"))
        )
        response = await model.arequest(make_request(stream=True))
    assert [c.name for c in response.tool_calls] == ["get_weather", "get_weather"]


def test_a_truncated_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(return_value=stream_response(wire("anthropic/stream_truncated.txt")))
    with pytest.raises(ModelStreamError, match="without message_stop"):
        model.request(make_request(stream=True))


def test_an_error_event_mid_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(
        return_value=stream_response(wire("anthropic/stream_error_event.txt"))
    )
    with pytest.raises(ModelStreamError, match="mid-stream: overloaded_error: Overloaded"):
        model.request(make_request(stream=True))


def test_invalid_utf8_in_a_stream(respx_mock, model, make_request, wire, stream_response):
    respx_mock.post(URL).mock(
        return_value=stream_response(wire("anthropic/stream_invalid_utf8.bin"))
    )
    with pytest.raises(MalformedResponseError, match="not valid UTF-8"):
        model.request(make_request(stream=True))


def test_a_delta_for_a_block_that_never_started(respx_mock, model, make_request, stream_response):
    body = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":4,'
        b'"delta":{"type":"text_delta","text":"x"}}\n\n'
    )
    respx_mock.post(URL).mock(return_value=stream_response(body))
    with pytest.raises(MalformedResponseError, match="continues content block 4, never started"):
        model.request(make_request(stream=True))


# --------------------------------------------------------------------------- malformed


def test_missing_content(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("anthropic/messages_missing_content.json"))
    with pytest.raises(MalformedResponseError, match="response.content is missing"):
        model.request(make_request())


def test_tool_input_that_is_not_an_object(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(
        return_value=json_response("anthropic/messages_tool_input_not_object.json")
    )
    with pytest.raises(
        MalformedResponseError, match=r"response.content\[0\].input is not an object"
    ):
        model.request(make_request())


def test_an_html_page(respx_mock, model, make_request, wire):
    respx_mock.post(URL).mock(
        return_value=httpx.Response(
            200, content=wire("common/html_error_page.html"), headers={"content-type": "text/html"}
        )
    )
    with pytest.raises(MalformedResponseError, match="HTML page"):
        model.request(make_request())


# --------------------------------------------------------------------------- errors


def test_a_429_carries_the_providers_message(respx_mock, make_request, json_response):
    model = AnthropicModel("claude", api_key=KEY, transport_retry=False)
    respx_mock.post(URL).mock(
        return_value=json_response("anthropic/error_429.json", 429, **{"retry-after": "3"})
    )
    with pytest.raises(
        RateLimitError, match="rate_limit_error: Number of request tokens"
    ) as caught:
        model.request(make_request())
    assert caught.value.retry_after == 3.0


def test_overloaded_529_after_retries(respx_mock, model, make_request, json_response, clock):
    respx_mock.post(URL).mock(return_value=json_response("anthropic/error_529.json", 529))
    with pytest.raises(ModelServerError, match="overloaded_error: Overloaded"):
        model.request(make_request())
    assert clock.sleeps == [0.25, 0.5]


def test_a_401_says_to_check_the_key(respx_mock, model, make_request, json_response):
    respx_mock.post(URL).mock(return_value=json_response("anthropic/error_401.json", 401))
    with pytest.raises(ModelAuthError, match="check the API key \\(ANTHROPIC_API_KEY") as caught:
        model.request(make_request())
    assert KEY not in str(caught.value)


# --------------------------------------------------------------------------- configuration


def test_a_missing_key_is_a_usage_error_naming_the_variable(respx_mock):
    with pytest.raises(UsageError, match="set the ANTHROPIC_API_KEY environment variable"):
        AnthropicModel("claude-3-5-haiku-latest")
    assert respx_mock.calls.call_count == 0


def test_the_key_comes_from_the_environment(monkeypatch, respx_mock, make_request):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-0123456789")
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"content": [{"type": "text", "text": "x"}]})
    )
    AnthropicModel("claude").request(make_request())
    assert route.calls.last.request.headers["x-api-key"] == "sk-ant-env-0123456789"


@pytest.mark.parametrize(
    ("base_url", "fix"),
    [
        ("https://api.anthropic.com/v1/messages", "so use 'https://api.anthropic.com'"),
        ("https://api.anthropic.com/v1", "so use 'https://api.anthropic.com'"),
        ("api.anthropic.com", "e.g. 'https://api.anthropic.com'"),
    ],
)
def test_a_wrong_base_url_is_a_usage_error_naming_the_fix(respx_mock, base_url, fix):
    with pytest.raises(UsageError) as caught:
        AnthropicModel("claude", base_url=base_url, api_key=KEY)
    assert fix in str(caught.value)
    assert respx_mock.calls.call_count == 0


def test_a_proxy_base_url(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gateway.example.com/anthropic/")
    model = AnthropicModel("claude")
    assert model.url == "https://gateway.example.com/anthropic/v1/messages"
    assert repr(model) == (
        "AnthropicModel(model='claude', base_url='https://gateway.example.com/anthropic')"
    )


# --------------------------------------------------------------------------- extended thinking

THINKING = {
    "type": "thinking",
    "thinking": "The user wants the weather in Paris; I should call get_weather.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
}
REDACTED_THINKING = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
}


def test_thinking_blocks_are_kept_verbatim(respx_mock, model, make_request, json_response):
    body = "anthropic/messages_thinking_tool_use.json"
    respx_mock.post(URL).mock(return_value=json_response(body))
    message = model.request(make_request()).message
    assert message.thinking == [THINKING, REDACTED_THINKING]
    assert message.content == ""  # thinking is not the answer
    assert [call.name for call in message.tool_calls] == ["get_weather"]


@pytest.mark.parametrize("size", [1, 29, 100_000])
def test_streamed_thinking_and_its_signature_are_assembled(
    respx_mock, model, make_request, wire, stream_response, size
):
    body = wire("anthropic/stream_thinking_tool_use.txt")
    respx_mock.post(URL).mock(return_value=stream_response(body, size=size))
    message = model.request(make_request(stream=True)).message
    assert message.thinking == [THINKING, REDACTED_THINKING]
    assert message.tool_calls == [
        ToolCall(id="toolu_01Th1nk", name="get_weather", arguments='{"city": "Paris"}')
    ]


def test_thinking_goes_back_first_in_its_assistant_turn(respx_mock, model, make_request):
    route = respx_mock.post(URL).mock(
        return_value=httpx.Response(200, json={"content": [], "stop_reason": "end_turn"})
    )
    call = ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Paris"}')
    history = [
        Message.user("Weather in Paris?"),
        Message.assistant("Checking.", [call], thinking=[THINKING, REDACTED_THINKING]),
        Message.tool_result("18°C", tool_call_id="toolu_1", name="get_weather"),
    ]
    model.request(make_request(history))
    assistant = sent(route)["messages"][1]
    assert assistant["content"] == [
        THINKING,
        REDACTED_THINKING,
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
