"""`LLMServer`: a real HTTP server on 127.0.0.1 that speaks three LLM wire formats.

```python
with LLMServer() as server:
    server.script([call_tool("fetch", url="https://x.test"), say("done")])
    client = openai.OpenAI(base_url=server.base_url("openai"), api_key="x")
    client.chat.completions.create(model="gpt-4o-mini", messages=[...])
    assert len(server.requests) == 1
```

It answers ``POST /v1/chat/completions`` (OpenAI, SSE when ``"stream": true``), ``POST
/v1/messages`` (Anthropic, SSE events) and ``POST /api/chat`` (Ollama, NDJSON unless
``"stream": false``) from a script of `ScriptedModel` steps, rendered in each provider's
wire format. Failure steps, and the http faults of the `FaultPlan` it is bound to, are
served over the socket:

| fault (or script step)                   | what the client gets                               |
|------------------------------------------|----------------------------------------------------|
| a status (``fail.http(503)``)            | that status and a provider-shaped error body; a    |
|                                          | ``retry_after`` adds ``Retry-After`` and           |
|                                          | ``retry-after-ms``                                 |
| ``"timeout"`` (``fail.timeout()``)       | no answer: held until the client gives up          |
| ``"connect_error"`` (``fail.connection()``) | the connection dropped before the headers       |
| ``"reset"``                              | a TCP reset before the headers                     |
| ``"read_error"``                         | the headers, half the body, then the drop          |
| ``"truncated_stream"``                   | a 200 stream cut mid-way: no terminal event, no    |
| (``malformed.truncated()``)              | last chunk, so the client's read fails             |
| ``"malformed_body"``                     | a 200 whose body (or first stream event) is not    |
| (``malformed.not_json()``)               | JSON                                               |

Why the standard library (`http.server.ThreadingHTTPServer`) and not uvicorn/starlette or
aiohttp: the faults need direct control of the socket (close before or after the headers,
a reset, a chunked stream that stops without its last chunk), which ASGI servers hide
behind the protocol layer; the stdlib handler owns the socket, keeps connections alive
with HTTP/1.1, needs no extra dependency, and serves well over 1,000 requests per second
on one keep-alive connection (see ``benchmarks/bench_http.py``).

Time: nothing here sleeps. A ``"timeout"`` waits (on the socket, not a sleep) until the
client closes the connection, at most ``timeout_hold`` seconds (1 s by default); a
client that never gives up within that is a test-setup mistake reported by `check`. So
give clients a small timeout in timeout scenarios (``timeout=0.05``): the client's own
backoff stays virtual with ``virtual_clock.patch_sleep()``.

Security: the server binds 127.0.0.1 only, on an ephemeral port; `requests` and the
trace events keep no credential header (``Authorization``, ``x-api-key`` ... are
redacted), and no key in a URL's query. No client can wedge it: idle and unfinished
requests time out, heads and bodies have size limits, and a request breaking one gets a
4xx and a closed connection (see `LLMServer` and ``_httpd``).

Same seed, same bytes: the port changes from run to run, so what the server records (the
fired faults' names, the trace events' ``url`` and ``detail``) names it by the stable
origin ``http://llm_server`` (`RECORDED_ORIGIN`): ``POST http://llm_server/v1/messages``.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.server
import itertools
import json
import math
import select
import socket
import struct
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelHTTPError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    UsageError,
)
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import RealClock
from pytest_agentfaults.runtime.events import ErrorRecord, Trace
from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from pytest_agentfaults.runtime.redact import redact_headers, redact_text
from pytest_agentfaults.testing._httpd import (
    Limits,
    Reader,
    Refused,
    drain,
    expects_body,
    read_body,
    read_head,
)
from pytest_agentfaults.testing.scripted import (
    OnExhausted,
    ScriptedModel,
    ScriptExhaustedError,
    Step,
)

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import Fault, FaultPlan

__all__ = [
    "PROVIDERS",
    "LLMServer",
    "Provider",
    "ReceivedRequest",
    "error_body",
    "malformed_body",
    "model_request",
    "provider_for",
    "render_response",
    "retry_after_headers",
    "running_addresses",
    "truncated_body",
    "wants_stream",
]

Provider = Literal["openai", "anthropic", "ollama"]
PROVIDERS: Final[tuple[str, ...]] = get_args(Provider)

HOST: Final = "127.0.0.1"
#: the origin that recorded URLs show in place of ``http://127.0.0.1:<port>``
RECORDED_ORIGIN: Final = "http://llm_server"
_CREATED: Final = 1734460799  # a fixed timestamp: the same bytes on every run
_CREATED_AT: Final = "2024-12-17T18:39:58.001234Z"
_FINGERPRINT: Final = "fp_agentfaults"
_PARTIAL_TEXT: Final = "The answer was cut off in the middle of a sent"
_HTML: Final = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream; charset=utf-8"
_NDJSON: Final = "application/x-ndjson"
_ENCODE: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# ============================================================================ wire formats


def provider_for(path: str) -> Provider | None:
    """The provider whose endpoint ``path`` is (``/v1/chat/completions`` is ``"openai"``)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/api/chat"):
        return "ollama"
    return None


