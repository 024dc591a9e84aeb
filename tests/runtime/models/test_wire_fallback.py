"""The fallback model is told why the primary failed, in each provider's wire format.

The primary answers with JSON that does not match ``output_type``; the fallback's request
must carry the correction history and end with a user message that names the validation
error and the schema expected (a trailing assistant message would be a prefill to Anthropic).
"""

from __future__ import annotations

import itertools
import json

import httpx
import pytest
from pydantic import BaseModel

import pytest_agentfaults.runtime.models.openai as openai_module
from pytest_agentfaults import ScriptedModel, fail
from pytest_agentfaults.runtime.agent import Agent
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import Message, ModelResponse, TokenUsage
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.testing._wire import JSON_TYPE, render_response

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
BAD = '{"city": "Paris"}'
GOOD = '{"city": "Paris", "celsius": 18}'


class Weather(BaseModel):
    city: str
    celsius: int


def answer_as(provider: str):
    """``text`` as ``provider``'s JSON answer, written by the kit's one wire module."""

    def answer(text: str) -> httpx.Response:
        response = ModelResponse(
            message=Message.assistant(text),
            finish_reason="stop",
            usage=TokenUsage(input_tokens=10, output_tokens=5),
        )
        (body,) = render_response(provider, response, model="m", stream=False)
        return httpx.Response(200, content=body, headers={"content-type": JSON_TYPE})

    return answer


PROVIDERS = {
    "openai": (
        OPENAI_URL,
        answer_as("openai"),
        lambda name: OpenAIModel(name, api_key="sk-test-fallback-0123456789"),
    ),
    "anthropic": (
        ANTHROPIC_URL,
        answer_as("anthropic"),
        lambda name: AnthropicModel(name, api_key="sk-ant-test-fallback-0123456789"),
    ),
}


def run_with_fallback(respx_mock, provider: str, max_retries: int) -> tuple[object, list[dict]]:
    """Primary ``cheap`` always answers BAD, fallback ``strong`` answers GOOD: the bodies sent."""
    url, answer, make = PROVIDERS[provider]
    bodies: list[dict] = []

    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        return answer(GOOD if body["model"] == "strong" else BAD)

    respx_mock.post(url).mock(side_effect=reply)
    with make("cheap") as primary, make("strong") as fallback:
        agent = Agent(
            "bot",
            model=primary,
            instructions="You report the weather.",
            output_type=Weather,
            resilience=ResilienceConfig(max_retries=max_retries, fallback_model=fallback),
        )
        result = agent.run("Weather in Paris?")
    return result, bodies


def text_of(message: dict) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("max_retries", [0, 2])
def test_the_fallback_request_ends_with_a_user_message_stating_the_failure(
    respx_mock, provider, max_retries
):
    result, bodies = run_with_fallback(respx_mock, provider, max_retries)

    assert result.output == Weather(city="Paris", celsius=18)
    assert [b["model"] for b in bodies] == ["cheap"] * (max_retries + 1) + ["strong"]
    sent = bodies[-1]["messages"]
    last = sent[-1]
    assert last["role"] == "user"
    said = text_of(last)
    assert "celsius" in said
    assert "Field required" in said
    assert '"required": ["city", "celsius"]' in said  # what is expected: the schema
    # The correction history travels too: every bad answer, each followed by its correction.
    roles = [m["role"] for m in sent if m["role"] != "system"]
    assert roles == ["user"] + ["assistant", "user"] * (max_retries + 1)
    assert [text_of(m) for m in sent if m["role"] == "assistant"] == [BAD] * (max_retries + 1)


def test_the_anthropic_fallback_body_has_no_trailing_assistant_prefill(respx_mock):
    _, bodies = run_with_fallback(respx_mock, "anthropic", 0)

    sent = bodies[-1]["messages"]
    assert sent[-1]["role"] != "assistant"
    assert bodies[-1]["system"] == "You report the weather."
    # Anthropic wants alternating turns: no two user turns in a row.
    roles = [m["role"] for m in sent]
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_a_fallback_model_string_is_resolved_once_and_its_client_reused(respx_mock, monkeypatch):
    # Resolved at each use, every run that fell back built a client of its own (and an
    # httpx pool) that nobody closed: a socket left open per failed primary call.
    made: list[OpenAIModel] = []

    class Counted(OpenAIModel):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(openai_module, "OpenAIModel", Counted)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fallback-0123456789")
    respx_mock.post(OPENAI_URL).mock(side_effect=lambda request: answer_as("openai")("fine"))
    config = ResilienceConfig(fallback_model="openai:strong")
    agent = Agent("bot", model=ScriptedModel([fail.http(503)] * 3), resilience=config)
    assert [agent.run("hi").output for _ in range(3)] == ["fine"] * 3
    assert len(made) == 1
    # another agent with the same config shares it too: one client for one config
    other = Agent("other", model=ScriptedModel([fail.http(503)]), resilience=config)
    assert other.run("hi").output == "fine"
    assert len(made) == 1
    made[0].close()
