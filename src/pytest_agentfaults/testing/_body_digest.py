"""What an ``http.request`` event records of a request's body: digests the verdict compares.

``body_sha`` tells a request asked again from a new one; ``unstreamed_body_sha`` tells a
cut stream asked for again as one JSON answer; ``streamed`` marks a bad answer served to a
stream. Used by the in-process layer (`_http_fields.attempt_fields`) and the loopback
server (`_serve.py`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["body_fields", "faulted_body_fields", "short_sha", "unstreamed_body_sha"]

#: a JSON body's ``"stream"`` / ``"stream_options"`` member, with the comma that joins it
#: (a request's JSON holds quotes inside strings escaped, so only a key matches)
_MEMBER: Final = r'"stream(?:_options)?"\s*:\s*(?:true|false|\{[^{}]*\})'
_STREAM_MEMBER: Final = re.compile(rf"\s*,\s*{_MEMBER}|(?<=\{{)\s*{_MEMBER}\s*,?")
_ASKS_STREAM: Final = re.compile(rb'"stream"\s*:\s*true')


def unstreamed_body_sha(body: bytes) -> str | None:
    """The ``body_sha`` of this JSON body without its ``stream`` members, if it has any.

    A stream cut mid-way is often asked for again as one JSON answer: the same request less
    ``"stream": true`` (and ``stream_options``), which the verdict counts as requested again.
    """
    if not body or b'"stream' not in body:
        return None
    unstreamed = _STREAM_MEMBER.sub("", body.decode("utf-8", "replace"))
    return short_sha(unstreamed.encode())


def body_fields(body: bytes, fault: str | None) -> dict[str, str]:
    """An ``llm_server`` ``http.request`` event's fields about its ``body``.

    ``fault`` is the label of the fault served; the in-process layer digests in `attempt_fields`.
    """
    if not body:
        return {}
    fields: dict[str, Any] = {"body_sha": short_sha(body)}
    return fields | (faulted_body_fields(body, fault) if fault is not None else {})


def faulted_body_fields(body: bytes, fault: str) -> dict[str, Any]:
    """What the verdict needs to know of the request a ``fault`` (its label) answered.

    A cut stream's ``unstreamed_body_sha``; ``streamed`` for a body a bad answer
    (``malformed_body``, ``not_json``) answered: an SDK raises on one in a stream where it
    hands the other back empty.
    """
    if fault == "truncated_stream":
        unstreamed = unstreamed_body_sha(body)
        return {"unstreamed_body_sha": unstreamed} if unstreamed is not None else {}
    if fault in ("malformed_body", "not_json") and _ASKS_STREAM.search(body):
        return {"streamed": True}
    return {}


def short_sha(data: bytes) -> str:
    """A body's ``body_sha``: the first 12 hex digits of its SHA-1 (an identity, not a seal)."""
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()[:12]
