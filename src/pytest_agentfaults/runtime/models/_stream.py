"""Cutting a streamed body into lines and server-sent events, in linear time.

``max_response_bytes`` bounds one line (see `_limits`); `StreamDecoder` is what each
provider writes to turn those lines into one `ModelResponse`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from pytest_agentfaults.runtime.models._errors import EXCERPT, one_line
from pytest_agentfaults.runtime.models._limits import TooLargeError
from pytest_agentfaults.runtime.models._wire import WireFormatError

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models.base import ModelResponse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LineBuffer", "SSEDecoder", "SSEEvent", "StreamDecoder"]

_STREAM_KEEP: Final = 2000


class LineBuffer:
    r"""Cuts a byte stream into text lines, each decoded as strict UTF-8.

    Lines end in ``\n`` or ``\r\n`` (what SSE and NDJSON servers send; a lone ``\r`` is
    not a line end here). Splitting bytes before decoding keeps a character that straddles
    two chunks whole. Keeps the first and the last 2,000 bytes it saw, for error messages.

    Linear in the length of a line: only each new chunk is searched for a line end, and
    the pieces of an unfinished line are joined once, when it ends. ``max_line`` bounds
    one line (in bytes, without its line end): past it, `TooLargeError` as it grows.
    """

    __slots__ = ("_held", "_max_line", "_parts", "head", "lines", "size", "tail")

    def __init__(self, max_line: int | None = None) -> None:
        self._parts: list[bytes] = []
        self._held = 0
        self._max_line = max_line
        self.head = b""
        self.tail = b""
        self.size = 0
        self.lines = 0

    def feed(self, chunk: bytes) -> list[str]:
        """The complete lines that ``chunk`` finishes (without their line ends)."""
        self.size += len(chunk)
        if len(self.head) < _STREAM_KEEP:
            self.head += chunk[: _STREAM_KEEP - len(self.head)]
        if len(chunk) >= _STREAM_KEEP:
            self.tail = chunk[-_STREAM_KEEP:]
        else:
            self.tail = (self.tail + chunk)[-_STREAM_KEEP:]
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            self._hold(chunk)
            return []
        if self._parts:
            self._parts.append(pieces[0])
            pieces[0] = b"".join(self._parts)
            self._parts = []
            self._held = 0
        rest = pieces.pop()
        lines = [self._decode(line) for line in pieces]
        self._hold(rest)
        return lines

    def _hold(self, piece: bytes) -> None:
        if not piece:
            return
        self._parts.append(piece)
        self._held += len(piece)
        # a CR held at the end may be the first half of a CRLF: it is not part of the line
        self._check(self._held - (piece[-1:] == b"\r"))

    def _check(self, length: int) -> None:
        if self._max_line is not None and length > self._max_line:
            raise TooLargeError(
                f"line {self.lines + 1} of the stream is longer than {self._max_line} bytes",
                self.head,
            )

    def finish(self) -> str | None:
        """The last line when the stream did not end with a line end, else None."""
        rest = b"".join(self._parts)
        self._parts = []
        self._held = 0
        if not rest.strip():
            return None
        return self._decode(rest)

    def _decode(self, line: bytes) -> str:
        line = line.rstrip(b"\r")
        self._check(len(line))
        self.lines += 1
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = line[exc.start : exc.start + 1]
            raise WireFormatError(
                f"line {self.lines} of the stream is not valid UTF-8 (byte {exc.start} of the "
                f"line is {bad!r})"
            ) from exc

    def excerpt(self) -> str:
        """The end of what was received, decoded leniently, for an error message."""
        return one_line(self.tail.decode("utf-8", "replace")[-EXCERPT:], limit=EXCERPT)

    def transcript(self) -> str:
        """The start of what was received, decoded leniently (an error's ``body``)."""
        return self.head.decode("utf-8", "replace")


@dataclass(slots=True)
class SSEEvent:
    """One server-sent event: its ``event`` name (``"message"`` when unnamed) and data."""

    event: str
    data: str


class SSEDecoder:
    """Server-sent events (the WHATWG framing) from text lines, one event per blank line."""

    __slots__ = ("_data", "_event")

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []

    def feed(self, line: str) -> SSEEvent | None:
        """Take one line; returns the event a blank line completes."""
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None  # a comment, e.g. a keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None

    def flush(self) -> SSEEvent | None:
        """The event being read, if it has data (at a blank line or the end of the stream)."""
        event = None
        if self._data:
            event = SSEEvent(self._event or "message", "\n".join(self._data))
        self._event = ""
        self._data = []
        return event


class StreamDecoder(Protocol):
    """Turns the lines of one streamed answer into a `ModelResponse`."""

    def feed(self, line: str) -> None:
        """Take one line of the stream."""
        ...

    def end_of_input(self) -> None:
        """The body ended: handle any event still being read."""
        ...

    def finish(self) -> ModelResponse:
        """The whole answer; `StreamBrokenError` when the terminal marker never came."""
        ...
