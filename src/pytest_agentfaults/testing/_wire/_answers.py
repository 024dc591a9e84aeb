"""Answers in each provider's wire format: JSON bodies, SSE / NDJSON streams, broken answers.

`render_response` turns a `ModelResponse` into what OpenAI (chat completions or the
Responses API), Anthropic (messages), Ollama (chat) or Gemini (generateContent) would
send, byte for byte the same on every run; `truncated_body` and `malformed_body` are the
answers a fault serves instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from pytest_agentfaults.runtime.models.base import Message, ModelResponse
from pytest_agentfaults.testing._wire._base import (
    NDJSON_TYPE,
    SSE_TYPE,
    Provider,
    content_type,
    encode,
    sse,
    tool_use_id,
)
from pytest_agentfaults.testing._wire._gemini import gemini_body, gemini_stream
from pytest_agentfaults.testing._wire._responses import echoed, responses_body, responses_stream

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["malformed_body", "render_response", "truncated_body", "truncated_events"]

_CREATED: Final = 1734460799  # a fixed timestamp: the same bytes on every run
_CREATED_AT: Final = "2024-12-17T18:39:58.001234Z"
_FINGERPRINT: Final = "fp_agentfaults"
# What OpenAI always sends with chat completions usage (zeros: the kit caches nothing,
# reasons about nothing). Shared by every answer: they are only encoded, never changed.
_PROMPT_DETAILS: Final = {"cached_tokens": 0, "audio_tokens": 0}
_COMPLETION_DETAILS: Final = {
    "reasoning_tokens": 0,
    "audio_tokens": 0,
    "accepted_prediction_tokens": 0,
    "rejected_prediction_tokens": 0,
}
# and Anthropic with messages usage
_CACHE_CREATION: Final = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
_PARTIAL_TEXT: Final = "The answer was cut off in the middle of a sent"
_HTML: Final = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def _arguments_object(arguments: str) -> Any:
    """A tool call's arguments as a JSON object, or the raw text when it is not one."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _halves(text: str) -> list[str]:
    if len(text) < 2:
        return [text] if text else []
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


_ANTHROPIC_STOP: Final = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def render_response(
    provider: Provider,
    response: ModelResponse,
    *,
    model: str,
    stream: bool,
    response_id: str = "agentfaults",
    include_usage: bool = False,
    request: Any = None,
) -> list[bytes]:
    """``response`` as ``provider`` sends it: one JSON body, or the stream's events in order.

    A streamed answer comes back as one item per event (SSE) or line (NDJSON), so a
    caller can cut it mid-way. ``request``: the request's parsed body, for what the
    answer echoes of it (the Responses API's ``instructions``, ``tools`` ...).
    """
    if provider == "openai":
        return (
            _openai_stream(response, model, response_id, include_usage)
            if stream
            else [encode(_openai_body(response, model, response_id)).encode()]
        )
    if provider == "openai-responses":
        echo = echoed(request)
        return (
            responses_stream(response, model, response_id, echo)
            if stream
            else [encode(responses_body(response, model, response_id, echo)).encode()]
        )
    if provider == "gemini":
        return (
            gemini_stream(response, model, response_id)
            if stream
            else [encode(gemini_body(response, model, response_id)).encode()]
        )
    if provider == "anthropic":
        return (
            _anthropic_stream(response, model, response_id)
            if stream
            else [encode(_anthropic_body(response, model, response_id)).encode()]
        )
    return (
        _ollama_stream(response, model)
        if stream
        else [encode(_ollama_body(response, model)).encode()]
    )


def _usage(response: ModelResponse) -> tuple[int, int]:
    return response.usage.input_tokens, response.usage.output_tokens


def _openai_usage(response: ModelResponse) -> dict[str, Any]:
    prompt, completion = _usage(response)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": _PROMPT_DETAILS,
        "completion_tokens_details": _COMPLETION_DETAILS,
    }


def _anthropic_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": _CACHE_CREATION,
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _openai_body(response: ModelResponse, model: str, response_id: str) -> dict[str, Any]:
    calls = response.tool_calls
    message: dict[str, Any] = {
        "role": "assistant",
        "content": response.text if response.text or not calls else None,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return {
        "id": f"chatcmpl-{response_id}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": response.finish_reason or "stop",
            }
        ],
        "usage": _openai_usage(response),
        "service_tier": "default",
        "system_fingerprint": _FINGERPRINT,
    }


