"""What every provider format shares: the provider names, content types, JSON and SSE framing."""

from __future__ import annotations

import json
from typing import Any, Final, Literal, get_args

__all__ = [
    "JSON_TYPE",
    "NDJSON_TYPE",
    "PROVIDERS",
    "SSE_TYPE",
    "Provider",
    "content_type",
    "encode",
    "sse",
]

Provider = Literal["openai", "openai-responses", "anthropic", "ollama", "gemini"]
PROVIDERS: Final[tuple[str, ...]] = get_args(Provider)

JSON_TYPE: Final = "application/json"
SSE_TYPE: Final = "text/event-stream; charset=utf-8"
NDJSON_TYPE: Final = "application/x-ndjson"

#: compact JSON text, as the providers send it (and the same bytes on every run)
encode: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: ``data`` (JSON unless a str) with an optional ``event`` name."""
    text = data if isinstance(data, str) else encode(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def content_type(provider: Provider | None, stream: bool) -> str:
    """The content type ``provider`` answers with: JSON, or its stream's (SSE, NDJSON)."""
    if not stream:
        return JSON_TYPE
    return NDJSON_TYPE if provider == "ollama" else SSE_TYPE
