"""What every provider format shares: the provider names, content types, JSON and SSE framing."""

from __future__ import annotations

import json
from typing import Any, Final, Literal, get_args

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "JSON_TYPE",
    "NDJSON_TYPE",
    "PROVIDERS",
    "SSE_TYPE",
    "Provider",
    "content_type",
    "encode",
    "from_tool_use_id",
    "sse",
    "tool_use_id",
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


# Anthropic's tool_use ids start ``toolu_``; the kit's are ``call_1``, ``call_2`` ... (the
# same for every provider, so traces compare). The Anthropic wire shows ``call_1`` as
# ``toolu_call_1`` and reads it back as ``call_1`` (the app sends it back in its
# tool_result), so a script sees its own ids; any other id goes through as it is.
_KIT_ID: Final = "call_"
_SHOWN_ID: Final = "toolu_call_"


def tool_use_id(call_id: str) -> str:
    """``call_id`` as Anthropic's wire shows it (``call_1`` -> ``toolu_call_1``)."""
    if call_id.startswith(_KIT_ID) and call_id[len(_KIT_ID) :].isdigit():
        return f"toolu_{call_id}"
    return call_id


def from_tool_use_id(shown: str) -> str:
    """The kit's id for a ``tool_use`` id read back (``toolu_call_1`` -> ``call_1``)."""
    if shown.startswith(_SHOWN_ID) and shown[len(_SHOWN_ID) :].isdigit():
        return shown[len("toolu_") :]
    return shown
