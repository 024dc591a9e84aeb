"""Requests in: which provider a path is, whether it asks for a stream, what it asks for.

`model_request` reads an OpenAI / Ollama chat body or an Anthropic messages body back into
the `ModelRequest` a scripted step answers.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolCall, ToolSpec
from pytest_agentfaults.testing._wire._base import Provider, from_tool_use_id
from pytest_agentfaults.testing._wire._gemini import gemini_request
from pytest_agentfaults.testing._wire._responses import responses_request

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["model_name", "model_request", "parse_body", "provider_for", "wants_stream"]


# a session asks about its few endpoints again and again: a pure function, remembered
@functools.lru_cache(maxsize=256)
def provider_for(path: str) -> Provider | None:
    """The provider whose endpoint ``path`` is (``/v1/chat/completions`` is ``"openai"``)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/responses"):
        return "openai-responses"
    if "/models/" in path and path.endswith(("GenerateContent", ":generateContent")):
        return "gemini"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/api/chat"):
        return "ollama"
    return None


def wants_stream(provider: Provider | None, body: bytes, path: str = "") -> bool:
    """Whether the request asks for a streamed answer (Ollama streams by default).

    Gemini says it in the path (``:streamGenerateContent``), the others in the body.
    """
    if provider == "gemini":
        return ":streamGenerateContent" in path
    if b"stream" not in body:
        return provider == "ollama" and body.lstrip().startswith(b"{")
    data, problem = parse_body(body)
    if problem or not isinstance(data, dict):
        return False
    default = provider == "ollama"
    return bool(data.get("stream", default))


def parse_body(body: bytes) -> tuple[Any, str]:
    """A request body as JSON (``{}`` when empty), or ``(None, what is wrong with it)``."""
    if not body:
        return {}, ""
    try:
        return json.loads(body), ""
    except RecursionError:  # only the decoder's own recursion
        return None, f"the request body is JSON nested too deeply to parse ({len(body)} bytes)"
    except UnicodeDecodeError as exc:
        return None, f"the request body is not JSON: it is not valid UTF-8 (byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"the request body is not JSON ({exc.msg} at char {exc.pos})"
    except ValueError as exc:  # valid JSON Python refuses, e.g. an int of 4,301+ digits
        return None, f"the request body is JSON that cannot be read ({str(exc)[:120]})"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return "" if content is None else json.dumps(content)


def _role(value: Any) -> Any:
    if value == "developer":
        return "system"
    return value if value in ("system", "user", "assistant", "tool") else "user"


def _arguments_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def model_request(provider: Provider, body: Any, *, stream: bool) -> ModelRequest:
    """The `ModelRequest` a wire request body stands for (what a script step answers)."""
    data = body if isinstance(body, dict) else {}
    if provider == "openai-responses":
        return responses_request(data, stream=stream)
    if provider == "gemini":
        return gemini_request(data, stream=stream)
    messages: list[Message] = []
    tools: list[ToolSpec] = []
    raw_items, raw_tools = data.get("messages"), data.get("tools")
    items = raw_items if isinstance(raw_items, list) else []
    specs = raw_tools if isinstance(raw_tools, list) else []
    if provider == "anthropic":
        if data.get("system"):
            messages.append(Message.system(_text(data["system"])))
        for item in items:
            if isinstance(item, dict):
                messages.extend(_anthropic_messages(item))
        for spec in specs:
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                tools.append(
                    ToolSpec(
                        name=spec["name"],
                        description=str(spec.get("description") or ""),
                        parameters=spec.get("input_schema") or {},
                    )
                )
    else:
        for item in items:
            if isinstance(item, dict):
                messages.append(_chat_message(item))
        for spec in specs:
            function = spec.get("function") if isinstance(spec, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                tools.append(
                    ToolSpec(
                        name=function["name"],
                        description=str(function.get("description") or ""),
                        parameters=function.get("parameters") or {},
                    )
                )
    return ModelRequest(messages=messages, tools=tools, stream=stream)


def _chat_message(item: dict[str, Any]) -> Message:
    calls = []
    for index, raw in enumerate(item.get("tool_calls") or []):
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict):
            calls.append(
                ToolCall(
                    id=str(raw.get("id") or f"call_{index + 1}"),
                    name=str(function.get("name") or ""),
                    arguments=_arguments_text(function.get("arguments", "{}")),
                )
            )
    name = item.get("name") or item.get("tool_name")
    call_id = item.get("tool_call_id")
    return Message(
        role=_role(item.get("role")),
        content=_text(item.get("content")),
        tool_calls=calls,
        tool_call_id=call_id if isinstance(call_id, str) else None,
        name=name if isinstance(name, str) else None,
    )


def _anthropic_messages(item: dict[str, Any]) -> list[Message]:
    content = item.get("content")
    role = _role(item.get("role"))
    if not isinstance(content, list):
        return [Message(role=role, content=_text(content))]
    text: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=from_tool_use_id(str(block.get("id") or "")),
                    name=str(block.get("name") or ""),
                    arguments=_arguments_text(block.get("input", {})),
                )
            )
        elif kind == "tool_result":
            results.append(
                Message(
                    role="tool",
                    content=_text(block.get("content")),
                    tool_call_id=from_tool_use_id(str(block.get("tool_use_id") or "")),
                )
            )
    messages = list(results)
    if text or calls or not results:
        messages.append(Message(role=role, content="".join(text), tool_calls=calls))
    return messages


def model_name(body: bytes, path: str = "") -> str:
    """The ``model`` a request names, or ``"agentfaults"`` (an answer echoes it).

    Gemini names it in the path (``/v1beta/models/gemini-2.0-flash:generateContent``).
    """
    if "/models/" in path and ":" in path:
        return path.split("?", 1)[0].rsplit("/models/", 1)[1].split(":", 1)[0] or "agentfaults"
    data, _ = parse_body(body) if b'"model"' in body else ({}, "")
    if isinstance(data, dict) and data.get("model"):
        return str(data["model"])
    return "agentfaults"