def wants_stream(provider: Provider | None, body: bytes) -> bool:
    """Whether the request body asks for a streamed answer (Ollama streams by default)."""
    if b"stream" not in body:
        return provider == "ollama" and body.lstrip().startswith(b"{")
    data, problem = _parse_body(body)
    if problem or not isinstance(data, dict):
        return False
    default = provider == "ollama"
    return bool(data.get("stream", default))


def _parse_body(body: bytes) -> tuple[Any, str]:
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


def retry_after_headers(seconds: float | None) -> list[tuple[str, str]]:
    """``Retry-After`` (whole seconds, rounded up) and ``retry-after-ms`` for ``seconds``."""
    if seconds is None:
        return []
    whole = int(seconds) if float(seconds).is_integer() else int(seconds) + 1
    return [("retry-after", str(whole)), ("retry-after-ms", str(round(seconds * 1000)))]


_ANTHROPIC_ERRORS: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else "Error"


def error_body(provider: Provider | None, status: int, message: str = "") -> bytes:
    """A provider-shaped JSON error body for ``status``."""
    message = message or f"agentfaults: injected HTTP {status} {_phrase(status)}"
    payload: dict[str, Any]
    if provider == "anthropic":
        kind = _ANTHROPIC_ERRORS.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        payload = {"type": "error", "error": {"type": kind, "message": message}}
    elif provider == "ollama":
        payload = {"error": message}
    else:
        if status == 429:
            kind, code = "requests", "rate_limit_exceeded"
        elif status == 401:
            kind, code = "invalid_request_error", "invalid_api_key"
        elif status >= 500:
            kind, code = "server_error", None
        else:
            kind, code = "invalid_request_error", None
        payload = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return _ENCODE(payload).encode()


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


def _sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else _ENCODE(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


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
) -> list[bytes]:
    """``response`` as ``provider`` sends it: one JSON body, or the stream's events in order.

    A streamed answer comes back as one item per event (SSE) or line (NDJSON), so a
    caller can cut it mid-way.
    """
    if provider == "openai":
        return (
            _openai_stream(response, model, response_id, include_usage)
            if stream
            else [_ENCODE(_openai_body(response, model, response_id)).encode()]
        )
    if provider == "anthropic":
        return (
            _anthropic_stream(response, model, response_id)
            if stream
            else [_ENCODE(_anthropic_body(response, model, response_id)).encode()]
        )
    return (
        _ollama_stream(response, model)
        if stream
        else [_ENCODE(_ollama_body(response, model)).encode()]
    )


def _usage(response: ModelResponse) -> tuple[int, int]:
    return response.usage.input_tokens, response.usage.output_tokens


