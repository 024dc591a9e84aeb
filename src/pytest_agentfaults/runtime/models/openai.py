"""`OpenAIModel`: the chat-completions API of OpenAI and of every server that speaks it.

```python
model = af.OpenAIModel("gpt-4o-mini")                         # key from OPENAI_API_KEY
model = af.OpenAIModel("llama3.2", base_url="http://localhost:8000/v1")   # vLLM, llama.cpp ...
agent = af.Agent(name="bot", model="openai:gpt-4o-mini", tools=[fetch])
```

Wire format (POST ``{base_url}/chat/completions``): ``messages`` with ``system`` / ``user``
/ ``assistant`` (``tool_calls``) / ``tool`` (``tool_call_id``) roles, ``tools`` as
``{"type": "function", "function": {...}}``; a streamed answer is server-sent events of
``chat.completion.chunk`` objects ending with ``data: [DONE]``, tool-call arguments arriving
in fragments keyed by ``index``. A refusal (``message.refusal`` with no content) is
reported as its text with ``finish_reason="refusal"``, which the agent treats as blocked.
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
from pytest_agentfaults.runtime.models._stream import SSEDecoder
from pytest_agentfaults.runtime.models._wire import (
    StreamBrokenError,
    WireFormatError,
    arguments_text,
    as_object,
    count,
    get_list,
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
__all__ = ["OpenAIModel"]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
_OFFICIAL_HOST: Final = "api.openai.com"
_EMPTY_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {}}


class OpenAIModel(HTTPModel):
    """A model behind an OpenAI-compatible chat-completions endpoint, over httpx.

    ``base_url`` ends in ``/v1`` as in the official SDK (default ``OPENAI_BASE_URL``, else
    ``https://api.openai.com/v1``); requests go to ``{base_url}/chat/completions``. The key
    comes from ``api_key=`` or ``OPENAI_API_KEY``; it is required for api.openai.com and
    optional for any other server. ``http_client`` may be an ``httpx.Client`` or
    ``httpx.AsyncClient`` (pass the other flavour as ``async_http_client``); without one,
    clients are created on first use and closed by `close` / `aclose` or ``with``.
    ``transport_retry`` tunes or disables (``False``) the transport retry (see
    `TransportRetry`); ``extra_body`` is merged into every request body (``temperature``,
    ``max_completion_tokens`` ...). ``max_response_bytes`` (32 MiB by default, None for no
    limit) bounds a whole body and one line of a stream: past it the read stops and a
    `MalformedResponseError` says so.

    ```python
    model = af.OpenAIModel("gpt-4o-mini", extra_body={"temperature": 0})
    response = model.request(af.ModelRequest(messages=[af.Message.user("hi")]))
    ```
    """

    provider = "openai"
    sse = True
    key_env = "OPENAI_API_KEY"

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
        key = api_key_for(
            "OpenAIModel", api_key, env="OPENAI_API_KEY", root=root, official_host=_OFFICIAL_HOST
        )
        sent = {"accept": "application/json", "content-type": "application/json"}
        sent.update(headers or {})
        if key:
            sent["authorization"] = f"Bearer {key}"
        self._setup(
            model,
            base_url=root,
            url=f"{root}/chat/completions",
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
        payload: dict[str, Any] = {
            "model": self._model,
            "messages": [_message(m) for m in request.messages],
        }
        if request.tools:
            payload["tools"] = [_tool(spec) for spec in request.tools]
        if request.output_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": request.output_schema},
            }
        if request.stream:
            payload["stream"] = True
            payload["stream_options"] = {"include_usage": True}
        return payload

    # ------------------------------------------------------------------ response

    def _parse(self, data: Any, request: ModelRequest) -> ModelResponse:
        body = as_object(data, "the response")
        if "choices" not in body and "error" in body:
            raise WireFormatError(f"a 2xx response holds an error: {body['error']!r}")
        choices = get_list(body, "choices", "response")
        if not choices:
            raise WireFormatError("response.choices is empty")
        choice = as_object(choices[0], "response.choices[0]")
        message = get_object(choice, "message", "response.choices[0]")
        where = "response.choices[0].message"
        text = opt_str(message, "content", where)
        finish = opt_str(choice, "finish_reason", "response.choices[0]")
        refusal = opt_str(message, "refusal", where)
        if not text and refusal:
            text, finish = refusal, "refusal"
        calls = [
            _tool_call(item, i) for i, item in enumerate(opt_list(message, "tool_calls", where))
        ]
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else None
        return ModelResponse(
            message=Message.assistant(text or "", calls),
            finish_reason=finish,
            usage=TokenUsage(
                input_tokens=count(usage, "prompt_tokens"),
                output_tokens=count(usage, "completion_tokens"),
            ),
            model=body.get("model") if isinstance(body.get("model"), str) else self._model,
        )

    def _decoder(self, request: ModelRequest) -> _ChunkStream:
        return _ChunkStream(self._model)


def _base_url(value: str | None) -> str:
    source = "base_url"
    if value is None:
        env = os.environ.get("OPENAI_BASE_URL")
        if env:
            value, source = env, "OPENAI_BASE_URL"
        else:
            return DEFAULT_BASE_URL
    root = check_base_url(value, cls="OpenAIModel", source=source, example=DEFAULT_BASE_URL)
    path = httpx.URL(root).path.rstrip("/")
    if path.endswith("/chat/completions"):
        fixed = root[: -len("/chat/completions")]
        raise UsageError(
            f"OpenAIModel: {source}={value!r} includes the endpoint; the client adds "
            f"/chat/completions itself, so use {fixed!r}"
        )
    if not path:
        raise UsageError(
            f"OpenAIModel: {source}={value!r} is a bare host; an OpenAI-style base_url ends in "
            f"/v1, so use {root + '/v1'!r}"
        )
    return root


def _message(message: Message) -> dict[str, Any]:
    role = message.role
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": role, "content": message.content}


def _tool(spec: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {"name": spec.name, "parameters": spec.parameters or _EMPTY_SCHEMA}
    if spec.description:
        function["description"] = spec.description
    return {"type": "function", "function": function}


def _tool_call(item: Any, index: int) -> ToolCall:
    where = f"response.choices[0].message.tool_calls[{index}]"
    function = get_object(as_object(item, where), "function", where)
    return ToolCall(
        id=get_str(item, "id", where),
        name=get_str(function, "name", where + ".function"),
        arguments=arguments_text(function.get("arguments"), where + ".function.arguments"),
    )


class _PartialCall:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


class _ChunkStream:
    """Assembles ``chat.completion.chunk`` events into one `ModelResponse`."""

    __slots__ = (
        "_calls",
        "_done",
        "_events",
        "_finish",
        "_model",
        "_refusal",
        "_sse",
        "_text",
        "_usage",
    )

    def __init__(self, model: str) -> None:
        self._sse = SSEDecoder()
        self._model = model
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._events = 0
        self._done = False

    def feed(self, line: str) -> None:
        event = self._sse.feed(line)
        if event is not None:
            self._on_data(event.data)

    def end_of_input(self) -> None:
        event = self._sse.flush()
        if event is not None:
            self._on_data(event.data)

    def _on_data(self, data: str) -> None:
        if self._done:
            return
        self._events += 1
        if data.strip() == "[DONE]":
            self._done = True
            return
        chunk = as_object(loads_event(data, f"stream event {self._events}"), "a stream event")
        if "error" in chunk:
            error = chunk["error"]
            said = error.get("message") if isinstance(error, dict) else error
            raise StreamBrokenError(f"the server reported an error mid-stream: {said}")
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self._model = model
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        where = f"stream event {self._events}"
        for choice in opt_list(chunk, "choices", where):
            self._on_choice(as_object(choice, f"{where}.choices[]"), where)

    def _on_choice(self, choice: dict[str, Any], where: str) -> None:
        if choice.get("index", 0) != 0:
            return  # only the first choice is used (n=1)
        delta = choice.get("delta")
        if isinstance(delta, dict):
            piece = opt_str(delta, "content", f"{where}.delta")
            if piece:
                self._text.append(piece)
            refusal = delta.get("refusal")
            if isinstance(refusal, str):
                self._refusal.append(refusal)
            for position, item in enumerate(opt_list(delta, "tool_calls", f"{where}.delta")):
                self._on_tool_delta(as_object(item, f"{where}.delta.tool_calls[]"), position)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish

    def _on_tool_delta(self, item: dict[str, Any], position: int) -> None:
        index = item.get("index", position)
        if not isinstance(index, int):
            raise WireFormatError(f"a tool-call fragment has index {index!r}, expected a number")
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _PartialCall()
        if isinstance(item.get("id"), str) and item["id"]:
            call.id = item["id"]
        function = item.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            fragment = function.get("arguments")
            if isinstance(fragment, str):
                call.arguments.append(fragment)

    def finish(self) -> ModelResponse:
        if not self._done:
            raise StreamBrokenError(
                f"truncated stream: it ended after {self._events} events without data: [DONE]"
            )
        calls = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            if not partial.name:
                raise WireFormatError(f"streamed tool call {index} never got a function name")
            calls.append(
                ToolCall(
                    id=partial.id or f"call_{index}",
                    name=partial.name,
                    arguments="".join(partial.arguments) or "{}",
                )
            )
        text, finish = "".join(self._text), self._finish
        if not text and self._refusal:
            text, finish = "".join(self._refusal), "refusal"
        return ModelResponse(
            message=Message.assistant(text, calls),
            finish_reason=finish,
            usage=TokenUsage(
                input_tokens=count(self._usage, "prompt_tokens"),
                output_tokens=count(self._usage, "completion_tokens"),
            ),
            model=self._model,
        )
