"""Every malformed payload is a typed error: (payload class x client x sync/async/stream).

Each case is served by an ``httpx.MockTransport`` (no network) to a client built with both
an ``httpx.Client`` and an ``httpx.AsyncClient``, so one case runs in four modes: a plain
request, an awaited one, a streamed one and an awaited streamed one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelError,
    ModelServerError,
    ModelStreamError,
)
from pytest_agentfaults.runtime.models._client import HTTPModel
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolCall
from pytest_agentfaults.runtime.models.ollama import OllamaModel
from pytest_agentfaults.runtime.models.openai import OpenAIModel

from .conftest import wire_bytes

DEPTH = 100_000
DEEP_LIST = b"[" * DEPTH + b"]" * DEPTH
DEEP_OBJECT = b'{"a":' * DEPTH + b"1" + b"}" * DEPTH
HTML = wire_bytes("common/html_error_page.html")
MiB = 1024 * 1024
# A short message: no 50 MB echo, no 100,000 brackets.
MESSAGE_LIMIT = 1000


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body served in ``size``-byte chunks, counting how many were taken."""

    def __init__(self, body: bytes | Callable[[], Iterator[bytes]], size: int = 4096) -> None:
        self._body = body
        self._size = size
        self.taken = 0

    def _chunks(self) -> Iterator[bytes]:
        if callable(self._body):
            yield from self._body()
            return
        for start in range(0, len(self._body), self._size):
            yield self._body[start : start + self._size]

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks():
            self.taken += 1
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            self.taken += 1
            yield chunk


@dataclass
class Served:
    """What the mock server answers, and what it saw."""

    body: bytes | Callable[[], Iterator[bytes]]
    content_type: str
    status: int = 200
    size: int = 4096
    length: int | None = None
    calls: int = 0
    stream: Chunks | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        self.stream = Chunks(self.body, self.size)
        headers = {"content-type": self.content_type}
        if self.length is not None:
            headers["content-length"] = str(self.length)
        return httpx.Response(self.status, headers=headers, stream=self.stream)


CLIENTS: dict[str, type[HTTPModel]] = {
    "openai": OpenAIModel,
    "anthropic": AnthropicModel,
    "ollama": OllamaModel,
}
BASE = {
    "openai": "http://127.0.0.1:9/v1",
    "anthropic": "http://127.0.0.1:9",
    "ollama": "http://127.0.0.1:9",
}
MODES = ("sync", "async", "stream", "astream")


def build(provider: str, served: Served, **options: object) -> HTTPModel:
    transport = httpx.MockTransport(served)
    cls = CLIENTS[provider]
    return cls(  # type: ignore[call-arg]
        "m",
        base_url=BASE[provider],
        api_key="sk-test-0123456789abcdef",
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        **options,
    )


def call(model: HTTPModel, mode: str) -> None:
    stream = mode in ("stream", "astream")
    request = ModelRequest(messages=[Message.user("hi")], stream=stream)
    if mode.startswith("a"):
        asyncio.run(_acall(model, request))
    else:
        try:
            model.request(request)
        finally:
            model.close()


async def _acall(model: HTTPModel, request: ModelRequest) -> None:
    try:
        await model.arequest(request)
    finally:
        await model.aclose()


def framed(provider: str, payload: bytes) -> bytes:
    """``payload`` as one event of the provider's stream."""
    if provider == "ollama":
        return payload + b"\n"
    if provider == "anthropic":
        return b"event: message_start\ndata: " + payload + b"\n\n"
    return b"data: " + payload + b"\n\n"


STREAM_TYPE = {
    "openai": "text/event-stream",
    "anthropic": "text/event-stream",
    "ollama": "application/x-ndjson",
}
TRUNCATED_STREAM = {
    "openai": "openai/stream_truncated.txt",
    "anthropic": "anthropic/stream_truncated.txt",
    "ollama": "ollama/stream_truncated.ndjson",
}
WHOLE = {
    "openai": "openai/chat_text.json",
    "anthropic": "anthropic/messages_text.json",
    "ollama": "ollama/chat_text.json",
}


