"""`OllamaModel`: a local (or remote) Ollama server's ``/api/chat`` over httpx.

```python
model = af.OllamaModel("llama3.2")                 # http://localhost:11434, or OLLAMA_HOST
agent = af.Agent(name="bot", model="ollama:qwen2.5:7b", tools=[fetch])
```

Wire format (POST ``{base_url}/api/chat``): messages with ``system`` / ``user`` /
``assistant`` (``tool_calls`` whose ``arguments`` are objects) / ``tool`` (``tool_name``)
roles; ``"stream"`` is always sent, because Ollama streams unless told not to. A streamed
answer is newline-delimited JSON objects, the last one with ``"done": true``. Ollama gives
tool calls no ids, so the client numbers them ``ollama_call_<turn>_<n>``: stable across
runs, unique within a conversation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import httpx

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models._client import DEFAULT_TIMEOUT, HTTPModel
from pytest_agentfaults.runtime.models._limits import DEFAULT_MAX_RESPONSE_BYTES
from pytest_agentfaults.runtime.models._retry import TransportRetry
from pytest_agentfaults.runtime.models._settings import check_base_url
from pytest_agentfaults.runtime.models._wire import (
    StreamBrokenError,
    WireFormatError,
    arguments_object,
    arguments_text,
    as_object,
    count,
    get_object,
    get_str,
    loads_event,
    opt_list,
    opt_str,
)
from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
    ToolSpec,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["OllamaModel"]

DEFAULT_BASE_URL: Final = "http://localhost:11434"
_DEFAULT_PORT: Final = 11434
_EMPTY_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {}}


class OllamaModel(HTTPModel):
    """A model served by Ollama, over its native ``/api/chat`` endpoint.

    ``base_url`` is the host root (default ``OLLAMA_HOST``, else
    ``http://localhost:11434``); the client POSTs to ``{base_url}/api/chat``. No key is
    needed; an ``api_key`` (for a server behind an authenticating proxy) is sent as a
    bearer token. ``extra_body`` is merged into every request (``{"options":
    {"temperature": 0}}``, ``{"keep_alive": "5m"}`` ...). The other options are those of
    `OpenAIModel`.

    ```python
    model = af.OllamaModel("llama3.2", extra_body={"options": {"temperature": 0}})
    ```
    """

    provider = "ollama"
    sse = False
    key_env = ""  # Ollama reads no key from the environment

    __slots__ = ()

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        *,
        async_http_client: httpx.AsyncClient | None = None,
        transport_retry: TransportRetry | bool | None = True,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        root = _base_url(base_url)
        sent = {"accept": "application/json", "content-type": "application/json"}
        sent.update(headers or {})
        if api_key:
            sent["authorization"] = f"Bearer {api_key}"
        self._setup(
            model,
            base_url=root,
            url=f"{root}/api/chat",
            headers=sent,
            secrets=(api_key,) if api_key else (),
            http_client=http_client,
            async_http_client=async_http_client,
            transport_retry=transport_retry,
            timeout=timeout,
            extra_body=extra_body,
            max_response_bytes=max_response_bytes,
        )

    # ------------------------------------------------------------------ request

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [_message(m) for m in request.messages],
            "stream": bool(request.stream),
        }
        if request.tools:
            payload["tools"] = [_tool(spec) for spec in request.tools]
        if request.output_schema is not None:
            payload["format"] = request.output_schema
        return payload

    # ------------------------------------------------------------------ response

    def _parse(self, data: Any, request: ModelRequest) -> ModelResponse:
        body = as_object(data, "the response")
        if "error" in body and "message" not in body:
            raise WireFormatError(f"a 2xx response holds an error: {body['error']!r}")
        message = get_object(body, "message", "response")
        text = opt_str(message, "content", "response.message") or ""
        turn = _turn(request)
        calls = [
            _tool_call(item, f"response.message.tool_calls[{i}]", turn, i)
            for i, item in enumerate(opt_list(message, "tool_calls", "response.message"))
        ]
        return ModelResponse(
            message=Message.assistant(text, calls),
            finish_reason=_finish_reason(opt_str(body, "done_reason", "response"), calls),
            usage=TokenUsage(
                input_tokens=count(body, "prompt_eval_count"),
                output_tokens=count(body, "eval_count"),
            ),
            model=body.get("model") if isinstance(body.get("model"), str) else self._model,
        )

    def _decoder(self, request: ModelRequest) -> _LineStream:
        return _LineStream(self._model, _turn(request))


def _base_url(value: str | None) -> str:
    source = "base_url"
    if value is None:
        env = os.environ.get("OLLAMA_HOST")
        if not env:
            return DEFAULT_BASE_URL
        value, source = _host_from_env(env), "OLLAMA_HOST"
    root = check_base_url(value, cls="OllamaModel", source=source, example=DEFAULT_BASE_URL)
    path = httpx.URL(root).path.rstrip("/")
    for suffix, why in (
        ("/api/chat", "the client adds /api/chat itself"),
        ("/api", "the client adds /api/chat itself"),
        ("/v1", "/v1 is Ollama's OpenAI-compatible API (use OpenAIModel for that)"),
    ):
        if path.endswith(suffix):
            fixed = root[: -len(suffix)]
            raise UsageError(
                f"OllamaModel: {source}={value!r} ends in {suffix}; Ollama's base_url is the "
                f"host root ({why}), so use {fixed!r}"
            )
    return root


def _host_from_env(value: str) -> str:
    """``OLLAMA_HOST`` as Ollama reads it: ``host``, ``host:port`` or a URL."""
    text = value.strip()
    if "://" not in text:
        text = f"http://{text}"
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL:
        return value  # check_base_url says what is wrong with it
    if url.port is None and url.scheme == "http" and url.host:
        text = str(url.copy_with(port=_DEFAULT_PORT))
    return text.rstrip("/")


def _turn(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


def _finish_reason(raw: str | None, calls: list[ToolCall]) -> str | None:
    # Ollama says "stop" when it asks for tools; the other clients say "tool_calls".
    if calls and raw in (None, "stop"):
        return "tool_calls"
    return raw


def _message(message: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        item["tool_calls"] = [
            {"function": {"name": call.name, "arguments": arguments_object(call.arguments)}}
            for call in message.tool_calls
        ]
    elif message.role == "tool" and message.name:
        item["tool_name"] = message.name
    return item


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters or _EMPTY_SCHEMA}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}


def _tool_call(item: Any, where: str, turn: int, index: int) -> ToolCall:
    call = as_object(item, where)
    function = get_object(call, "function", where)
    given = call.get("id")
    return ToolCall(
        id=given if isinstance(given, str) and given else f"ollama_call_{turn}_{index}",
        name=get_str(function, "name", f"{where}.function"),
        arguments=arguments_text(function.get("arguments"), f"{where}.function.arguments"),
    )


class _LineStream:
    """Assembles Ollama's NDJSON chunks into one `ModelResponse`."""

    __slots__ = ("_calls", "_done", "_final", "_lines", "_model", "_text", "_turn")

    def __init__(self, model: str, turn: int) -> None:
        self._model = model
        self._turn = turn
        self._text: list[str] = []
        self._calls: list[ToolCall] = []
        self._final: dict[str, Any] = {}
        self._lines = 0
        self._done = False

    def feed(self, line: str) -> None:
        if not line.strip() or self._done:
            return
        self._lines += 1
        where = f"stream line {self._lines}"
        chunk = as_object(loads_event(line, where), where)
        if "error" in chunk:
            raise StreamBrokenError(f"the server reported an error mid-stream: {chunk['error']}")
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        message = chunk.get("message")
        if isinstance(message, dict):
            piece = opt_str(message, "content", f"{where}.message")
            if piece:
                self._text.append(piece)
            for item in opt_list(message, "tool_calls", f"{where}.message"):
                index = len(self._calls)
                self._calls.append(
                    _tool_call(item, f"{where}.message.tool_calls[]", self._turn, index)
                )
        if chunk.get("done") is True:
            self._done = True
            self._final = chunk

    def end_of_input(self) -> None:
        return None

    def finish(self) -> ModelResponse:
        if not self._done:
            raise StreamBrokenError(
                f'truncated stream: it ended after {self._lines} lines without "done": true'
            )
        raw = self._final.get("done_reason")
        return ModelResponse(
            message=Message.assistant("".join(self._text), list(self._calls)),
            finish_reason=_finish_reason(raw if isinstance(raw, str) else None, self._calls),
            usage=TokenUsage(
                input_tokens=count(self._final, "prompt_eval_count"),
                output_tokens=count(self._final, "eval_count"),
            ),
            model=self._model,
        )
