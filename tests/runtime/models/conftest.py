"""Shared helpers for the httpx model-client tests: wire fixtures, clocks, recorded events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_agentfaults.runtime.clock import VirtualClock
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolSpec

WIRE = Path(__file__).resolve().parents[3] / "fixtures" / "wire"
PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
)

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's real keys and hosts must never leak into these tests.
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


def wire_bytes(path: str) -> bytes:
    """The bytes of ``fixtures/wire/<path>``."""
    return (WIRE / path).read_bytes()


@pytest.fixture
def wire():
    return wire_bytes


class Emitted:
    """Stands in for `Recorder.emit`: keeps every (type, fields) a client reports."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, type: str, /, **fields: Any) -> None:
        self.events.append((type, fields))

    def of(self, type: str) -> list[dict[str, Any]]:
        return [fields for kind, fields in self.events if kind == type]


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def emitted() -> Emitted:
    return Emitted()


@pytest.fixture
def make_request(clock: VirtualClock, emitted: Emitted):
    def make(
        messages: list[Message] | None = None,
        *,
        stream: bool = False,
        tools: list[ToolSpec] | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> ModelRequest:
        return ModelRequest(
            messages=messages or [Message.user("What is the weather in Paris?")],
            tools=tools or [],
            stream=stream,
            output_schema=output_schema,
            clock=clock,
            emit=emitted,
            agent="test",
            jitter=lambda: 0.0,  # no jitter drawn: the backoff's exact ceilings
        )

    return make


def json_response(path: str, status: int = 200, **headers: str) -> httpx.Response:
    """A response whose body is a wire fixture, sent as JSON."""
    return httpx.Response(
        status, content=wire_bytes(path), headers={"content-type": "application/json", **headers}
    )


def chunks(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def stream_response(
    body: bytes,
    *,
    size: int = 37,
    content_type: str = "text/event-stream",
    fail_after: int | None = None,
    error: Exception | None = None,
) -> httpx.Response:
    """A streamed response delivering ``body`` in ``size``-byte chunks (sync clients).

    With ``fail_after=n`` the stream raises ``error`` after ``n`` chunks.
    """

    def produce() -> Iterator[bytes]:
        for index, chunk in enumerate(chunks(body, size)):
            if fail_after is not None and index == fail_after:
                raise error or httpx.ReadError("connection reset by peer")
            yield chunk
        if fail_after is not None and fail_after >= len(chunks(body, size)):
            raise error or httpx.ReadError("connection reset by peer")

    return httpx.Response(200, headers={"content-type": content_type}, content=produce())


def astream_response(
    body: bytes,
    *,
    size: int = 37,
    content_type: str = "text/event-stream",
    fail_after: int | None = None,
    error: Exception | None = None,
) -> httpx.Response:
    """`stream_response` for async clients."""

    async def produce() -> AsyncIterator[bytes]:
        for index, chunk in enumerate(chunks(body, size)):
            if fail_after is not None and index == fail_after:
                raise error or httpx.ReadError("connection reset by peer")
            yield chunk

    return httpx.Response(200, headers={"content-type": content_type}, content=produce())


@pytest.fixture(name="json_response")
def _json_response_fixture():
    return json_response


@pytest.fixture(name="stream_response")
def _stream_response_fixture():
    return stream_response


@pytest.fixture(name="astream_response")
def _astream_response_fixture():
    return astream_response


@pytest.fixture
def weather_tool() -> ToolSpec:
    return WEATHER