def payload(kind: str, provider: str, streamed: bool) -> Served:
    """The response of payload class ``kind``, as a plain or a streamed answer."""
    if kind == "html":
        return Served(HTML, "text/html; charset=utf-8")
    if kind == "empty" and streamed:
        return Served(b"", STREAM_TYPE[provider])
    if kind == "truncated":
        if streamed:
            return Served(wire_bytes(TRUNCATED_STREAM[provider]), STREAM_TYPE[provider], size=37)
        whole = wire_bytes(WHOLE[provider])
        return Served(whole[: len(whole) // 2], "application/json")
    raw = {
        "deep_list": DEEP_LIST,
        "deep_object": DEEP_OBJECT,
        "not_json": b"Hello! I am plain text, not JSON.",
        "invalid_utf8": b'{"message": "caf\xc3 \xff\xfe"}',
        # Python refuses to turn more than 4,300 digits into an int (a plain ValueError)
        "huge_number": b'{"id": ' + b"7" * 5000 + b"}",
        "empty": b"",
    }[kind]
    if streamed:
        return Served(framed(provider, raw), STREAM_TYPE[provider])
    return Served(raw, "application/json")


KINDS = (
    "deep_list",
    "deep_object",
    "not_json",
    "html",
    "truncated",
    "invalid_utf8",
    "huge_number",
    "empty",
)


def expected(kind: str, mode: str) -> type[ModelError]:
    # A stream that stops mid-event, or sends nothing, is a broken stream (documented);
    # everything else is a body the client cannot use.
    if kind in ("truncated", "empty") and mode in ("stream", "astream"):
        return ModelStreamError
    return MalformedResponseError


def check(caught: pytest.ExceptionInfo[ModelError], served: Served) -> None:
    message = str(caught.value)
    assert len(message) < MESSAGE_LIMIT, message[:300]
    assert "sk-test-0123456789abcdef" not in message
    body = getattr(caught.value, "body", "")
    assert len(body) < 2100
    assert served.calls == 1, "a malformed body is never transport-retried"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_malformed_payload_is_a_typed_error(kind, provider, mode):
    served = payload(kind, provider, mode in ("stream", "astream"))
    model = build(provider, served)
    with pytest.raises(ModelError) as caught:
        call(model, mode)
    assert type(caught.value) is expected(kind, mode), caught.value
    check(caught, served)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
def test_deep_json_says_it_is_nested_too_deeply(provider, mode):
    served = payload("deep_list", provider, mode in ("stream", "astream"))
    with pytest.raises(MalformedResponseError, match="nested too deeply") as caught:
        call(build(provider, served), mode)
    assert not isinstance(caught.value, RecursionError)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
def test_an_error_status_with_a_deep_json_body_keeps_its_status(provider, mode):
    served = Served(DEEP_LIST, "application/json", status=500)
    with pytest.raises(ModelServerError) as caught:
        call(build(provider, served, transport_retry=False), mode)
    assert caught.value.status == 500
    assert len(str(caught.value)) < MESSAGE_LIMIT


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])  # they resend objects
def test_deep_tool_call_arguments_in_the_history_are_sent_as_raw_text(provider):
    # A model once answered with arguments nested 100,000 deep: resending them is no crash.
    deep = DEEP_LIST.decode()
    history = [
        Message.user("hi"),
        Message.assistant("", tool_calls=[ToolCall(id="c1", name="f", arguments=deep)]),
        Message.tool_result("ok", tool_call_id="c1", name="f"),
    ]
    sent: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return httpx.Response(200, content=wire_bytes(WHOLE[provider]))

    model = CLIENTS[provider](  # type: ignore[call-arg]
        "m",
        base_url=BASE[provider],
        http_client=httpx.Client(transport=httpx.MockTransport(answer)),
    )
    with model:
        model.request(ModelRequest(messages=history))
    assert len(sent) == 1
