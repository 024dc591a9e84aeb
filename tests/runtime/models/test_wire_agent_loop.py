"""The whole agent loop over each provider's wire format: tool calls out, tool results back."""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx
import pytest

from pytest_agentfaults.runtime.agent import Agent
from pytest_agentfaults.runtime.clock import VirtualClock
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.ollama import OllamaModel
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.runtime.tools import tool
from pytest_agentfaults.testing._wire import error_body

OPENAI_KEY = "sk-test-loop-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-loop-0123456789"
FINAL = "It is 18°C and sunny in Paris."


@dataclass
class Provider:
    name: str
    url: str
    tool_calls: str  # fixture: the model asks for get_weather(Paris) and get_weather(Tokyo)
    text: str  # fixture: the final answer
    stream_tool_calls: str
    stream_text: str
    content_type: str

    def model(self):
        if self.name == "openai":
            return OpenAIModel("gpt-4o-mini", api_key=OPENAI_KEY)
        if self.name == "anthropic":
            return AnthropicModel("claude-3-5-haiku-latest", api_key=ANTHROPIC_KEY)
        return OllamaModel("llama3.2")


PROVIDERS = [
    Provider(
        "openai",
        "https://api.openai.com/v1/chat/completions",
        "openai/chat_tool_calls.json",
        "openai/chat_text.json",
        "openai/stream_tool_calls.txt",
        "openai/stream_text.txt",
        "text/event-stream",
    ),
    Provider(
        "anthropic",
        "https://api.anthropic.com/v1/messages",
        "anthropic/messages_tool_use.json",
        "anthropic/messages_text.json",
        "anthropic/stream_tool_use.txt",
        "anthropic/stream_text.txt",
        "text/event-stream",
    ),
    Provider(
        "ollama",
        "http://localhost:11434/api/chat",
        "ollama/chat_tool_calls.json",
        "ollama/chat_text.json",
        "ollama/stream_tool_calls.ndjson",
        "ollama/stream_text.ndjson",
        "application/x-ndjson",
    ),
]


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request) -> Provider:
    return request.param


@pytest.fixture
def weather():
    cities: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        cities.append(city)
        return {"Paris": "18°C, sunny", "Tokyo": "12°C, rain"}[city]

    get_weather.cities = cities  # type: ignore[attr-defined]
    return get_weather


def bodies(route) -> list[dict]:
    return [json.loads(call.request.content) for call in route.calls]


def tool_results_sent(provider: Provider, body: dict) -> list[tuple[str, str]]:
    """(tool call id or tool name, content) of the tool results in a request body."""
    messages = body["messages"]
    if provider.name == "openai":
        return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
    if provider.name == "anthropic":
        return [
            (block["tool_use_id"], block["content"])
            for m in messages
            if m["role"] == "user" and isinstance(m["content"], list)
            for block in m["content"]
            if block["type"] == "tool_result"
        ]
    return [(m["tool_name"], m["content"]) for m in messages if m["role"] == "tool"]


def expected_results(provider: Provider) -> list[tuple[str, str]]:
    if provider.name == "openai":
        ids = ["call_8fZ1qL2wX9pA", "call_3kR7tY5uB2nM"]
    elif provider.name == "anthropic":
        ids = ["toolu_01A09q90qw90lq917835lq9", "toolu_01B18r81rx81mr828946mr8"]
    else:
        ids = ["get_weather", "get_weather"]
    return list(zip(ids, ["18°C, sunny", "12°C, rain"], strict=True))


def check_round_trip(provider: Provider, route, result, weather) -> None:
    assert result.output == FINAL
    assert result.status == "ok"
    assert weather.cities == ["Paris", "Tokyo"]
    assert route.call_count == 2
    first, second = bodies(route)
    # The first request offers the tool in the provider's shape.
    tools = first["tools"]
    assert len(tools) == 1
    schema = tools[0]["input_schema"] if provider.name == "anthropic" else tools[0]["function"]
    assert "city" in json.dumps(schema)
    # The second carries the assistant's tool calls and both results back.
    assert tool_results_sent(provider, second) == expected_results(provider)
    if provider.name == "anthropic":
        assert second["system"] == "You are a weather bot."
        [results_turn] = [
            m for m in second["messages"] if isinstance(m["content"], list) and m["role"] == "user"
        ]
        assert len(results_turn["content"]) == 2  # consecutive results share one user turn
    else:
        assert second["messages"][0] == {"role": "system", "content": "You are a weather bot."}
    [assistant] = [m for m in second["messages"] if m["role"] == "assistant"]
    if provider.name == "openai":
        assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == [
            '{"city": "Paris"}',
            '{"city": "Tokyo"}',
        ]
    elif provider.name == "anthropic":
        assert [b["input"] for b in assistant["content"] if b["type"] == "tool_use"] == [
            {"city": "Paris"},
            {"city": "Tokyo"},
        ]
    else:
        assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == [
            {"city": "Paris"},
            {"city": "Tokyo"},
        ]
    assert result.usage.llm_calls == 2
    assert result.usage.tool_calls == 2
    assert result.usage.input_tokens > 0
    assert result.usage.output_tokens > 0
    result.trace.assert_sequence(
        "llm.request",
        "llm.response",
        "tool.call:get_weather",
        "tool.result:get_weather",
        "tool.call:get_weather",
        "tool.result:get_weather",
        "llm.request",
        "llm.response",
        "run.end",
    )


