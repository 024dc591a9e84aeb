"""Gemini (``models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``).

An answer is a ``GenerateContentResponse``: one candidate whose ``content.parts`` hold the
text and one ``functionCall`` per tool call (arguments as an object), its
``finishReason`` (``STOP``, ``MAX_TOKENS``, ``SAFETY``) and ``usageMetadata``. Streamed,
the same response comes in pieces, one SSE ``data:`` event each, the last one carrying
the finish reason and the usage. Errors are Google's ``{"error": {"code", "message",
"status"}}``.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from pytest_agentfaults.testing._wire._base import sse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["gemini_body", "gemini_request", "gemini_status", "gemini_stream"]

_FINISH: Final = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}
#: HTTP status -> Google's canonical error status
_STATUS: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def gemini_status(status: int) -> str:
    """Google's error ``status`` name for an HTTP ``status`` (``UNAVAILABLE`` for 503)."""
    return _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


def _args(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _usage(response: ModelResponse) -> dict[str, int]:
    prompt, completion = response.usage.input_tokens, response.usage.output_tokens
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "totalTokenCount": prompt + completion,
    }


def _chunk(
    parts: list[dict[str, Any]], model: str, response_id: str, finish: str | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": model, "responseId": response_id}


def _call_parts(response: ModelResponse) -> list[dict[str, Any]]:
    return [
        {"functionCall": {"id": call.id, "name": call.name, "args": _args(call.arguments)}}
        for call in response.tool_calls
    ]


def _finish(response: ModelResponse) -> str:
    finish = response.finish_reason or "stop"
    return _FINISH.get(finish, "OTHER")


def gemini_body(response: ModelResponse, model: str, response_id: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` of ``generateContent``."""
    parts: list[dict[str, Any]] = [{"text": response.text}] if response.text else []
    parts += _call_parts(response)
    body = _chunk(parts or [{"text": ""}], model, response_id, _finish(response))
    body["usageMetadata"] = _usage(response)
    return body


def gemini_stream(response: ModelResponse, model: str, response_id: str) -> list[bytes]:
    """The SSE events of ``streamGenerateContent?alt=sse``, one item per event."""
    text = response.text
    middle = len(text) // 2
    pieces = [p for p in (text[:middle], text[middle:]) if p]
    tail: list[dict[str, Any]] = [{"text": pieces.pop()}] if pieces else []
    tail += _call_parts(response)
    chunks = [_chunk([{"text": p}], model, response_id, None) for p in pieces]
    last = _chunk(tail or [{"text": ""}], model, response_id, _finish(response))
    last["usageMetadata"] = _usage(response)
    chunks.append(last)
    return [sse(chunk) for chunk in chunks]


def _text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def gemini_request(data: dict[str, Any], *, stream: bool) -> ModelRequest:
    """The `ModelRequest` a ``generateContent`` body stands for."""
    messages: list[Message] = []
    system = data.get("systemInstruction") or data.get("system_instruction")
    if isinstance(system, dict) and _text(system.get("parts")):
        messages.append(Message.system(_text(system.get("parts"))))
    for content in data.get("contents") or []:
        if not isinstance(content, dict):
            continue
        raw = content.get("parts")
        parts: list[Any] = raw if isinstance(raw, list) else []
        role: Literal["assistant", "user"] = (
            "assistant" if content.get("role") == "model" else "user"
        )
        calls, results = [], []
        for index, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall") or part.get("function_call")
            result = part.get("functionResponse") or part.get("function_response")
            if isinstance(call, dict):
                calls.append(
                    ToolCall(
                        id=str(call.get("id") or f"call_{index + 1}"),
                        name=str(call.get("name") or ""),
                        arguments=json.dumps(call.get("args") or {}, ensure_ascii=False),
                    )
                )
            elif isinstance(result, dict):
                results.append(
                    Message(
                        role="tool",
                        content=json.dumps(result.get("response"), ensure_ascii=False),
                        tool_call_id=str(result.get("id") or ""),
                        name=str(result.get("name") or "") or None,
                    )
                )
        messages.extend(results)
        text = _text(parts)
        if text or calls or not results:
            messages.append(Message(role=role, content=text, tool_calls=calls))
    tools = []
    for tool in data.get("tools") or []:
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for spec in declarations if isinstance(declarations, list) else []:
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                parameters = spec.get("parameters") or spec.get("parametersJsonSchema") or {}
                tools.append(
                    ToolSpec(
                        name=spec["name"],
                        description=str(spec.get("description") or ""),
                        parameters=parameters,
                    )
                )
    return ModelRequest(messages=messages, tools=tools, stream=stream)