def _openai_body(response: ModelResponse, model: str, response_id: str) -> dict[str, Any]:
    calls = response.tool_calls
    message: dict[str, Any] = {
        "role": "assistant",
        "content": response.text if response.text or not calls else None,
        "refusal": None,
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
    prompt, completion = _usage(response)
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
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
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
        "system_fingerprint": _FINGERPRINT,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _sse({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
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
        prompt, completion = _usage(response)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        events.append(_sse({**head, "choices": [], "usage": usage}))
    events.append(_sse("[DONE]"))
    return events


def _anthropic_body(response: ModelResponse, model: str, response_id: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if response.text:
        content.append({"type": "text", "text": response.text})
    content.extend(
        {
            "type": "tool_use",
            "id": call.id,
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
        "usage": {"input_tokens": prompt, "output_tokens": completion},
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
        "usage": {"input_tokens": prompt, "output_tokens": 1},
    }
    events = [_sse({"type": "message_start", "message": start}, "message_start")]
    index = 0

    def block(content_block: dict[str, Any], deltas: Iterable[dict[str, Any]]) -> None:
        events.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": content_block},
                "content_block_start",
            )
        )
        for delta in deltas:
            events.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        events.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))

    if response.text:
        pieces = _halves(response.text)
        block({"type": "text", "text": ""}, ({"type": "text_delta", "text": p} for p in pieces))
        index += 1
    for call in response.tool_calls:
        use = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        pieces = _halves(call.arguments)
        block(use, ({"type": "input_json_delta", "partial_json": p} for p in pieces))
        index += 1
    finish = response.finish_reason or "stop"
    delta = {"stop_reason": _ANTHROPIC_STOP.get(finish, finish), "stop_sequence": None}
    events.append(
        _sse(
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": completion}},
            "message_delta",
        )
    )
    events.append(_sse({"type": "message_stop"}, "message_stop"))
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
        return _ENCODE({"model": model, "created_at": _CREATED_AT, **payload}).encode() + b"\n"

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


def _content_type(provider: Provider | None, stream: bool) -> str:
    if not stream:
        return _JSON
    return _NDJSON if provider == "ollama" else _SSE


def truncated_body(provider: Provider | None, *, stream: bool, model: str) -> tuple[str, bytes]:
    """What a client receives of an answer cut mid-way: its content type and the bytes.

    Streamed, the first events of a partial answer and never the terminal one; not
    streamed, the first half of the JSON body.
    """
    partial = ModelResponse(message=Message.assistant(_PARTIAL_TEXT), finish_reason="stop")
    if provider is None:
        events = (
            [_sse({"partial": True}), _sse({"partial": True})]
            if stream
            else [b'{"partial": true, "more": "' + b"x" * 40 + b'"}']
        )
    else:
        events = render_response(provider, partial, model=model, stream=stream)
    if stream:
        sent = b"".join(events[: max(1, len(events) // 2)])
    else:
        sent = events[0][: len(events[0]) // 2]
    return _content_type(provider, stream), sent


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
        return _NDJSON, flat.encode() + b"\n"
    tail = _sse("[DONE]") if provider == "openai" else b""
    return _SSE, _sse(flat) + tail


# ---------------------------------------------------------------------------- requests in


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
                    id=str(block.get("id") or ""),
                    name=str(block.get("name") or ""),
                    arguments=_arguments_text(block.get("input", {})),
                )
            )
        elif kind == "tool_result":
            results.append(
                Message(
                    role="tool",
                    content=_text(block.get("content")),
                    tool_call_id=str(block.get("tool_use_id") or ""),
                )
            )
    messages = list(results)
    if text or calls or not results:
        messages.append(Message(role=role, content="".join(text), tool_calls=calls))
    return messages


# ============================================================================ the server


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request the server received (faulted ones included), credentials redacted."""

    method: str
    path: str
    url: str
    headers: dict[str, str]
    body: bytes
    provider: str | None
    stream: bool
    #: what the server served instead of a scripted answer (``"503"``, ``"timeout"`` ...)
    fault: str | None = None
    #: the size of the body as received; ``body`` keeps its first ``max_stored_body`` bytes
    body_size: int = -1

    def __post_init__(self) -> None:
        if self.body_size < 0:
            object.__setattr__(self, "body_size", len(self.body))

    @property
    def truncated(self) -> bool:
        """Whether ``body`` is only the start of the body received."""
        return self.body_size > len(self.body)

    def json(self) -> Any:
        """The body parsed as JSON."""
        if self.truncated:
            raise UsageError(
                f"the body of {self.method} {self.path} was {self.body_size} bytes and "
                f"llm_server kept the first {len(self.body)}; to parse it, raise "
                "LLMServer(max_stored_body=...)"
            )
        return json.loads(self.body)

    @property
    def retry_count(self) -> int | None:
        """The ``x-stainless-retry-count`` header the official SDKs send, as an int."""
        value = self.headers.get("x-stainless-retry-count")
        return int(value) if value is not None and value.isdigit() else None


@dataclass(slots=True)
class _Reply:
    """What to do on the socket: answer, stream (maybe cut), drop, reset or hold."""

    kind: Literal["answer", "cut", "drop", "reset", "hold"]
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)  # the body, or the stream's events
    stream: bool = False
    retry_after: float | None = None
    fault: str | None = None  # the fault kind (or the failure step) behind this reply


@dataclass(slots=True)
class _Binding:
    """What one test sees: its script, plan, requests and problems.

    A request holds on to the binding it arrived under, so a late reply (a held timeout)
    lands in its own test, never in the next one.
    """

    model: ScriptedModel
    plan: FaultPlan | None = None
    recorder: Recorder | None = None
    requests: list[ReceivedRequest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _unbound() -> _Binding:
    # made in an empty context: an unbound server's events stay on its own trace, never in
    # the trace of whichever test happened to be collecting when it was reset
    recorder = contextvars.Context().run(Recorder, agent="llm_server", clock=RealClock())
    return _Binding(ScriptedModel([], name="llm_server"), recorder=recorder)


class LLMServer:
    """A loopback LLM server: OpenAI, Anthropic and Ollama wire formats, faults included.

    The ``llm_server`` fixture is one of these, started once per session and reset for
    every test; outside pytest use it as a context manager. ``timeout_hold`` bounds how
    long a ``"timeout"`` holds a response (real seconds; see the module docs).

    Limits, so that no client can wedge it: a connection silent for ``idle_timeout``
    seconds is closed (a request must also arrive in full within ``idle_timeout`` of its
    first byte); a request head is at most ``max_header_bytes`` (431 past it, 414 for the
    request line alone); a body at most ``max_body_bytes`` (413). A request breaking one
    gets a 4xx and the connection is closed, and it is not recorded. Of each recorded
    request, ``requests`` keeps the first ``max_stored_body`` bytes of the body
    (`ReceivedRequest.body_size` is the whole size).
    """

    def __init__(
        self,
        *,
        timeout_hold: float = 1.0,
        idle_timeout: float = 5.0,
        max_header_bytes: int = 64 * 1024,
        max_body_bytes: int = 64 * 1024 * 1024,
        max_stored_body: int = 16 * 1024,
    ) -> None:
        for name, seconds in (("timeout_hold", timeout_hold), ("idle_timeout", idle_timeout)):
            if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
                raise UsageError(f"LLMServer({name}={seconds!r}): give seconds > 0")
        sizes = (
            ("max_header_bytes", max_header_bytes, 1),
            ("max_body_bytes", max_body_bytes, 0),
            ("max_stored_body", max_stored_body, 0),
        )
        for name, size, least in sizes:
            if isinstance(size, bool) or not isinstance(size, int) or size < least:
                raise UsageError(f"LLMServer({name}={size!r}): give an int >= {least} (bytes)")
        self.timeout_hold = float(timeout_hold)
        self.max_stored_body = max_stored_body
        self._limits = Limits(float(idle_timeout), max_header_bytes, max_body_bytes)
        self._binding = _unbound()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # ------------------------------------------------------------------ life cycle

    def start(self) -> LLMServer:
        """Listen on 127.0.0.1 (an ephemeral port) and serve from a background thread."""
        if self._server is not None:
            return self
        server = _HTTPServer((HOST, 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"agentfaults-llm-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        _RUNNING.add((HOST, self.port))
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        server, self._server = self._server, None
        if server is None:
            return
        _RUNNING.discard((HOST, server.server_address[1]))
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise UsageError("the LLMServer is not started; call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self.port}"

    def base_url(self, provider: str) -> str:
        """The base URL to give ``provider``'s client (the OpenAI one ends in ``/v1``)."""
        if provider not in PROVIDERS:
            raise UsageError(
                f"base_url({provider!r}): unknown provider; use one of {', '.join(PROVIDERS)}"
            )
        return f"{self.url}/v1" if provider == "openai" else self.url

    def env(self) -> dict[str, str]:
        """Environment variables that point the official SDKs and our clients here.

        ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``OLLAMA_HOST`` and dummy keys:
        ``for k, v in llm_server.env().items(): monkeypatch.setenv(k, v)``.
        """
        return {
            "OPENAI_BASE_URL": self.base_url("openai"),
            "OPENAI_API_KEY": "agentfaults-loopback-key",
            "ANTHROPIC_BASE_URL": self.base_url("anthropic"),
            "ANTHROPIC_API_KEY": "agentfaults-loopback-key",
            "OLLAMA_HOST": self.base_url("ollama"),
        }

    # ------------------------------------------------------------------ per test

    def script(
        self,
        steps: Sequence[Step | str],
        *,
        on_exhausted: OnExhausted = "raise",
        strict: bool = True,
    ) -> ScriptedModel:
        """Answer the next requests with ``steps`` (`say`, `call_tool`, `fail.http` ...).

        Returns the `ScriptedModel` behind the script; its ``requests`` are the model's view
        of what was asked. A request with no step left gets HTTP 400 (never a retryable
        answer) and `check` fails the test. Faults of the bound plan use up no step.
        ``strict=True`` (the default): steps never requested fail `check` too, naming the
        first; ``strict=False`` allows them.
        """
        # built unchecked, then marked: the server checks its own script in `check`, so the
        # model must not also register with the plan active now
        model = ScriptedModel(
            list(steps), name="llm_server", on_exhausted=on_exhausted, strict=False
        )
        if not isinstance(strict, bool):
            raise UsageError(f"llm_server.script(strict={strict!r}): give True or False")
        model.strict = strict
        with self._lock:
            self._binding.model = model
        return model

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received since the last reset, faulted ones included."""
        return self._binding.requests

    @property
    def problems(self) -> list[str]:
        """Test-setup mistakes seen while serving (see `check`)."""
        return self._binding.problems

    @property
    def trace(self) -> Trace:
        """Events of requests served while no plan was bound (outside pytest)."""
        recorder = self._binding.recorder
        return recorder.trace if recorder is not None else Trace()

    def reset(self) -> None:
        """Forget the script, the requests, the problems and the plan binding."""
        with self._lock:
            self._binding = _unbound()

    def bind(self, plan: FaultPlan | None) -> None:
        """Start afresh, serving ``plan``'s http faults and recording where it records.

        Events go to ``plan.http_recorder`` (the test's trace, under the plugin); a plan
        without one gets one on the default clock.
        """
        binding = _unbound()
        if plan is not None:
            if plan.http_recorder is None:
                from pytest_agentfaults.runtime.clock import default_clock  # noqa: PLC0415

                plan.http_recorder = Recorder(agent="http", clock=default_clock())
            binding.plan, binding.recorder = plan, plan.http_recorder
            if self._server is not None:
                plan.shown_origins[self.url] = RECORDED_ORIGIN
        with self._lock:
            self._binding = binding

    def check(self) -> None:
        """Raise `AssertionError` for a test-setup mistake seen while serving.

        A request with no script step left, a ``"timeout"`` the client never gave up on, or
        (``script(..., strict=True)``, the default) a script step never requested.
        """
        __tracebackhide__ = True
        problems = list(self.problems)
        model = self._binding.model
        left = model.leftover() if model.strict else None
        if left is not None:
            problems.append(
                f"the script has {left}. Remove the steps the test does not need, or "
                "pass llm_server.script(..., strict=False) to allow leftovers."
            )
        if problems:
            raise AssertionError(redact_text("llm_server: " + "\n".join(problems)))

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"<LLMServer {where} requests={len(self.requests)}>"

    # ------------------------------------------------------------------ serving

    def _serve(self, handler: _Handler, method: str, path: str, body: bytes) -> None:
        binding = self._binding
        recorded = len(binding.model.requests)
        provider = provider_for(path)
        stream = provider is not None and wants_stream(provider, body)
        url = f"{self.url}{path}"
        shown = f"{RECORDED_ORIGIN}{path}"  # no port: the same bytes on every run
        plan = binding.plan
        hit = plan.next_http_fault(method, url, any_host=True) if plan is not None else None
        if plan is not None and hit is not None:
            fault, occurrence = hit
            reply = self._fault_reply(fault, provider, stream, body)
            plan.record(fault, f"{method} {shown}", reply.fault or "", occurrence)
            self._emit(
                binding,
                "http.fault",
                method=method,
                url=shown,
                status=int(fault.value) if fault.action == "status" else reply.fault,
                retry_after=fault.retry_after,
                occurrence=occurrence,
                detail=f"{method} {shown}: {fault.describe()}",
            )
        elif provider is None:
            message = f"agentfaults llm_server: no endpoint {method} {path}"
            reply = _answer(404, error_body(None, 404, message))
        elif method != "POST":
            reply = _answer(405, error_body(provider, 405, f"use POST for {path}"))
        else:
            reply = self._script_reply(binding, provider, stream, body)
        received = ReceivedRequest(
            method=method,
            path=path,
            url=redact_text(url),
            headers=redact_headers(handler.fields),
            body=body[: self.max_stored_body],
            provider=provider,
            stream=stream,
            fault=reply.fault,
            body_size=len(body),
        )
        with self._lock:
            binding.requests.append(received)
            if len(body) > self.max_stored_body:  # the script's copy is bounded too
                _cut_texts(binding.model.requests[recorded:], self.max_stored_body)
        self._record(binding, received, reply, body)
        # the event is recorded before the reply goes out: the client may look at once
        if _send(handler, reply, self.timeout_hold) == "held":
            binding.problems.append(
                f"a 'timeout' on {method} {path} held the response {self.timeout_hold:g}s "
                "and the client never gave up; give the client a timeout below that "
                "(e.g. timeout=0.05), or raise LLMServer(timeout_hold=...)"
            )

    def _record(
        self, binding: _Binding, received: ReceivedRequest, reply: _Reply, body: bytes
    ) -> None:
        method, url = received.method, f"{RECORDED_ORIGIN}{received.path}"
        fields: dict[str, Any] = {"method": method, "url": url}
        if reply.kind in ("answer", "cut"):
            fields["status"] = reply.status
        if reply.kind != "answer":
            fields["error"] = _error_record(reply)
        if received.retry_count is not None:
            fields["retry_count"] = received.retry_count
        if reply.retry_after is not None:
            fields["retry_after"] = reply.retry_after
        if reply.fault is not None:
            fields["fault"] = reply.fault
        if body:
            fields["body_sha"] = _digest(body)
        fields["detail"] = f"{method} {url}" + (
            f" (retry {received.retry_count})" if received.retry_count else ""
        )
        self._emit(binding, "http.request", **fields)

    def _crashed(self, exc: Exception) -> None:
        import traceback  # noqa: PLC0415 - only on a crash

        detail = "".join(traceback.format_exception(exc)).rstrip()
        self._binding.problems.append(f"the server crashed while answering:\n{detail}")

    def _emit(self, binding: _Binding, type: str, **fields: Any) -> None:
        if binding.recorder is not None:  # the recorder redacts what it records
            with self._lock:
                binding.recorder.emit(type, **fields)

    def _script_reply(
        self, binding: _Binding, provider: Provider, stream: bool, body: bytes
    ) -> _Reply:
        data, problem = _parse_body(body)
        if problem:
            return _answer(400, error_body(provider, 400, problem))
        model = str(data.get("model") or "agentfaults") if isinstance(data, dict) else "x"
        request = model_request(provider, data, stream=stream)
        with self._lock:
            try:
                response = binding.model.request(request)
            except ScriptExhaustedError as exc:
                binding.problems.append(str(exc))
                return _answer(400, error_body(provider, 400, f"agentfaults: {exc}"))
            except Exception as exc:  # a failure step: serve it over the wire
                return _failure_reply(exc, provider, stream, model)
        include_usage = False
        if isinstance(data, dict) and isinstance(data.get("stream_options"), dict):
            include_usage = bool(data["stream_options"].get("include_usage"))
        events = render_response(
            provider,
            response,
            model=model,
            stream=stream,
            response_id=f"agentfaults{next(self._ids):06d}",
            include_usage=include_usage,
        )
        headers = [("content-type", _content_type(provider, stream))]
        return _Reply("answer", 200, headers, events, stream=stream)

    def _fault_reply(
        self, fault: Fault, provider: Provider | None, stream: bool, body: bytes
    ) -> _Reply:
        if fault.action is None:
            fault.check()
        if fault.action == "status":
            status = int(fault.value)
            headers = [("content-type", _JSON), *retry_after_headers(fault.retry_after)]
            reply = _answer(status, error_body(provider, status), headers)
            reply.retry_after = fault.retry_after
            reply.fault = str(status)
            return reply
        model = "agentfaults"
        data, _ = _parse_body(body)
        if isinstance(data, dict):
            model = str(data.get("model") or model)
        return _kind_reply(str(fault.action), provider, stream, model)


def _cut_texts(requests: list[ModelRequest], cap: int) -> None:
    """Cut each message text and tool-call arguments of ``requests`` to ``cap`` characters."""

    def cut(text: str) -> str:
        return text if len(text) <= cap else f"{text[:cap]}...[{len(text) - cap} more characters]"

    for request in requests:
        request.messages[:] = [
            message.model_copy(
                update={
                    "content": cut(message.content),
                    "tool_calls": [
                        call.model_copy(update={"arguments": cut(call.arguments)})
                        for call in message.tool_calls
                    ],
                }
            )
            for message in request.messages
        ]


def _answer(status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> _Reply:
    return _Reply("answer", status, headers or [("content-type", _JSON)], [body])


def _kind_reply(
    kind: str, provider: Provider | None, stream: bool, model: str, text: str | None = None
) -> _Reply:
    if kind == "timeout":
        return _Reply("hold", fault=kind)
    if kind == "connect_error":
        return _Reply("drop", fault=kind)
    if kind == "reset":
        return _Reply("reset", fault=kind)
    if kind == "malformed_body":
        content_type, data = malformed_body(provider, stream=stream, text=text)
        return _Reply("answer", 200, [("content-type", content_type)], [data], stream, fault=kind)
    # read_error: half a body, then the connection drops; truncated_stream: a cut stream
    cut_stream = stream if kind == "truncated_stream" else False
    content_type, data = truncated_body(provider, stream=cut_stream, model=model)
    return _Reply("cut", 200, [("content-type", content_type)], [data], cut_stream, fault=kind)


def _failure_reply(exc: Exception, provider: Provider, stream: bool, model: str) -> _Reply:
    """A failure step's error, as the wire shows it."""
    if isinstance(exc, ModelHTTPError):
        retry_after = getattr(exc, "retry_after", None)
        headers = [("content-type", _JSON), *retry_after_headers(retry_after)]
        reply = _answer(exc.status, error_body(provider, exc.status, exc.body or ""), headers)
        reply.retry_after = retry_after
        reply.fault = str(exc.status)
        return reply
    if isinstance(exc, ModelTimeoutError | TimeoutError):
        return _kind_reply("timeout", provider, stream, model)
    if isinstance(exc, ModelTransportError | ConnectionError):
        return _kind_reply("connect_error", provider, stream, model)
    if isinstance(exc, ModelStreamError):
        return _kind_reply("truncated_stream", provider, True, model)
    if isinstance(exc, MalformedResponseError):
        return _kind_reply("malformed_body", provider, stream, model, text=exc.body or None)
    message = f"agentfaults: scripted failure {type(exc).__name__}: {exc}"
    reply = _answer(500, error_body(provider, 500, redact_text(message)))
    reply.fault = "500"
    return reply


_REASONS: Final = {
    "hold": ("ReadTimeout", "the server held the response until the client gave up"),
    "drop": ("RemoteProtocolError", "the server dropped the connection before the headers"),
    "reset": ("ConnectionResetError", "the server reset the connection"),
    "cut": ("RemoteProtocolError", "the server cut the response off mid-way"),
}


def _error_record(reply: _Reply) -> ErrorRecord:
    name, message = _REASONS.get(reply.kind, ("Error", "the exchange failed"))
    if reply.kind == "cut" and reply.fault == "read_error":
        name = "ReadError"
    return ErrorRecord(type=name, message=message, kind="runtime", retryable=True)


def _digest(body: bytes) -> str:
    import hashlib  # noqa: PLC0415 - only when bodies are recorded

    return hashlib.sha1(body, usedforsecurity=False).hexdigest()[:12]


# ---------------------------------------------------------------------------- the socket

_RUNNING: set[tuple[str, int]] = set()


def running_addresses() -> frozenset[tuple[str, int]]:
    """``(host, port)`` of every `LLMServer` running in this process."""
    return frozenset(_RUNNING)


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: LLMServer


class _Handler(http.server.BaseHTTPRequestHandler):
    """One connection: requests in a keep-alive loop, parsed without the email package."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer
    fields: dict[str, str]
    reader: Reader
    served: int  # requests served on this connection

    def setup(self) -> None:
        super().setup()
        owner = self.server.owner
        self.reader = Reader(self.connection, owner._limits)
        self.served = 0
        with owner._lock:
            owner._connections.add(self.connection)

    def finish(self) -> None:
        owner = self.server.owner
        with owner._lock:
            owner._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: a test's output is not the place for an access log."""

    def handle_one_request(self) -> None:
        """Read one request within the server's limits (see `_httpd`) and serve it."""
        try:
            head = read_head(self.reader)
            if head is None:
                self.close_connection = True
                return
            self.command, self.path, self.request_version = head.method, head.path, head.version
            self.fields = headers = head.fields
            connection = headers.get("connection", "").lower()
            self.close_connection = connection == "close" or (
                self.request_version == "HTTP/1.0" and connection != "keep-alive"
            )
            limits = self.server.owner._limits
            if headers.get("expect", "").lower() == "100-continue" and expects_body(
                headers, limits
            ):
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = read_body(self.reader, headers, limits)
            self.reader.stop()
            self.served += 1
            self.server.owner._serve(self, self.command, self.path, body)
        except Refused as refused:
            self._refuse(refused.status, refused.message)
        except TimeoutError:
            if self.reader.started:
                self._refuse(408, "the request did not arrive in full within the idle timeout")
            elif not self.served:
                self._refuse(408, "the connection was idle; no request arrived")
            else:
                # a keep-alive connection idle between requests closes quietly: an answer
                # nobody asked for could be read as the answer to a pooled client's next one
                self.close_connection = True
        except (ConnectionError, ValueError):
            self.close_connection = True
        except Exception as exc:  # a bug of ours: fail the test, never look like a flaky network
            self.close_connection = True
            self.server.owner._crashed(exc)
            with contextlib.suppress(OSError):
                body = error_body(None, 500, f"agentfaults llm_server crashed: {exc!r}")
                self.wfile.write(_head(500, [], f"content-length: {len(body)}") + body)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` and close gently (the unread rest of the request is drained)."""
        self.close_connection = True
        body = error_body(None, status, f"agentfaults llm_server: {message}")
        headers = [("content-type", _JSON), ("connection", "close")]
        with contextlib.suppress(OSError):
            self.reader.stop()
            self.wfile.write(_head(status, headers, f"content-length: {len(body)}") + body)
            drain(self.connection, self.server.owner._limits.idle_timeout)


def _head(status: int, headers: Iterable[tuple[str, str]], extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status} {_phrase(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _send(handler: _Handler, reply: _Reply, hold: float) -> str | None:
    """Do ``reply`` on the handler's socket; ``"held"`` when a hold ran out."""
    write = handler.wfile.write
    try:
        if reply.kind == "answer":
            if reply.stream:
                payload = b"".join(_chunk(c) for c in reply.chunks if c) + b"0\r\n\r\n"
                write(_head(reply.status, reply.headers, "transfer-encoding: chunked") + payload)
            else:
                body = b"".join(reply.chunks)
                write(_head(reply.status, reply.headers, f"content-length: {len(body)}") + body)
            return None
        handler.close_connection = True
        if reply.kind == "cut":
            body = b"".join(reply.chunks)
            if reply.stream:
                write(_head(200, reply.headers, "transfer-encoding: chunked") + _chunk(body))
            else:
                declared = f"content-length: {len(body) * 2 + 1}"
                write(_head(200, reply.headers, declared) + body)
        elif reply.kind == "reset":
            # SO_LINGER 0: closing sends RST, not FIN
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            handler.connection.close()
        elif reply.kind == "hold":
            return _hold(handler.connection, hold)
    except OSError:  # the client went away first: nothing left to tell it
        handler.close_connection = True
    return None


def _hold(connection: socket.socket, hold: float) -> str | None:
    """Wait until the client closes the connection (it timed out), at most ``hold`` s."""
    readable, _, _ = select.select([connection], [], [], hold)
    if not readable:
        return "held"
    try:
        data = connection.recv(1, socket.MSG_PEEK)
    except OSError:
        return None
    return None if not data else "held"