def agent_for(provider: Provider, weather, **kwargs) -> Agent:
    return Agent(
        name="weather-bot",
        model=provider.model(),
        instructions="You are a weather bot.",
        tools=[weather],
        clock=kwargs.pop("clock", VirtualClock()),
        **kwargs,
    )


def test_tool_calls_round_trip(respx_mock, provider, weather, json_response):
    route = respx_mock.post(provider.url).mock(
        side_effect=[json_response(provider.tool_calls), json_response(provider.text)]
    )
    result = agent_for(provider, weather).run("Weather in Paris and Tokyo?")
    check_round_trip(provider, route, result, weather)


def test_tool_calls_round_trip_streamed(respx_mock, provider, weather, wire, stream_response):
    route = respx_mock.post(provider.url).mock(
        side_effect=[
            stream_response(wire(provider.stream_tool_calls), content_type=provider.content_type),
            stream_response(wire(provider.stream_text), content_type=provider.content_type),
        ]
    )
    result = agent_for(provider, weather, stream=True).run("Weather in Paris and Tokyo?")
    check_round_trip(provider, route, result, weather)
    assert all(body["stream"] is True for body in bodies(route))


@pytest.mark.asyncio
async def test_tool_calls_round_trip_async(respx_mock, provider, weather, json_response):
    route = respx_mock.post(provider.url).mock(
        side_effect=[json_response(provider.tool_calls), json_response(provider.text)]
    )
    agent = agent_for(provider, weather)
    result = await agent.arun("Weather in Paris and Tokyo?")
    check_round_trip(provider, route, result, weather)
    await agent.model.aclose()


def test_transport_retry_shows_in_the_run_trace_without_the_key(
    respx_mock, provider, weather, json_response
):
    clock = VirtualClock()
    route = respx_mock.post(provider.url).mock(
        side_effect=[
            httpx.Response(503, content=error_body(provider.name, 503, "busy")),
            httpx.ConnectError("connection refused"),
            json_response(provider.tool_calls),
            json_response(provider.text),
        ]
    )
    result = agent_for(provider, weather, clock=clock).run("Weather in Paris and Tokyo?")
    assert result.output == FINAL
    assert route.call_count == 4
    first, second = clock.sleeps  # 0.25 s then 0.5 s, less up to 25 % jitter
    assert 0.1875 <= first <= 0.25
    assert 0.375 <= second <= 0.5
    retries = result.trace.of("transport.retry")
    assert [(e.attempt, e.status, e.delay) for e in retries] == [
        (1, 503, first),
        (2, None, second),
    ]
    assert all(e.agent == "weather-bot" for e in retries)
    assert retries[1].error is not None
    assert retries[1].error.type == "ModelTransportError"
    assert result.trace.delays() == [first, second]
    dumped = result.trace.to_json() + result.trace.render()
    assert OPENAI_KEY not in dumped
    assert ANTHROPIC_KEY not in dumped


def test_arguments_that_are_not_json_are_fed_back_and_corrected(respx_mock, weather, json_response):
    openai = PROVIDERS[0]
    route = respx_mock.post(openai.url).mock(
        side_effect=[
            json_response("openai/chat_tool_args_not_json.json"),
            json_response("openai/chat_tool_calls.json"),
            json_response("openai/chat_text.json"),
        ]
    )
    result = agent_for(openai, weather).run("Weather in Paris?")
    assert result.output == FINAL
    assert weather.cities == ["Paris", "Tokyo"]
    second = bodies(route)[1]
    [(call_id, content)] = tool_results_sent(openai, second)
    assert call_id == "call_badargs01"
    payload = json.loads(content)
    assert payload["ok"] is False
    assert payload["tool"] == "get_weather"
    assert payload["error_type"] == "validation"
    # The model's own (bad) arguments are replayed to it verbatim.
    [assistant] = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{city: 'Paris',}"
    result.trace.assert_sequence("tool.error:get_weather", "llm.request", "tool.call:get_weather")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
def test_anthropic_thinking_survives_the_tool_round_trip(
    respx_mock, weather, json_response, wire, stream_response, stream
):
    # With extended thinking on, the API rejects a tool result whose assistant turn lost its
    # signed thinking blocks: the agent must send them back unchanged.
    anthropic = PROVIDERS[1]
    first = (
        stream_response(wire("anthropic/stream_thinking_tool_use.txt"))
        if stream
        else json_response("anthropic/messages_thinking_tool_use.json")
    )
    route = respx_mock.post(anthropic.url).mock(side_effect=[first, json_response(anthropic.text)])
    model = AnthropicModel(
        "claude-sonnet-4-5",
        api_key=ANTHROPIC_KEY,
        extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    agent = Agent("weather-bot", model=model, tools=[weather], clock=VirtualClock(), stream=stream)
    result = agent.run("Weather in Paris?")
    assert result.output == FINAL
    first_sent, second_sent = bodies(route)
    assert first_sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assistant = second_sent["messages"][1]
    assert assistant["role"] == "assistant"
    assert [block["type"] for block in assistant["content"]] == [
        "thinking",
        "redacted_thinking",
        "tool_use",
    ]
    assert assistant["content"][0]["signature"].startswith("EqQB")
