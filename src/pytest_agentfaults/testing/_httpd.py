"""Reading HTTP/1.1 requests off one connection of the loopback server, within limits.

The server must not be wedged by whatever a broken or hostile client sends, so every read
is bounded in time and in size:

- a connection silent for ``idle_timeout`` seconds is closed; a request must arrive in
  full (head and body) within ``idle_timeout`` of its first byte, so a head dribbled a
  byte at a time cannot hold a thread either;
- the head (request line and headers) is at most ``max_header_bytes``; the body at most
  ``max_body_bytes``, announced by a plain ASCII ``Content-Length`` or sent chunked.

A request outside these bounds is `Refused`: the server answers its 4xx and closes.
The bounds are real seconds whatever a test froze: a freezer (freezegun) that replaces
``time.monotonic`` in the server's thread too would stop them or make them fire at once.
"""

from __future__ import annotations

import re
import socket
import struct
import sys
from dataclasses import dataclass
from typing import Any, Final

from pytest_agentfaults.runtime._loop_facts import real_now

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "RECORDED_ORIGIN",
    "Head",
    "Limits",
    "Reader",
    "Refused",
    "drain",
    "expects_body",
    "read_body",
    "read_head",
    "register_running",
    "running_addresses",
    "serves_port",
    "set_os_timeouts",
    "unregister_running",
]

_MAX_FIELDS: Final = 100
_DIGITS: Final = re.compile(rb"[0-9]{1,19}")
_HEX: Final = re.compile(rb"[0-9a-fA-F]{1,16}")
_END_OF_HEAD: Final = re.compile(rb"\r?\n\r?\n")
_TOKEN: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VERSION: Final = re.compile(r"HTTP/1\.[01]")


#: the origin that recorded URLs show in place of ``http://127.0.0.1:<port>``
RECORDED_ORIGIN: Final = "http://llm_server"

# The loopback servers listening in this process: the http faults let a request to one pass
# untouched (the server serves its faults itself). Process-wide on purpose: a socket is.
_RUNNING: set[tuple[str, int]] = set()


def running_addresses() -> frozenset[tuple[str, int]]:
    """``(host, port)`` of every `LLMServer` running in this process."""
    return frozenset(_RUNNING)


def serves_port(url: Any) -> bool:
    """Whether an in-process `LLMServer` of this process listens on ``url``'s port."""
    port = int(url.port or (443 if url.scheme == "https" else 80))
    return any(port == running for _, running in running_addresses())


def register_running(address: tuple[str, int]) -> None:
    """Note a loopback server listening at ``address`` (see `running_addresses`)."""
    _RUNNING.add(address)


def unregister_running(address: tuple[str, int]) -> None:
    """Forget ``address`` (its server stopped)."""
    _RUNNING.discard(address)


@dataclass(frozen=True, slots=True)
class Limits:
    """How long and how big a request may be (see the module docs)."""

    idle_timeout: float
    max_header_bytes: int
    max_body_bytes: int


