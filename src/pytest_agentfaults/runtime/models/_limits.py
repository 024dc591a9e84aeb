"""How much of a response the model clients read: ``max_response_bytes``.

A whole body (a plain answer, or an error page) and one line of a stream are each held
in memory, so each is bounded: past the limit the read stops at once (a declared
``Content-Length`` is refused before the first byte) and the client raises a
`MalformedResponseError` that names the limit and how to raise it. The body of an error
status is only needed for its message, so at most `ERROR_BODY_KEEP` bytes of it are read
and the rest is dropped, keeping the status error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pytest_agentfaults.errors import UsageError

if TYPE_CHECKING:
    import httpx

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ERROR_BODY_KEEP",
    "TooLargeError",
    "aread_body",
    "check_max_response_bytes",
    "read_body",
    "size_text",
]

#: 32 MiB: far above any real answer (a 100,000-token reply is a few hundred KB of JSON).
DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024
#: How much of an error status's body is read: enough for any provider's error JSON.
ERROR_BODY_KEEP: Final = 64 * 1024
_HEAD: Final = 2000


class TooLargeError(Exception):
    """A body or one stream line passed the limit; the client makes it a typed error.

    ``what`` says which and how big; ``head`` is the start of what was read, for ``body``.
    """

    def __init__(self, what: str, head: bytes = b"") -> None:
        super().__init__(what)
        self.what = what
        self.head = head


def check_max_response_bytes(cls: str, value: object) -> int | None:
    """``value`` when it is a positive int or None (no limit), else a `UsageError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(
            f"{cls}(max_response_bytes={value!r}): use an int number of bytes >= 1, "
            f"e.g. {DEFAULT_MAX_RESPONSE_BYTES} (32 MiB, the default), or None for no limit"
        )
    return value


def size_text(size: int) -> str:
    """``33554432 (32 MiB)``: a byte count as written, and readable."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size} ({size / scale:.3g} {unit})"
    return f"{size} bytes"


def _declared(response: httpx.Response, limit: int | None) -> None:
    if limit is None:
        return
    value = response.headers.get("content-length", "")
    if value.isdigit() and int(value) > limit:
        raise TooLargeError(f"the response body has Content-Length {size_text(int(value))}")


def _bounded(limit: int | None, keep_prefix: bool) -> int | None:
    if not keep_prefix:
        return limit
    return ERROR_BODY_KEEP if limit is None else min(limit, ERROR_BODY_KEEP)


class _Collector:
    """The chunks read so far; refuses (or, with ``keep_prefix``, cuts) past ``limit``."""

    __slots__ = ("keep_prefix", "limit", "parts", "size")

    def __init__(self, limit: int | None, keep_prefix: bool) -> None:
        self.limit = _bounded(limit, keep_prefix)
        self.keep_prefix = keep_prefix
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; False when the read should stop here."""
        self.size += len(chunk)
        if self.limit is None or self.size <= self.limit:
            self.parts.append(chunk)
            return True
        if self.keep_prefix:
            self.parts.append(chunk[: len(chunk) - (self.size - self.limit)])
            return False
        head = b""
        for part in (*self.parts, chunk):
            head += part[: _HEAD - len(head)]
            if len(head) >= _HEAD:
                break
        raise TooLargeError(
            f"the response body passed {size_text(self.size)} while it was read", head
        )

    def body(self) -> bytes:
        return b"".join(self.parts)


def read_body(response: httpx.Response, limit: int | None, *, keep_prefix: bool = False) -> bytes:
    """The body of a streamed ``response``, read chunk by chunk under ``limit`` bytes.

    Past the limit: `TooLargeError`, or with ``keep_prefix`` the first bytes only.
    """
    if not keep_prefix:
        _declared(response, limit)
    collector = _Collector(limit, keep_prefix)
    for chunk in response.iter_bytes():
        if not collector.add(chunk):
            break
    return collector.body()


async def aread_body(
    response: httpx.Response, limit: int | None, *, keep_prefix: bool = False
) -> bytes:
    """`read_body` for an async response."""
    if not keep_prefix:
        _declared(response, limit)
    collector = _Collector(limit, keep_prefix)
    async for chunk in response.aiter_bytes():
        if not collector.add(chunk):
            break
    return collector.body()
