"""The wire of the newer kinds, per provider, and of the Responses and Gemini formats."""

from __future__ import annotations

import email.utils
import json

import pytest

from pytest_agentfaults.runtime.models.base import Message, ModelResponse, TokenUsage, ToolCall
from pytest_agentfaults.testing import _wire
from pytest_agentfaults.testing._wire import kind_served, model_request, retry_headers

PROVIDERS = ["openai", "openai-responses", "anthropic", "ollama", "gemini"]


def body(served) -> dict:
    return json.loads(b"".join(served.chunks))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_length_is_each_providers_own_400(provider):
    served = kind_served("context_length", provider, stream=False, model="m")
    assert served.status == 400
    payload = body(served)
    if provider.startswith("openai"):
        assert payload["error"]["code"] == "context_length_exceeded"
        assert payload["error"]["param"] == (
            "input" if provider == "openai-responses" else "messages"
        )
    elif provider == "anthropic":
        assert payload["error"] == {
            "type": "invalid_request_error",
            "message": "prompt is too long: 208476 tokens > 200000 maximum",
        }
    elif provider == "ollama":
        assert payload == {"error": "the input length exceeds the context length"}
    else:
        assert (payload["error"]["code"], payload["error"]["status"]) == (400, "INVALID_ARGUMENT")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_quota_is_a_429_in_each_providers_shape(provider):
    served = kind_served("quota", provider, stream=False, model="gpt-x", retry_after=3)
    assert served.status == 429
    headers = dict(served.headers)
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("3", "3000")
    payload = body(served)
    if provider == "gemini":
        assert payload["error"]["status"] == "RESOURCE_EXHAUSTED"
        assert payload["error"]["details"][-1]["retryDelay"] == "3s"
    elif provider == "anthropic":
        assert payload["error"]["type"] == "rate_limit_error"
        assert "per minute" in payload["error"]["message"]
    elif provider.startswith("openai"):
        assert (payload["error"]["type"], payload["error"]["code"]) == (
            "tokens",
            "rate_limit_exceeded",
        )
        assert "gpt-x" in payload["error"]["message"]
        assert headers["x-ratelimit-reset-tokens"] == "3s"


@pytest.mark.parametrize(
    ("fmt", "names"),
    [
        (None, ["retry-after", "retry-after-ms"]),
        ("both", ["retry-after", "retry-after-ms"]),
        ("seconds", ["retry-after"]),
        ("ms", ["retry-after-ms"]),
        ("date", ["retry-after"]),
    ],
)
def test_retry_headers_in_each_format(fmt, names):
    sent = retry_headers(1.2, fmt, now=1_700_000_000.5)
    assert [name for name, _ in sent] == names
    if fmt == "date":
        assert sent[0][1] == "Tue, 14 Nov 2023 22:13:22 GMT"  # now + 1.2 s, rounded up
        assert email.utils.parsedate_to_datetime(sent[0][1]).timestamp() == 1_700_000_002
    elif fmt == "ms":
        assert sent == [("retry-after-ms", "1200")]
    else:
        assert sent[0] == ("retry-after", "2")


@pytest.mark.parametrize(
    "provider", ["openai", "openai-responses", "anthropic", "gemini", "ollama"]
)
@pytest.mark.parametrize("kind", ["truncated_stream", "stall"])
def test_a_cut_or_stalled_stream_never_sends_its_terminal_event(provider, kind):
    _, events = _wire.truncated_events(provider, stream=True, model="m")
    for after in range(len(events) + 3):
        served = kind_served(kind, provider, stream=True, model="m", after=after)
        assert served.chunks == events[: min(after, len(events) - 1)]
        assert served.then == ("stall" if kind == "stall" else "cut")


def test_proxy_html_and_not_json():
    page = kind_served("proxy_html", "openai", stream=True, model="m", status=504)
    assert (page.status, dict(page.headers)["content-type"]) == (504, "text/html")
    assert b"<title>504 Gateway Timeout</title>" in page.chunks[0]
    text = kind_served("not_json", "anthropic", stream=False, model="m", should_retry=True)
    assert dict(text.headers) == {"content-type": "application/json"}  # no status, no header
    with pytest.raises(ValueError):
        json.loads(b"".join(text.chunks))


ANSWER = ModelResponse(
    message=Message(
        role="assistant",
        content="Checking.",
        tool_calls=[ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')],
    ),
    finish_reason="tool_calls",
    usage=TokenUsage(input_tokens=5, output_tokens=3),
)


def test_a_responses_body_holds_a_message_then_the_function_calls():
    (raw,) = _wire.render_response("openai-responses", ANSWER, model="m", stream=False)
    payload = json.loads(raw)
    assert [item["type"] for item in payload["output"]] == ["message", "function_call"]
    assert payload["output"][1]["call_id"] == "call_1"
    assert payload["usage"]["total_tokens"] == 8
    cut = ANSWER.model_copy(update={"finish_reason": "length"})
    (raw,) = _wire.render_response("openai-responses", cut, model="m", stream=False)
    assert json.loads(raw)["incomplete_details"] == {"reason": "max_output_tokens"}


def test_a_gemini_stream_ends_with_the_finish_reason_and_the_usage():
    events = _wire.render_response("gemini", ANSWER, model="gemini-x", stream=True)
    chunks = [json.loads(e.decode().removeprefix("data: ")) for e in events]
    assert "finishReason" not in chunks[0]["candidates"][0]
    last = chunks[-1]["candidates"][0]
    assert last["finishReason"] == "STOP"
    assert last["content"]["parts"][-1]["functionCall"]["args"] == {"city": "Paris"}
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] == 8


def test_a_gemini_request_reads_back_as_a_conversation():
    request = model_request(
        "gemini",
        {
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "w", "args": {"c": 1}}}]},
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": "w", "response": {"r": 2}}}],
                },
            ],
            "tools": [{"functionDeclarations": [{"name": "w", "description": "d"}]}],
        },
        stream=False,
    )
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[2].tool_calls[0].arguments == '{"c": 1}'
    assert [t.name for t in request.tools] == ["w"]


def test_the_paths_name_the_providers():
    assert _wire.provider_for("/v1/responses") == "openai-responses"
    assert _wire.provider_for("/v1beta/models/gemini-2.0-flash:generateContent") == "gemini"
    path = "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    assert _wire.provider_for(path) == "gemini"
    assert _wire.wants_stream("gemini", b"{}", path)
    assert _wire.model_name(b"{}", path) == "gemini-2.0-flash"