def _openai_stream(
    response: ModelResponse, model: str, response_id: str, include_usage: bool
) -> list[bytes]:
    head = {
        "id": f"chatcmpl-{response_id}",
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": _FINGERPRINT,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**head, "choices": [choice]})

    # null content when the answer has none (tool calls only), as OpenAI sends it: the
    # SDK's accumulated message then has content None, like the answer not streamed
    content = "" if response.text or not response.tool_calls else None
    events = [chunk({"role": "assistant", "content": content, "refusal": None})]
    events.extend(chunk({"content": piece}) for piece in _halves(response.text))
    for index, call in enumerate(response.tool_calls):
        start = {"index": index, "id": call.id, "type": "function"}
        start["function"] = {"name": call.name, "arguments": ""}
        events.append(chunk({"tool_calls": [start]}))
        for piece in _halves(call.arguments):
            fragment = {"index": index, "function": {"arguments": piece}}
            events.append(chunk({"tool_calls": [fragment]}))
    events.append(chunk({}, response.finish_reason or "stop"))
    if include_usage:
        events.append(sse({**head, "choices": [], "usage": _openai_usage(response)}))
    events.append(sse("[DONE]"))
    return events


def _anthropic_body(response: ModelResponse, model: str, response_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if response.text:
        content.append({"type": "text", "text": response.text})
    content.extend(
        {
            "type": "tool_use",
            "id": tool_use_id(call.id),
            "name": call.name,
            "input": _arguments_object(call.arguments),
        }
        for call in response.tool_calls
    )
    prompt, completion = _usage(response)
    finish = response.finish_reason or "stop"
    return {
        "id": f"msg_{response_id}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _ANTHROPIC_STOP.get(finish, finish),
        "stop_sequence": None,
        "usage": _anthropic_usage(prompt, completion),
    }


def _anthropic_stream(response: ModelResponse, model: str, response_id: str) -> list[bytes]:
    prompt, completion = _usage(response)
    start: dict[str, Any] = {
        "id": f"msg_{response_id}",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(prompt, 1),
    }
    events = [sse({"type": "message_start", "message": start}, "message_start")]
    index = 0

    def block(content_block: dict[str, Any], deltas: Iterable[dict[str, Any]]) -> None:
        events.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": content_block},
                "content_block_start",
            )
        )
        for delta in deltas:
            events.append(
                sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))

    if response.text:
        pieces = _halves(response.text)
        block({"type": "text", "text": ""}, ({"type": "text_delta", "text": p} for p in pieces))
        index += 1
    for call in response.tool_calls:
        use = {"type": "tool_use", "id": tool_use_id(call.id), "name": call.name, "input": {}}
        pieces = _halves(call.arguments)
        block(use, ({"type": "input_json_delta", "partial_json": p} for p in pieces))
        index += 1
    finish = response.finish_reason or "stop"
    delta = {"stop_reason": _ANTHROPIC_STOP.get(finish, finish), "stop_sequence": None}
    events.append(
        sse(
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": completion}},
            "message_delta",
        )
    )
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events


def _ollama_message(response: ModelResponse) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    if response.tool_calls:
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": _arguments_object(c.arguments)}}
            for c in response.tool_calls
        ]
    return message


def _ollama_done(response: ModelResponse) -> dict[str, Any]:
    prompt, completion = _usage(response)
    finish = response.finish_reason or "stop"
    return {
        "done_reason": "stop" if finish == "tool_calls" else finish,
        "done": True,
        "total_duration": 885095291,
        "load_duration": 3753500,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 328493000,
        "eval_count": completion,
        "eval_duration": 552222000,
    }


def _ollama_body(response: ModelResponse, model: str) -> dict[str, Any]:
    body = {"model": model, "created_at": _CREATED_AT, "message": _ollama_message(response)}
    body.update(_ollama_done(response))
    return body


def _ollama_stream(response: ModelResponse, model: str) -> list[bytes]:
    def line(payload: dict[str, Any]) -> bytes:
        return encode({"model": model, "created_at": _CREATED_AT, **payload}).encode() + b"\n"

    lines = [
        line({"message": {"role": "assistant", "content": piece}, "done": False})
        for piece in _halves(response.text)
    ]
    if response.tool_calls:
        message = _ollama_message(response)
        message["content"] = ""
        lines.append(line({"message": message, "done": False}))
    lines.append(line({"message": {"role": "assistant", "content": ""}, **_ollama_done(response)}))
    return lines


def truncated_events(
    provider: Provider | None, *, stream: bool, model: str
) -> tuple[str, list[bytes]]:
    """A partial answer a fault cuts: its content type and all its events (or its body)."""
    partial = ModelResponse(message=Message.assistant(_PARTIAL_TEXT), finish_reason="stop")
    if provider is None:
        events = (
            [sse({"partial": True}), sse({"partial": True}), sse({"partial": False})]
            if stream
            else [b'{"partial": true, "more": "' + b"x" * 40 + b'"}']
        )
    else:
        events = render_response(provider, partial, model=model, stream=stream)
    return content_type(provider, stream), events


def truncated_body(provider: Provider | None, *, stream: bool, model: str) -> tuple[str, bytes]:
    """What a client receives of an answer cut mid-way: its content type and the bytes.

    Streamed, the first events of a partial answer and never the terminal one; not
    streamed, the first half of the JSON body.
    """
    kind, events = truncated_events(provider, stream=stream, model=model)
    if stream:
        sent = b"".join(events[: max(1, len(events) // 2)])
    else:
        sent = events[0][: len(events[0]) // 2]
    return kind, sent


def malformed_body(
    provider: Provider | None, *, stream: bool, text: str | None = None
) -> tuple[str, bytes]:
    """A 200 answer that is not what the client expects: its content type and bytes.

    HTML, or, streamed, a first event that is not JSON (then the stream ends as usual).
    """
    text = _HTML if text is None else text
    if not stream:
        looks_html = text.lstrip().startswith("<")
        return ("text/html; charset=utf-8" if looks_html else "text/plain"), text.encode()
    flat = text.replace("\r", "").replace("\n", " ")
    if provider == "ollama":
        return NDJSON_TYPE, flat.encode() + b"\n"
    tail = sse("[DONE]") if provider == "openai" else b""
    return SSE_TYPE, sse(flat) + tail
