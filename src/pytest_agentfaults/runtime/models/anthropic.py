"""`AnthropicModel`: Anthropic's Messages API over httpx.

```python
model = af.AnthropicModel("claude-3-5-haiku-latest")        # key from ANTHROPIC_API_KEY
agent = af.Agent(name="bot", model="anthropic:claude-3-5-haiku-latest", tools=[fetch])
```

Wire format (POST ``{base_url}/v1/messages``, headers ``x-api-key`` and
``anthropic-version``): the system prompt is the top-level ``system``; an assistant turn is
a list of ``text`` and ``tool_use`` blocks; tool results go back as ``tool_result`` blocks
in a ``user`` message (consecutive results share one). ``stop_reason`` is normalised:
``end_turn`` / ``stop_sequence`` -> ``"stop"``, ``tool_use`` -> ``"tool_calls"``,
``max_tokens`` -> ``"length"``, ``refusal`` -> ``"content_filter"``. A streamed answer is
``message_start``, ``content_block_*`` and ``message_delta`` events, ended by
``message_stop``.
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
from pytest_agentfaults.runtime.models._settings import api_key_for, check_base_url
from pytest_agentfaults.runtime.models._stream import SSEDecoder, SSEEvent
from pytest_agentfaults.runtime.models._wire import (
    StreamBrokenError,
    WireFormatError,
    arguments_object,
    arguments_text,
    as_object,
    count,
    get_list,
    get_str,
    loads_event,
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
__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
API_VERSION: Final = "2023-06-01"
_OFFICIAL_HOST: Final = "api.anthropic.com"
_EMPTY_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {}}
_STOP_REASONS: Final = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_INPUT_KEYS: Final = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
# Extended thinking: blocks the API requires back, unchanged, in the assistant turn that
# precedes tool results.
_THINKING: Final = ("thinking", "redacted_thinking")


class AnthropicModel(HTTPModel):
    """A Claude model behind Anthropic's Messages API, over httpx.

    ``base_url`` is the host root as in the official SDK (default ``ANTHROPIC_BASE_URL``,
    else ``https://api.anthropic.com``); the client POSTs to ``{base_url}/v1/messages``.
    The key comes from ``api_key=`` or ``ANTHROPIC_API_KEY``; it is required for
    api.anthropic.com and optional for any other server. ``max_tokens`` is sent with every
    request (the API requires it). The other options are those of `OpenAIModel`.

    ```python
    model = af.AnthropicModel("claude-3-5-haiku-latest", max_tokens=1024)
    ```

    Extended thinking is switched on through ``extra_body={"thinking": {...}}``. The
    ``thinking`` and ``redacted_thinking`` blocks of an answer are kept, verbatim, in
    ``Message.thinking`` and sent back first in that assistant turn, as the API requires
    when tool results follow.
    """

    provider = "anthropic"
    sse = True
    key_env = "ANTHROPIC_API_KEY"

    __slots__ = ("_max_tokens",)

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        *,
        async_http_client: httpx.AsyncClient | None = None,
        max_tokens: int = 4096,
        transport_retry: TransportRetry | bool | None = True,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UsageError(f"AnthropicModel: max_tokens={max_tokens!r}; use an int >= 1")
        root = _base_url(base_url)
        key = api_key_for(
            "AnthropicModel",
            api_key,
            env="ANTHROPIC_API_KEY",
            root=root,
            official_host=_OFFICIAL_HOST,
        )
        sent = {
            "accept": "application/json",
            "content-type": "application/json",
            "anthropic-version": API_VERSION,
        }
        sent.update(headers or {})
        if key:
            sent["x-api-key"] = key
        self._max_tokens = max_tokens
        self._setup(
            model,
            base_url=root,
            url=f"{root}/v1/messages",
            headers=sent,
            secrets=(key,) if key else (),
            http_client=http_client,
            async_http_client=async_http_client,
            transport_retry=transport_retry,
            timeout=timeout,
            extra_body=extra_body,
            max_response_bytes=max_response_bytes,
        )

    # ------------------------------------------------------------------ request

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = _conversation(request.messages)
        payload: dict[str, Any] = {
            "model": self._model,
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        if system:
            payload["system"] = system
        if request.tools:
            payload["tools"] = [_tool(spec) for spec in request.tools]
        if request.stream:
            payload["stream"] = True
        return payload

    # ------------------------------------------------------------------ response

    def _parse(self, data: Any, request: ModelRequest) -> ModelResponse:
        body = as_object(data, "the response")
        if body.get("type") == "error":
            raise WireFormatError(f"a 2xx response holds an error: {body.get('error')!r}")
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[dict[str, Any]] = []
        for i, item in enumerate(get_list(body, "content", "response")):
            where = f"response.content[{i}]"
            block = as_object(item, where)
            kind = get_str(block, "type", where)
            if kind == "text":
                text.append(get_str(block, "text", where))
            elif kind == "tool_use":
                calls.append(_tool_use(block, where))
            elif kind in _THINKING:
                thinking.append(block)  # sent back verbatim with the next turn
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else None
        return ModelResponse(
            message=Message.assistant("".join(text), calls, thinking=thinking),
            finish_reason=_finish_reason(opt_str(body, "stop_reason", "response")),
            usage=TokenUsage(
                input_tokens=count(usage, *_INPUT_KEYS),
                output_tokens=count(usage, "output_tokens"),
            ),
            model=body.get("model") if isinstance(body.get("model"), str) else self._model,
        )

    def _decoder(self, request: ModelRequest) -> _EventStream:
        return _EventStream(self._model)


def _base_url(value: str | None) -> str:
    source = "base_url"
    if value is None:
        env = os.environ.get("ANTHROPIC_BASE_URL")
        if env:
            value, source = env, "ANTHROPIC_BASE_URL"
        else:
            return DEFAULT_BASE_URL
    root = check_base_url(value, cls="AnthropicModel", source=source, example=DEFAULT_BASE_URL)
    for suffix in ("/v1/messages", "/v1"):
        if httpx.URL(root).path.rstrip("/").endswith(suffix):
            fixed = root[: -len(suffix)]
            raise UsageError(
                f"AnthropicModel: {source}={value!r} includes {suffix}; Anthropic's base_url "
                f"is the host root (the client adds /v1/messages), so use {fixed!r}"
            )
    return root


def _finish_reason(raw: str | None) -> str | None:
    if raw is None:
        return None
    return _STOP_REASONS.get(raw, raw)


def _conversation(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The top-level system prompt and the Messages API turns for a message history."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the user turn gathering tool results
    for message in messages:
        role = message.role
        if role == "system":
            if message.content:
                system.append(message.content)
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.content,
            }
            if results is None:
                results = [block]
                turns.append({"role": "user", "content": results})
            else:
                results.append(block)
            continue
        results = None
        if role == "assistant":
            blocks: list[dict[str, Any]] = list(message.thinking)  # thinking comes first
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": arguments_object(call.arguments),
                }
                for call in message.tool_calls
            )
            if blocks:  # the API rejects an empty assistant turn
                turns.append({"role": "assistant", "content": blocks})
        else:
            turns.append({"role": "user", "content": message.content})
    return "\n\n".join(system), turns


def _tool(spec: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name, "input_schema": spec.parameters or _EMPTY_SCHEMA}
    if spec.description:
        tool["description"] = spec.description
    return tool


def _tool_use(block: dict[str, Any], where: str) -> ToolCall:
    arguments = block.get("input", {})
    if not isinstance(arguments, dict):
        raise WireFormatError(f"{where}.input is not an object: {arguments!r}")
    return ToolCall(
        id=get_str(block, "id", where),
        name=get_str(block, "name", where),
        arguments=arguments_text(arguments, f"{where}.input"),
    )


class _Block:
    __slots__ = ("id", "initial", "json", "kind", "name", "signature", "text")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.json: list[str] = []
        self.id = ""
        self.name = ""
        self.signature: list[str] = []
        self.initial: dict[str, Any] = {}


class _EventStream:
    """Assembles Messages API stream events into one `ModelResponse`."""

    __slots__ = ("_blocks", "_done", "_events", "_input", "_model", "_output", "_sse", "_stop")

    def __init__(self, model: str) -> None:
        self._sse = SSEDecoder()
        self._model = model
        self._blocks: dict[int, _Block] = {}
        self._stop: str | None = None
        self._input = 0
        self._output = 0
        self._events = 0
        self._done = False

    def feed(self, line: str) -> None:
        event = self._sse.feed(line)
        if event is not None:
            self._on_event(event)

    def end_of_input(self) -> None:
        event = self._sse.flush()
        if event is not None:
            self._on_event(event)

    def _on_event(self, event: SSEEvent) -> None:
        if self._done:
            return
        self._events += 1
        where = f"stream event {self._events} ({event.event})"
        data = as_object(loads_event(event.data, where), where)
        kind = data.get("type", event.event)
        if kind == "message_start":
            message = as_object(data.get("message"), f"{where}.message")
            if isinstance(message.get("model"), str):
                self._model = message["model"]
            usage = message.get("usage")
            if isinstance(usage, dict):
                self._input = count(usage, *_INPUT_KEYS)
                self._output = count(usage, "output_tokens")
        elif kind == "content_block_start":
            self._on_block_start(data, where)
        elif kind == "content_block_delta":
            self._on_delta(data, where)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self._stop = delta["stop_reason"]
            usage = data.get("usage")
            if isinstance(usage, dict) and "output_tokens" in usage:
                self._output = count(usage, "output_tokens")  # cumulative
        elif kind == "message_stop":
            self._done = True
        elif kind == "error":
            error = data.get("error")
            said = (
                f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else error
            )
            raise StreamBrokenError(f"the server reported an error mid-stream: {said}")
        # ping, content_block_stop and event types added later need nothing.

    def _on_block_start(self, data: dict[str, Any], where: str) -> None:
        index = data.get("index")
        if not isinstance(index, int):
            raise WireFormatError(f"{where}.index is {index!r}, expected a number")
        start = as_object(data.get("content_block"), f"{where}.content_block")
        block = self._blocks[index] = _Block(str(start.get("type")))
        if block.kind == "text" and isinstance(start.get("text"), str):
            block.text.append(start["text"])
        elif block.kind == "thinking":
            block.text.append(str(start.get("thinking") or ""))
            block.signature.append(str(start.get("signature") or ""))
        elif block.kind == "redacted_thinking":
            block.initial = start  # complete at its start: the encrypted data
        elif block.kind == "tool_use":
            block.id = get_str(start, "id", f"{where}.content_block")
            block.name = get_str(start, "name", f"{where}.content_block")
            initial = start.get("input")
            block.initial = initial if isinstance(initial, dict) else {}

    def _on_delta(self, data: dict[str, Any], where: str) -> None:
        index = data.get("index")
        block = self._blocks.get(index) if isinstance(index, int) else None
        if block is None:
            raise WireFormatError(f"{where} continues content block {index!r}, never started")
        delta = as_object(data.get("delta"), f"{where}.delta")
        kind = delta.get("type")
        if kind == "text_delta":
            block.text.append(get_str(delta, "text", f"{where}.delta"))
        elif kind == "input_json_delta":
            block.json.append(get_str(delta, "partial_json", f"{where}.delta"))
        elif kind == "thinking_delta":
            block.text.append(get_str(delta, "thinking", f"{where}.delta"))
        elif kind == "signature_delta":
            block.signature.append(get_str(delta, "signature", f"{where}.delta"))

    def finish(self) -> ModelResponse:
        if not self._done:
            raise StreamBrokenError(
                f"truncated stream: it ended after {self._events} events without message_stop"
            )
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[dict[str, Any]] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "text":
                text.extend(block.text)
            elif block.kind == "thinking":
                thinking.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block.text),
                        "signature": "".join(block.signature),
                    }
                )
            elif block.kind == "redacted_thinking":
                thinking.append(block.initial)
            elif block.kind == "tool_use":
                raw = "".join(block.json)
                calls.append(
                    ToolCall(
                        id=block.id,
                        name=block.name,
                        # The raw text, even if it is not JSON: the agent judges arguments.
                        arguments=raw if raw.strip() else arguments_text(block.initial, "input"),
                    )
                )
        return ModelResponse(
            message=Message.assistant("".join(text), calls, thinking=thinking),
            finish_reason=_finish_reason(self._stop),
            usage=TokenUsage(input_tokens=self._input, output_tokens=self._output),
            model=self._model,
        )