class Refused(Exception):
    """The request breaks a limit or the protocol: answer ``status`` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Head:
    """The request line and header fields of one request (names lower-cased)."""

    method: str
    path: str
    version: str
    fields: dict[str, str]


def set_os_timeouts(sock: socket.socket, *, receive: float, send: float | None = None) -> None:
    """Bound blocking reads (and writes) of ``sock`` in the kernel, in seconds.

    Not `socket.settimeout`: that polls before every read and write, and each poll gives
    up the GIL once more, which in one process (a client in a test, the server in a
    thread) costs about half the request rate. A read past the timeout raises
    `BlockingIOError`; `Reader` turns it into `TimeoutError`.
    """
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(receive))
    if send is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(send))


def _timeval(seconds: float) -> bytes:
    seconds = max(seconds, 0.001)  # zero would mean "no timeout"
    if sys.platform == "win32":
        return struct.pack("I", max(1, round(seconds * 1000)))
    whole = int(seconds)
    return struct.pack("ll", whole, int((seconds - whole) * 1_000_000))


class Reader:
    """A buffered reader over a blocking socket; every wait is bounded by the idle timeout."""

    def __init__(self, sock: socket.socket, limits: Limits) -> None:
        self._sock = sock
        self._limits = limits
        self._buffer = bytearray()
        self._deadline: float | None = None
        self._timeout = limits.idle_timeout
        set_os_timeouts(sock, receive=limits.idle_timeout, send=limits.idle_timeout)

    @property
    def started(self) -> bool:
        """Whether a request has begun arriving (its first byte is in)."""
        return self._deadline is not None or bool(self._buffer)

    def stop(self) -> None:
        """The request is read; restore the plain idle timeout (for writing, too)."""
        self._deadline = None
        self._wait(self._limits.idle_timeout)

    def _wait(self, seconds: float) -> None:
        if seconds != self._timeout:
            self._timeout = seconds
            set_os_timeouts(self._sock, receive=seconds)

    def fill(self) -> bool:
        """Receive more bytes; False at the end of the stream. `TimeoutError` when late."""
        wait = self._limits.idle_timeout
        if self._deadline is not None:
            wait = min(wait, self._deadline - real_now())
            if wait <= 0:
                raise TimeoutError("the request did not arrive in time")
        self._wait(wait)
        try:
            chunk = self._sock.recv(65536)
        except BlockingIOError as exc:
            raise TimeoutError("the client sent nothing in time") from exc
        if not chunk:
            return False
        if self._deadline is None:
            # a request began: it has idle_timeout seconds from now to arrive in full
            self._deadline = real_now() + self._limits.idle_timeout
        self._buffer += chunk
        return True

    def head(self) -> bytes | None:
        """The request head, up to its blank line; None when the stream ends first."""
        limit = self._limits.max_header_bytes
        if self._buffer and self._deadline is None:  # pipelined: already here
            self._deadline = real_now() + self._limits.idle_timeout
        scanned = 0
        while True:
            if self._buffer.startswith((b"\r", b"\n")):  # blank lines before a request: skipped
                self._buffer = bytearray(self._buffer.lstrip(b"\r\n"))
                scanned = 0
            end = _END_OF_HEAD.search(self._buffer, max(0, scanned - 3))
            if end is not None and end.end() <= limit + 4:
                head = bytes(self._buffer[: end.start()])
                del self._buffer[: end.end()]
                return head
            scanned = len(self._buffer)
            if scanned > limit:
                if self._buffer.find(b"\n", 0, limit) < 0:
                    raise Refused(414, f"the request line is longer than {limit} bytes")
                raise Refused(431, f"the request head is longer than {limit} bytes")
            if not self.fill():
                return None

    def exactly(self, count: int) -> bytes | None:
        """``count`` bytes; None when the stream ends first."""
        while len(self._buffer) < count:
            if not self.fill():
                return None
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def line(self, limit: int) -> bytes | None:
        """One line, its line break dropped; None when the stream ends first."""
        while (end := self._buffer.find(b"\n", 0, limit + 2)) < 0:
            if len(self._buffer) > limit + 1:
                raise Refused(400, "a chunk line is too long")
            if not self.fill():
                return None
        data = bytes(self._buffer[:end]).rstrip(b"\r")
        del self._buffer[: end + 1]
        return data


def read_head(reader: Reader) -> Head | None:
    """The head of the next request; None when the client closed the connection cleanly.

    Raises `Refused` for a request to answer with a 4xx, `TimeoutError` when the client
    went silent (``reader.started`` tells whether a request had begun), `ConnectionError`
    when the stream ended inside a request.
    """
    head = reader.head()
    if head is None:
        if reader.started:
            raise ConnectionError("the stream ended inside a request head")
        return None
    return _parse_head(head)


def read_body(reader: Reader, fields: dict[str, str], limits: Limits) -> bytes:
    """The body announced by ``fields`` (Content-Length or chunked)."""
    encoding = fields.get("transfer-encoding")
    if encoding is not None:
        if "content-length" in fields:
            raise Refused(400, "both Transfer-Encoding and Content-Length: send one")
        if encoding.lower() != "chunked":
            raise Refused(400, f"Transfer-Encoding {encoding!r} is not supported; use chunked")
        return _chunked(reader, limits)
    length = _content_length(fields.get("content-length"), limits)
    if not length:
        return b""
    body = reader.exactly(length)
    if body is None:
        raise ConnectionError("the stream ended inside a request body")
    return body


def expects_body(fields: dict[str, str], limits: Limits) -> bool:
    """Whether a body follows (checked first, so a bad length is refused before 100)."""
    if "transfer-encoding" in fields:
        return True
    return _content_length(fields.get("content-length"), limits) > 0


def _content_length(value: str | None, limits: Limits) -> int:
    if value is None:
        return 0
    raw = value.strip().encode("latin-1")
    if _DIGITS.fullmatch(raw) is None:
        if re.fullmatch(rb"[0-9]+", raw):
            raise Refused(413, _too_big(limits))
        raise Refused(400, f"Content-Length must be a whole number of bytes, got {value!r}")
    length = int(raw)
    if length > limits.max_body_bytes:
        raise Refused(413, _too_big(limits))
    return length


def _chunked(reader: Reader, limits: Limits) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = reader.line(1024)
        if line is None:
            raise ConnectionError("the stream ended inside a chunked body")
        size_text = line.split(b";", 1)[0].strip()
        if _HEX.fullmatch(size_text) is None:
            if re.fullmatch(rb"[0-9a-fA-F]+", size_text):
                raise Refused(413, _too_big(limits))
            raise Refused(400, f"bad chunk size {size_text[:20]!r}")
        size = int(size_text, 16)
        total += size
        if total > limits.max_body_bytes:
            raise Refused(413, _too_big(limits))
        if size == 0:
            # trailers, up to the blank line
            for _ in range(_MAX_FIELDS):
                trailer = reader.line(limits.max_header_bytes)
                if trailer is None:
                    raise ConnectionError("the stream ended inside a chunked body")
                if not trailer:
                    return b"".join(parts)
            raise Refused(431, "too many trailer fields")
        data = reader.exactly(size)
        if data is None or reader.line(2) is None:
            raise ConnectionError("the stream ended inside a chunk")
        parts.append(data)


def _too_big(limits: Limits) -> str:
    return f"the request body is larger than {limits.max_body_bytes} bytes"


def _parse_head(head: bytes) -> Head:
    text = head.decode("latin-1")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    parts = lines[0].split(" ")
    if len(parts) != 3 or not _TOKEN.fullmatch(parts[0]) or not _VERSION.fullmatch(parts[2]):
        raise Refused(400, "malformed request line; expected 'METHOD /path HTTP/1.1'")
    if len(lines) - 1 > _MAX_FIELDS:
        raise Refused(431, f"more than {_MAX_FIELDS} header fields")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not _TOKEN.fullmatch(name):
            raise Refused(400, f"malformed header line {line[:40]!r}")
        key = name.lower()
        if key in ("content-length", "transfer-encoding") and key in fields:
            raise Refused(400, f"a repeated {name} header")
        fields[key] = value.strip()
    return Head(parts[0], parts[1], parts[2], fields)


def drain(connection: socket.socket, seconds: float) -> None:
    """Stop sending, then read and drop what the client still sends, for ``seconds`` at most.

    Closing a socket with unread bytes resets the connection, and a reset can destroy the
    answer before the client reads it: a 431 for a head the server stopped reading would
    never arrive.
    """
    connection.shutdown(socket.SHUT_WR)
    deadline = real_now() + seconds
    drained = 0
    while drained < _MAX_DRAIN and (left := deadline - real_now()) > 0:
        connection.settimeout(left)
        chunk = connection.recv(65536)
        if not chunk:
            return
        drained += len(chunk)


_MAX_DRAIN: Final = 1 << 20
