"""The OpenAI Responses API (``POST /v1/responses``): answers out, requests in.

An answer is one ``response`` object (``output`` holds a ``message`` item with its
``output_text`` part, then one ``function_call`` item per tool call), or, streamed, the
typed SSE events the API sends, in its order: ``response.created``,
``response.in_progress``, then per output item ``response.output_item.added``, its
content part or argument deltas and their ``.done`` events, ``response.output_item.done``,
and last ``response.completed`` (``response.incomplete`` for a cut-off answer). Each event
carries its ``type`` and a ``sequence_number``, as the shapes of ``openai.types.responses``
expect.
"""

from __future__ import annotations

import json
from typing import Any, Final

from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from pytest_agentfaults.testing._wire._base import sse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["echoed", "responses_body", "responses_request", "responses_stream"]

_CREATED: Final = 1734460799
#: finish reason -> (status, incomplete_details.reason)
_INCOMPLETE: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}
#: what a ``response`` object echoes of its request, as sent (else the API's defaults)
_ECHOED: Final = (
    "instructions",
    "max_output_tokens",
    "metadata",
    "parallel_tool_calls",
    "previous_response_id",
    "reasoning",
    "store",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_p",
    "truncation",
    "user",
)
# usage details the API always sends (zeros: the kit caches nothing); shared by every
# answer, which only encodes them
_INPUT_DETAILS: Final = {"cached_tokens": 0, "cache_write_tokens": 0}
_OUTPUT_DETAILS: Final = {"reasoning_tokens": 0}


def echoed(request: Any) -> dict[str, Any] | None:
    """The fields of a Responses ``request`` body its answer echoes (None: none)."""
    if not isinstance(request, dict):
        return None
    found = {key: request[key] for key in _ECHOED if key in request}
    return found or None


def _halves(text: str) -> list[str]:
    if len(text) < 2:
        return [text] if text else []
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


def _message_item(response_id: str, text: str, status: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {
        "type": "message",
        "id": f"msg_{response_id}",
        "status": status,
        "role": "assistant",
        "content": [part] if status == "completed" else [],
    }


def _call_item(call: ToolCall, index: int, response_id: str, done: bool) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{response_id}_{index}",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments if done else "",
        "status": "completed" if done else "in_progress",
    }


def _output(response: ModelResponse, response_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if response.text or not response.tool_calls:
        items.append(_message_item(response_id, response.text, "completed"))
    items.extend(
        _call_item(call, index, response_id, done=True)
        for index, call in enumerate(response.tool_calls)
    )
    return items


def _envelope(
    response: ModelResponse,
    model: str,
    response_id: str,
    output: list[dict[str, Any]],
    status: str,
    echo: dict[str, Any] | None,
) -> dict[str, Any]:
    finish = response.finish_reason or "stop"
    incomplete = _INCOMPLETE.get(finish) if status != "in_progress" else None
    if incomplete is not None:
        status = "incomplete"
    prompt, completion = response.usage.input_tokens, response.usage.output_tokens
    usage = None
    if status != "in_progress":
        usage = {
            "input_tokens": prompt,
            "input_tokens_details": _INPUT_DETAILS,
            "output_tokens": completion,
            "output_tokens_details": _OUTPUT_DETAILS,
            "total_tokens": prompt + completion,
        }
    envelope = {
        "id": f"resp_{response_id}",
        "object": "response",
        "created_at": _CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }
    if echo is not None:
        envelope.update(echo)
    return envelope


def responses_body(
    response: ModelResponse, model: str, response_id: str, echo: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The ``response`` object ``POST /v1/responses`` answers with (not streamed).

    ``echo``: the request's fields it repeats (`echoed`).
    """
    output = _output(response, response_id)
    return _envelope(response, model, response_id, output, "completed", echo)


def responses_stream(
    response: ModelResponse, model: str, response_id: str, echo: dict[str, Any] | None = None
) -> list[bytes]:
    """The SSE events of a streamed Responses answer, one item per event."""
    events: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append(sse({"type": kind, "sequence_number": len(events), **fields}, kind))

    start = _envelope(response, model, response_id, [], "in_progress", echo)
    emit("response.created", response=start)
    emit("response.in_progress", response=start)
    index = 0
    if response.text or not response.tool_calls:
        item_id = f"msg_{response_id}"
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        emit(
            "response.output_item.added",
            output_index=index,
            item=_message_item(response_id, "", "in_progress"),
        )
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        emit("response.content_part.added", **where, part=empty)
        for piece in _halves(response.text):
            emit("response.output_text.delta", **where, delta=piece, logprobs=[])
        emit("response.output_text.done", **where, text=response.text, logprobs=[])
        emit("response.content_part.done", **where, part={**empty, "text": response.text})
        item = _message_item(response_id, response.text, "completed")
        emit("response.output_item.done", output_index=index, item=item)
        index += 1
    for number, call in enumerate(response.tool_calls):
        item = _call_item(call, number, response_id, done=False)
        emit("response.output_item.added", output_index=index, item=item)
        where = {"item_id": item["id"], "output_index": index}
        for piece in _halves(call.arguments):
            emit("response.function_call_arguments.delta", **where, delta=piece)
        emit("response.function_call_arguments.done", **where, arguments=call.arguments)
        done = _call_item(call, number, response_id, done=True)
        emit("response.output_item.done", output_index=index, item=done)
        index += 1
    final = responses_body(response, model, response_id, echo)
    last = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    emit(last, response=final)
    return events


# ----------------------------------------------------------------------------- requests in


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return "" if content is None else json.dumps(content)


def _role(value: Any) -> Any:
    if value == "developer":
        return "system"
    return value if value in ("system", "user", "assistant") else "user"


def responses_request(data: dict[str, Any], *, stream: bool) -> ModelRequest:
    """The `ModelRequest` a Responses request body stands for."""
    messages: list[Message] = []
    if isinstance(data.get("instructions"), str) and data["instructions"]:
        messages.append(Message.system(data["instructions"]))
    raw = data.get("input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else raw
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            arguments = item.get("arguments", "{}")
            call = ToolCall(
                id=str(item.get("call_id") or item.get("id") or ""),
                name=str(item.get("name") or ""),
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
            if messages and messages[-1].role == "assistant" and not messages[-1].tool_call_id:
                messages[-1].tool_calls.append(call)
            else:
                messages.append(Message(role="assistant", tool_calls=[call]))
        elif kind == "function_call_output":
            messages.append(
                Message(
                    role="tool",
                    content=_text(item.get("output")),
                    tool_call_id=str(item.get("call_id") or ""),
                )
            )
        elif kind == "message":
            role, text = _role(item.get("role")), _text(item.get("content"))
            messages.append(Message(role=role, content=text))
    tools = [
        ToolSpec(
            name=spec["name"],
            description=str(spec.get("description") or ""),
            parameters=spec.get("parameters") or {},
        )
        for spec in data.get("tools") or []
        if isinstance(spec, dict) and isinstance(spec.get("name"), str)
    ]
    return ModelRequest(messages=messages, tools=tools, stream=stream)
