"""The HTTP edge of the model clients: the one place where httpx meets the error taxonomy.

What the three clients (`OpenAIModel`, `AnthropicModel`, `OllamaModel`) share lives here:

* `translate_exception` turns an httpx (or socket) exception into the taxonomy, most specific
  match first, and `status_error` does the same for an HTTP status;
* `parse_retry_after` reads ``retry-after-ms`` and ``Retry-After`` (seconds or an HTTP date);
* `TransportRetry` decides whether, and how long, to wait before the next attempt;
* `HTTPModel` runs the attempts (sync and async, plain and streamed), waits through the
  agent's clock, and reports every retry as a ``transport.retry`` event;
* `LineBuffer` and `SSEDecoder` cut a byte stream into lines and server-sent events
  (in linear time; ``max_response_bytes`` bounds a body and one line, see `_limits`);
* `decode_json` and `loads_event` are where JSON is parsed: anything unusable, JSON nested
  too deeply included, is a `WireFormatError`, raised as `MalformedResponseError`.

The translation table, first match wins:

| exception                                   | taxonomy                 | transport-retried |
|---------------------------------------------|--------------------------|-------------------|
| ``HTTPStatusError``                         | by status (below)        | by status         |
| ``TimeoutException`` (connect/read/write/pool) | ``ModelTimeoutError``  | never             |
| ``UnsupportedProtocol``, ``InvalidURL``     | ``UsageError``           | never             |
| ``LocalProtocolError``                      | ``ModelTransportError``  | no (we broke it)  |
| ``RemoteProtocolError``, ``ProxyError``     | ``ModelTransportError``  | yes               |
| ``NetworkError`` (connect/read/write/close) | ``ModelTransportError``  | yes               |
| other ``TransportError``                    | ``ModelTransportError``  | yes               |
| ``DecodingError``, ``CookieConflict``       | ``MalformedResponseError`` | never           |
| ``TooManyRedirects``, other ``HTTPError``   | ``ModelTransportError``  | no                |
| ``StreamError`` (closed/consumed/not read)  | ``ModelStreamError``     | never             |
| builtin ``TimeoutError``                    | ``ModelTimeoutError``    | never             |
| builtin ``ConnectionError``                 | ``ModelTransportError``  | yes               |

Statuses: 401/403 ``ModelAuthError``, 429 ``RateLimitError`` (with ``retry_after``),
5xx and 529 ``ModelServerError``, anything else (3xx, 4xx, 408) ``ModelHTTPError``.
Once a streamed answer has delivered its first chunk, any failure is a ``ModelStreamError``
(with the httpx exception as ``__cause__``) and the stream is never re-issued.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, Self

import httpx

from pytest_agentfaults.errors import (
    AgentFaultsError,
    MalformedResponseError,
    ModelAuthError,
    ModelError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.models._limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    TooLargeError,
    aread_body,
    check_max_response_bytes,
    read_body,
    size_text,
)
from pytest_agentfaults.runtime.redact import REDACTED, redact_headers, redact_text

if TYPE_CHECKING:
    from types import TracebackType

    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse

__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "DEFAULT_TIMEOUT",
    "EXCEPTION_TABLE",
    "TRANSLATABLE",
    "HTTPModel",
    "LineBuffer",
    "SSEDecoder",
    "SSEEvent",
    "StreamBrokenError",
    "StreamDecoder",
    "TransportRetry",
    "WireFormatError",
    "check_base_url",
    "parse_retry_after",
    "status_error",
    "translate_exception",
]

DEFAULT_RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504, 529})
# LLM answers can take minutes; connecting should not.
DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)
_EXCERPT: Final = 200
_STREAM_KEEP: Final = 2000
# How much of an unusable 2xx body is decoded and scrubbed for the error (never all 32 MiB).
_BODY_KEEP: Final = 8192
_BODY_SHOWN: Final = 2000  # what MalformedResponseError.body keeps
_DEEP: Final = "JSON nested too deeply to parse"
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- translation

EXCEPTION_TABLE: Final[
    tuple[tuple[type[BaseException], type[AgentFaultsError], bool, str], ...]
] = (
    # (exception, taxonomy class, transport-retried, what happened). First match wins.
    (httpx.TimeoutException, ModelTimeoutError, False, "the request timed out"),
    (httpx.UnsupportedProtocol, UsageError, False, "the URL scheme is not http or https"),
    (httpx.LocalProtocolError, ModelTransportError, False, "the client broke the HTTP protocol"),
    (httpx.RemoteProtocolError, ModelTransportError, True, "the server broke the connection"),
    (httpx.ProxyError, ModelTransportError, True, "the proxy failed"),
    (httpx.ConnectError, ModelTransportError, True, "could not connect"),
    (httpx.NetworkError, ModelTransportError, True, "the connection failed"),
    (httpx.TransportError, ModelTransportError, True, "the transport failed"),
    (httpx.DecodingError, MalformedResponseError, False, "the body could not be decoded"),
    (httpx.TooManyRedirects, ModelTransportError, False, "too many redirects"),
    (httpx.RequestError, ModelTransportError, False, "the request failed"),
    (httpx.HTTPError, ModelTransportError, False, "the HTTP exchange failed"),
    (httpx.StreamError, ModelStreamError, False, "the response stream was misused"),
    (httpx.InvalidURL, UsageError, False, "the URL is invalid"),
    (httpx.CookieConflict, MalformedResponseError, False, "the server's cookies conflict"),
    (TimeoutError, ModelTimeoutError, False, "the request timed out"),
    (ConnectionError, ModelTransportError, True, "the connection failed"),
)

#: Every exception `translate_exception` knows; anything else is a bug and propagates as is.
TRANSLATABLE: Final[tuple[type[BaseException], ...]] = tuple(row[0] for row in EXCEPTION_TABLE)


def _lookup(exc: BaseException) -> tuple[type[AgentFaultsError], bool, str] | None:
    for cls, target, retried, what in EXCEPTION_TABLE:
        if isinstance(exc, cls):
            return target, retried, what
    return None


def is_transport_retryable(exc: BaseException | None) -> bool:
    """True when ``exc`` is a connection-level failure that transport retry may repeat."""
    if exc is None:
        return False
    row = _lookup(exc)
    return row is not None and row[1]


def translate_exception(
    exc: BaseException,
    *,
    model: str,
    url: str = "",
    scrub: Callable[[str], str] = redact_text,
) -> AgentFaultsError:
    """The taxonomy error for an httpx (or socket) exception; the caller raises it ``from exc``.

    ```python
    >>> translate_exception(httpx.ConnectError("refused"), model="openai:gpt-4o-mini")
    ModelTransportError('openai:gpt-4o-mini: could not connect (ConnectError: refused)')
    ```
    """
    if isinstance(exc, httpx.HTTPStatusError):
        try:
            body = exc.response.content
        except httpx.ResponseNotRead:
            body = b""
        return status_error(exc.response, body, model=model, url=url, scrub=scrub)
    row = _lookup(exc)
    if row is None:
        raise TypeError(f"{type(exc).__name__} is not an HTTP failure")  # pragma: no cover
    target, _, what = row
    detail = scrub(str(exc)) or "no detail"
    where = f" on POST {url}" if url else ""
    message = f"{model}: {what} ({type(exc).__name__}: {detail}){where}"
    if target is UsageError:
        return UsageError(f"{message}; fix base_url")
    if issubclass(target, ModelError):
        return target(message, model=model)
    raise TypeError(f"bad translation table row for {type(exc).__name__}")  # pragma: no cover


def status_error(
    response: httpx.Response,
    body: bytes,
    *,
    model: str,
    url: str = "",
    hint: str = "",
    scrub: Callable[[str], str] = redact_text,
) -> ModelHTTPError:
    """The taxonomy error for a non-2xx ``response`` whose body is ``body``."""
    status = response.status_code
    text = scrub(body.decode("utf-8", "replace"))
    detail = provider_message(text)
    headers = redact_headers(response.headers.multi_items())
    message = f"{model}: HTTP {status} {response.reason_phrase} from POST {url or response.url}"
    if detail:
        message += f": {detail}"
    if status == 429:
        retry_after = parse_retry_after(response.headers)
        if retry_after is not None:
            message += f" (the server asks to retry after {retry_after:g}s)"
        if hint:
            message += f" ({hint})"
        return RateLimitError(
            message,
            status=status,
            body=text,
            headers=headers,
            model=model,
            retry_after=retry_after,
        )
    if hint:
        message += f" ({hint})"
    if status in (401, 403):
        return ModelAuthError(message, status=status, body=text, headers=headers, model=model)
    if status >= 500:
        return ModelServerError(message, status=status, body=text, headers=headers, model=model)
    return ModelHTTPError(message, status=status, body=text, headers=headers, model=model)


_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def provider_message(text: str) -> str:
    """What a provider's error body says, in one short line (JSON error, HTML title, text)."""
    text = text.strip()
    if not text:
        return ""
    if text[0] in "{[":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                kind = error.get("type") or error.get("code")
                said = error.get("message")
                if isinstance(said, str):
                    return _one_line(f"{kind}: {said}" if isinstance(kind, str) else said)
            if isinstance(error, str):
                return _one_line(error)
            said = data.get("message")
            if isinstance(said, str):
                return _one_line(said)
    if text.startswith("<") or "<html" in text[:200].lower():
        title = _TITLE.search(text)
        if title:
            return _one_line("HTML page: " + _TAGS.sub("", title.group(1)))
        return _one_line("HTML page: " + _TAGS.sub(" ", text))
    return _one_line(text)


def _one_line(text: str, limit: int = _EXCERPT) -> str:
    start = text[: limit * 4]  # never split a whole 32 MiB body for 200 characters
    flat = " ".join(start.split())
    if len(flat) <= limit and len(start) == len(text):
        return flat
    return flat[:limit] + "..."


# --------------------------------------------------------------------------- Retry-After


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait in seconds a server asked for, or None.

    ``retry-after-ms`` (milliseconds, as OpenAI and Anthropic send) wins over
    ``Retry-After``, which may be seconds or an HTTP date (RFC 9110). A date in the past
    means 0; garbage and negative values mean None. ``now`` is the wall time (epoch
    seconds) a date is measured from, `time.time()` by default.

    ```python
    >>> parse_retry_after({"retry-after": "2"})
    2.0
    ```
    """
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _non_negative(millis)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _non_negative(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


# --------------------------------------------------------------------------- retry policy


@dataclass(frozen=True, slots=True)
class TransportRetry:
    """How a model client repeats a request that failed in transit.

    On by default in every httpx model client: connection errors and HTTP 408, 429, 500,
    502, 503, 504 and 529 are tried ``max_attempts`` times in all (3), waiting
    ``initial_backoff * multiplier ** (n - 1)`` before attempt ``n + 1`` (0.25 s, then
    0.5 s). A ``Retry-After`` / ``retry-after-ms`` header replaces the backoff when it is at
    most ``max_delay`` (60 s by default); above it the error is raised at once (a
    `RateLimitError` keeps ``retry_after``). Timeouts are never repeated, and neither is a
    stream that has delivered its first chunk. Every wait goes through the agent's clock.

    ```python
    model = af.OpenAIModel("gpt-4o-mini", transport_retry=af.TransportRetry(max_attempts=5))
    model = af.OpenAIModel("gpt-4o-mini", transport_retry=False)     # no transport retry
    ```
    """

    max_attempts: int = 3
    initial_backoff: float = 0.25
    multiplier: float = 2.0
    max_delay: float = 60.0
    retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise UsageError(f"TransportRetry(max_attempts={self.max_attempts!r}): use an int >= 1")
        if self.max_attempts < 1:
            raise UsageError(
                f"TransportRetry(max_attempts={self.max_attempts!r}): it counts the first "
                "attempt, so use 1 or more (or transport_retry=False to disable)"
            )
        for name in ("initial_backoff", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise UsageError(f"TransportRetry({name}={value!r}): use a number of seconds >= 0")
        if not isinstance(self.multiplier, int | float) or not self.multiplier >= 1:
            raise UsageError(f"TransportRetry(multiplier={self.multiplier!r}): use a number >= 1")
        statuses = frozenset(self.retry_statuses)
        if not all(isinstance(s, int) and 100 <= s <= 599 for s in statuses):
            raise UsageError(
                f"TransportRetry(retry_statuses={self.retry_statuses!r}): use HTTP status codes"
            )
        object.__setattr__(self, "retry_statuses", statuses)

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based) when the server says nothing."""
        delay: float = self.initial_backoff * self.multiplier ** (attempt - 1)
        return min(self.max_delay, delay)

    def schedule(self) -> list[float]:
        """Every backoff wait, in order, when no server asks for one: ``[0.25, 0.5]``."""
        return [self.backoff(n) for n in range(1, self.max_attempts)]

    def next_delay(self, error: BaseException, attempt: int) -> float | None:
        """The wait before repeating a request whose attempt ``attempt`` raised ``error``.

        None means: do not repeat it. A pure function of its arguments (and the wall time,
        for a ``Retry-After`` given as a date).
        """
        return self.decide(error, attempt)[0]

    def decide(self, error: BaseException, attempt: int) -> tuple[float | None, str]:
        """`next_delay`, with a note saying why when the answer is no, or why this wait."""
        retry_after: float | None = None
        if isinstance(error, ModelHTTPError):
            if error.status not in self.retry_statuses:
                return None, ""
            if isinstance(error, RateLimitError):
                retry_after = error.retry_after
            else:
                retry_after = parse_retry_after(error.headers)
        elif isinstance(error, ModelTransportError):
            if not is_transport_retryable(error.__cause__):
                return None, ""
        else:
            return None, ""
        if retry_after is not None and retry_after > self.max_delay:
            return None, (
                f"transport retry: not retried, the server asked to wait {retry_after:g}s, "
                f"more than max_delay={self.max_delay:g}s"
            )
        if attempt >= self.max_attempts:
            if self.max_attempts == 1:
                return None, ""
            return None, f"transport retry: gave up after {attempt} attempts"
        if retry_after is not None:
            return retry_after, f"Retry-After {retry_after:g}s"
        return self.backoff(attempt), "backoff"


def coerce_transport_retry(value: TransportRetry | bool | None) -> TransportRetry | None:
    """``True`` -> the defaults; ``None`` / ``False`` -> no transport retry."""
    if value is True:
        return TransportRetry()
    if value is None or value is False:
        return None
    if isinstance(value, TransportRetry):
        return value
    raise UsageError(
        f"transport_retry={value!r}: pass a TransportRetry(...), True for the defaults, "
        "or False / None to disable it"
    )


# --------------------------------------------------------------------------- wire parsing


class WireFormatError(ValueError):
    """A 2xx payload is not what the provider documents; becomes `MalformedResponseError`."""


class StreamBrokenError(Exception):
    """A stream ended early or reported an error mid-way; becomes `ModelStreamError`."""


def decode_json(raw: bytes, content_type: str | Callable[[], str]) -> Any:
    """Parse a response body as JSON, saying precisely what is wrong when it is not.

    ``content_type`` (or a function returning it, read only on failure) goes in the message.
    """
    try:
        return json.loads(raw)
    except ValueError:
        pass
    except RecursionError as exc:  # only the decoder's own recursion, nothing else
        raise WireFormatError(f"the body is {_DEEP} ({len(raw)} bytes)") from exc
    if not isinstance(content_type, str):
        content_type = content_type()
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1]
        raise WireFormatError(f"the body is not valid UTF-8 (byte {exc.start} is {bad!r})") from exc
    except json.JSONDecodeError as exc:
        if not raw.strip():
            raise WireFormatError("the body is empty, expected a JSON object") from exc
        what = "an HTML page" if _looks_like_html(raw, content_type) else "not JSON"
        raise WireFormatError(
            f"the body is {what} (content-type {content_type or 'missing'!r}; "
            f"{exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except ValueError as exc:  # valid JSON Python refuses, e.g. an int of 4,301+ digits
        raise WireFormatError(
            f"the body is JSON that cannot be read ({_one_line(str(exc))})"
        ) from exc


def _looks_like_html(raw: bytes, content_type: str) -> bool:
    return "html" in content_type.lower() or raw.lstrip()[:1] == b"<"


def loads_event(data: str, where: str) -> Any:
    """Parse one stream event's JSON payload."""
    try:
        return json.loads(data)
    except ValueError as exc:
        raise WireFormatError(f"{where} is not JSON ({exc}): {_one_line(data)!r}") from exc
    except RecursionError as exc:
        raise WireFormatError(f"{where} is {_DEEP} ({len(data)} characters)") from exc


def as_object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else a `WireFormatError` naming ``where``."""
    if isinstance(value, dict):
        return value
    raise WireFormatError(f"{where} is {_json_kind(value)}, expected an object")


def get_object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """The object at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    return as_object(_require(obj, key, where), f"{where}.{key}")


def get_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    value = _require(obj, key, where)
    if isinstance(value, list):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a list")


def get_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """The string at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    value = _require(obj, key, where)
    if isinstance(value, str):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a string")


def opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """The string at ``obj[key]``, None when absent or null; another type is an error."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a string or null")


def opt_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list at ``obj[key]``, empty when absent or null; another type is an error."""
    value = obj.get(key)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a list or null")


def count(obj: Mapping[str, Any] | None, *keys: str) -> int:
    """The sum of the integer token counts at ``keys`` (absent or odd values count 0)."""
    if not obj:
        return 0
    total = 0
    for key in keys:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    try:
        return obj[key]
    except KeyError:
        raise WireFormatError(f"{where}.{key} is missing") from None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover


def arguments_text(value: Any, where: str) -> str:
    """Tool-call arguments as the raw JSON text `ToolCall.arguments` holds.

    A string is kept verbatim, valid JSON or not: whether it parses is the agent's call
    (an `InvalidArgsError` its ``invalid_args`` action can repair), not the transport's.
    """
    if isinstance(value, str):
        return value if value.strip() else "{}"
    if value is None:
        return "{}"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    raise WireFormatError(f"{where} is {_json_kind(value)}, expected an object or a string")


def arguments_object(text: str) -> dict[str, Any]:
    """Tool-call arguments as an object, for providers that want one in the history."""
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    # The model once sent arguments that are not an object; show them to it as they were.
    return {"raw_arguments": text}


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
        return _one_line(self.tail.decode("utf-8", "replace")[-_EXCERPT:], limit=_EXCERPT)

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
        if value.startswith(" "):
            value = value[1:]
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


# --------------------------------------------------------------------------- base URL


def check_base_url(value: str, *, cls: str, source: str, example: str) -> str:
    """``value`` without a trailing slash, once it is an absolute http(s) URL with a host.

    ``source`` says where the value came from (``"base_url"`` or an environment variable),
    ``example`` is a correct value for the message.
    """
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{cls}: {source} is empty; use e.g. {example!r}")
    text = value.strip().rstrip("/")
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UsageError(
            f"{cls}: {source}={value!r} is not a URL ({exc}); use e.g. {example!r}"
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        if "://" not in value:
            raise UsageError(
                f"{cls}: {source}={value!r} has no scheme; write it with http:// or https://, "
                f"e.g. {'https://' + text if '.' in text.split('/')[0] else example!r}"
            )
        raise UsageError(
            f"{cls}: {source}={value!r} must be an http:// or https:// URL, e.g. {example!r}"
        )
    if url.query or url.fragment:
        raise UsageError(f"{cls}: {source}={value!r} must not have a query or fragment")
    return text


def api_key_for(
    cls: str, api_key: str | None, *, env: str, root: str, official_host: str
) -> str | None:
    """The key to send: ``api_key``, else ``$env``.

    Only the provider's own host requires one; a missing key there is a `UsageError` raised
    before any request is sent. Other servers (vLLM, llama.cpp, the loopback server) get
    none unless one is given.
    """
    key = api_key if api_key is not None else os.environ.get(env)
    if not key and httpx.URL(root).host == official_host:
        raise UsageError(
            f"{cls} needs an API key for {official_host}: set the {env} environment "
            "variable or pass api_key=... (a custom base_url needs none)"
        )
    return key


# --------------------------------------------------------------------------- the client base


class HTTPModel:
    """What the httpx model clients share: clients, secrets, the attempt loop.

    A subclass sets ``provider`` and ``sse`` and writes three pure hooks: `_payload` (the
    request body), `_parse` (a decoded 2xx body) and `_decoder` (a stream decoder).
    """

    provider: ClassVar[str] = ""
    sse: ClassVar[bool] = True
    key_env: ClassVar[str] = ""

    __slots__ = (
        "_async_client",
        "_base_url",
        "_client",
        "_extra_body",
        "_has_key",
        "_headers",
        "_max_bytes",
        "_model",
        "_name",
        "_owns_async",
        "_owns_sync",
        "_retry",
        "_scrub",
        "_timeout",
        "_url",
    )

    def _setup(
        self,
        model: str,
        *,
        base_url: str,
        url: str,
        headers: dict[str, str],
        secrets: tuple[str, ...],
        http_client: httpx.Client | httpx.AsyncClient | None,
        async_http_client: httpx.AsyncClient | None,
        transport_retry: TransportRetry | bool | None,
        timeout: float | httpx.Timeout | None,
        extra_body: Mapping[str, Any] | None,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        cls = type(self).__name__
        if not isinstance(model, str) or not model.strip():
            raise UsageError(f"{cls}: model must be a model name such as 'gpt-4o-mini'")
        if http_client is not None and not isinstance(
            http_client, httpx.Client | httpx.AsyncClient
        ):
            raise _wrong_client(
                f"{cls}: http_client must be an httpx.Client or httpx.AsyncClient", http_client
            )
        if async_http_client is not None:
            if not isinstance(async_http_client, httpx.AsyncClient):
                raise _wrong_client(
                    f"{cls}: async_http_client must be an httpx.AsyncClient", async_http_client
                )
            if isinstance(http_client, httpx.AsyncClient):
                raise UsageError(
                    f"{cls}: both http_client and async_http_client are httpx.AsyncClient; "
                    "pass the httpx.Client as http_client"
                )
        self._model = model
        self._name = f"{self.provider}:{model}"
        self._base_url = base_url
        self._url = url
        self._headers = headers
        self._has_key = bool(secrets)
        self._scrub = _scrubber(secrets)
        self._retry = coerce_transport_retry(transport_retry)
        self._timeout = timeout
        self._extra_body = dict(extra_body or {})
        self._max_bytes = check_max_response_bytes(cls, max_response_bytes)
        self._client = http_client if isinstance(http_client, httpx.Client) else None
        self._async_client = (
            http_client if isinstance(http_client, httpx.AsyncClient) else async_http_client
        )
        self._owns_sync = False
        self._owns_async = False

    # ------------------------------------------------------------------ public surface

    @property
    def name(self) -> str:
        """``"<provider>:<model>"``, as traces show it."""
        return self._name

    @property
    def model(self) -> str:
        """The provider's model name, as sent in each request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The base URL requests go to (without a trailing slash)."""
        return self._base_url

    @property
    def url(self) -> str:
        """The endpoint each request is POSTed to."""
        return self._url

    @property
    def transport_retry(self) -> TransportRetry | None:
        """The transport retry settings in force (None when disabled)."""
        return self._retry

    @property
    def max_response_bytes(self) -> int | None:
        """The most bytes read of one body or one stream line (None: no limit)."""
        return self._max_bytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    def request(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the assistant's answer, blocking.

        Failures are raised as the taxonomy's `ModelError` subclasses, after transport
        retry, with the httpx exception as ``__cause__``.
        """
        content = self._encode(request)
        client = self._sync_client()
        clock: Clock | None = None
        attempt = 1
        while True:
            try:
                if request.stream:
                    return self._stream_sync(client, content, request)
                return self._post_sync(client, content, request)
            except ModelError as error:
                delay = self._retry_delay(error, attempt, request)
                if delay is None:
                    raise
            if clock is None:
                clock = request.clock or default_clock()
            clock.sleep(delay)
            attempt += 1

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the assistant's answer without blocking the loop."""
        content = self._encode(request)
        client = self._async_http_client()
        clock: Clock | None = None
        attempt = 1
        while True:
            try:
                if request.stream:
                    return await self._stream_async(client, content, request)
                return await self._post_async(client, content, request)
            except ModelError as error:
                delay = self._retry_delay(error, attempt, request)
                if delay is None:
                    raise
            if clock is None:
                clock = request.clock or default_clock()
            await clock.asleep(delay)
            attempt += 1

    def close(self) -> None:
        """Close the httpx client this model created (an injected one is left open)."""
        client, self._client = self._client, None
        if client is not None and self._owns_sync:
            client.close()
        self._owns_sync = False

    async def aclose(self) -> None:
        """Close both httpx clients this model created (injected ones are left open)."""
        client, self._async_client = self._async_client, None
        if client is not None and self._owns_async:
            await client.aclose()
        self._owns_async = False
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ provider hooks

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, data: Any, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    def _decoder(self, request: ModelRequest) -> StreamDecoder:
        raise NotImplementedError

    # ------------------------------------------------------------------ clients

    def _sync_client(self) -> httpx.Client:
        client = self._client
        if client is None:
            if self._async_client is not None and not self._owns_async:
                raise UsageError(
                    f"{self!r} was given an httpx.AsyncClient, and request() needs an "
                    "httpx.Client: call arequest(), or pass http_client=httpx.Client(...) "
                    "and async_http_client=httpx.AsyncClient(...)"
                )
            client = self._client = httpx.Client(timeout=self._timeout)
            self._owns_sync = True
        return client

    def _async_http_client(self) -> httpx.AsyncClient:
        client = self._async_client
        if client is None:
            if self._client is not None and not self._owns_sync:
                raise UsageError(
                    f"{self!r} was given an httpx.Client, and arequest() needs an "
                    "httpx.AsyncClient: pass async_http_client=httpx.AsyncClient(...), "
                    "or call request()"
                )
            client = self._async_client = httpx.AsyncClient(timeout=self._timeout)
            self._owns_async = True
        return client

    # ------------------------------------------------------------------ one attempt

    def _encode(self, request: ModelRequest) -> bytes:
        payload = self._payload(request)
        if self._extra_body:
            payload.update(self._extra_body)
        return _ENCODER.encode(payload).encode()

    def _post_sync(
        self, client: httpx.Client, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        try:
            with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                body = read_body(response, self._max_bytes, keep_prefix=not response.is_success)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._translate(exc) from exc
        return self._answer(response, body, request)

    async def _post_async(
        self, client: httpx.AsyncClient, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        try:
            async with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                body = await aread_body(
                    response, self._max_bytes, keep_prefix=not response.is_success
                )
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._translate(exc) from exc
        return self._answer(response, body, request)

    def _stream_sync(
        self, client: httpx.Client, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        lines = LineBuffer(self._max_bytes)
        try:
            with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                if not response.is_success or self._not_a_stream(response):
                    body = read_body(response, self._max_bytes, keep_prefix=not response.is_success)
                    return self._answer(response, body, request)
                decoder = self._decoder(request)
                for chunk in response.iter_bytes():
                    self._feed(decoder, lines, chunk)
                return self._end_stream(decoder, lines)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._stream_failure(exc, lines) from exc

    async def _stream_async(
        self, client: httpx.AsyncClient, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        lines = LineBuffer(self._max_bytes)
        try:
            async with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                if not response.is_success or self._not_a_stream(response):
                    body = await aread_body(
                        response, self._max_bytes, keep_prefix=not response.is_success
                    )
                    return self._answer(response, body, request)
                decoder = self._decoder(request)
                async for chunk in response.aiter_bytes():
                    self._feed(decoder, lines, chunk)
                return self._end_stream(decoder, lines)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._stream_failure(exc, lines) from exc

    def _not_a_stream(self, response: httpx.Response) -> bool:
        # A server that ignores stream=true answers with one JSON document: parse it whole.
        # An HTML page (a proxy's error page) is reported as such, not as a short stream.
        content_type = response.headers.get("content-type", "").lower()
        if "html" in content_type:
            return True
        return self.sse and content_type.startswith("application/json")

    def _feed(self, decoder: StreamDecoder, lines: LineBuffer, chunk: bytes) -> None:
        try:
            for line in lines.feed(chunk):
                decoder.feed(line)
        except WireFormatError as exc:
            raise self._malformed(str(exc), lines.transcript(), streamed=True) from exc.__cause__
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None

    def _end_stream(self, decoder: StreamDecoder, lines: LineBuffer) -> ModelResponse:
        if lines.size == 0:
            raise self._broken("the stream was empty (no events at all)", lines)
        try:
            last = lines.finish()
            if last is not None:
                decoder.feed(last)
            decoder.end_of_input()
        except WireFormatError:
            # The body stopped in the middle of an event: that is truncation, not bad JSON.
            raise self._broken(
                "truncated stream: it ended in the middle of an event", lines
            ) from None
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None
        try:
            return decoder.finish()
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None
        except WireFormatError as exc:
            raise self._malformed(str(exc), lines.transcript(), streamed=True) from None

    def _stream_failure(self, exc: BaseException, lines: LineBuffer) -> AgentFaultsError:
        if lines.size == 0:
            return self._translate(exc)
        detail = self._scrub(str(exc)) or "no detail"
        return ModelStreamError(
            f"{self._name}: the stream broke after {lines.size} bytes "
            f"({type(exc).__name__}: {detail}); a stream is never re-issued after its first "
            f"chunk. It ended with: {self._scrub(lines.excerpt())!r}",
            model=self._name,
        )

    def _answer(
        self, response: httpx.Response, body: bytes, request: ModelRequest
    ) -> ModelResponse:
        if not response.is_success:
            raise status_error(
                response,
                body,
                model=self._name,
                url=self._url,
                hint=self._hint(response),
                scrub=self._scrub,
            )
        try:
            data = decode_json(body, lambda: response.headers.get("content-type", ""))
            return self._parse(data, request)
        except WireFormatError as exc:
            text = body.decode("utf-8", "replace")
            # only the start is scrubbed and kept: never a regex over a 32 MiB body
            hidden = max(0, len(text) - _BODY_KEEP)
            raise self._malformed(
                str(exc), text[:_BODY_KEEP], streamed=False, hidden=hidden
            ) from exc.__cause__

    def _hint(self, response: httpx.Response) -> str:
        status = response.status_code
        if status in (401, 403):
            if not self._has_key:
                fix = f"set {self.key_env} or pass api_key=" if self.key_env else "pass api_key="
                return f"no API key was sent: {fix}"
            where = f"{self.key_env} or api_key=" if self.key_env else "api_key="
            return f"check the API key ({where}) and its permissions"
        if status == 404:
            return "check base_url and the model name"
        if 300 <= status < 400:
            location = response.headers.get("location")
            return f"the server redirects to {location}: use that as base_url" if location else ""
        return ""

    # ------------------------------------------------------------------ errors

    def _translate(self, exc: BaseException) -> AgentFaultsError:
        return translate_exception(exc, model=self._name, url=self._url, scrub=self._scrub)

    def _malformed(
        self, what: str, body: str, *, streamed: bool, hidden: int = 0
    ) -> MalformedResponseError:
        text = self._scrub(body)
        kind = "streamed response" if streamed else "response"
        excerpt = _one_line(text) if text.strip() else "(empty)"
        error = MalformedResponseError(
            f"{self._name}: malformed {kind}: {what}. Body: {excerpt!r}",
            body=text,
            model=self._name,
        )
        if hidden:  # ``body`` was cut before scrubbing: count what followed, as truncate() does
            shown = text[:_BODY_SHOWN]
            error.body = f"{shown}... [{len(text) - len(shown) + hidden} more characters]"
        return error

    def _too_large(self, exc: TooLargeError) -> MalformedResponseError:
        limit = self._max_bytes or 0
        # the head ends where the read cut it: keep only its first half, so a key that
        # straddles that cut is never shown in part (whole keys are scrubbed)
        text = self._scrub(exc.head.decode("utf-8", "replace"))[: _BODY_SHOWN // 2]
        return MalformedResponseError(
            f"{self._name}: {exc.what}, past max_response_bytes={size_text(limit)}; the read "
            f"stopped there. If an answer is really this large, raise the limit: "
            f"{type(self).__name__}(..., max_response_bytes=...) (None for no limit)",
            body=text,
            model=self._name,
        )

    def _broken(self, what: str, lines: LineBuffer) -> ModelStreamError:
        excerpt = self._scrub(lines.excerpt()) or "(nothing)"
        return ModelStreamError(
            f"{self._name}: {what} ({lines.size} bytes received). It ended with: {excerpt!r}",
            model=self._name,
        )

    def _retry_delay(self, error: ModelError, attempt: int, request: ModelRequest) -> float | None:
        policy = self._retry
        if policy is None:
            return None
        delay, why = policy.decide(error, attempt)
        if delay is None:
            if why:
                error.add_note(why)
            return None
        status = error.status if isinstance(error, ModelHTTPError) else None
        failure = f"HTTP {status}" if status is not None else type(error.__cause__).__name__
        request.emit(
            "transport.retry",
            attempt=attempt,
            max_attempts=policy.max_attempts,
            delay=delay,
            status=status,
            error=ErrorRecord.from_exception(error),
            model=self._name,
            detail=(
                f"{self._name}: {failure}; waiting {delay:g}s ({why}) before attempt "
                f"{attempt + 1}/{policy.max_attempts}"
            ),
        )
        return delay


def _scrubber(secrets: tuple[str, ...]) -> Callable[[str], str]:
    """Redact key-shaped text, and these exact secrets wherever they appear."""
    exact = tuple(s for s in secrets if len(s) >= 4)

    def scrub(text: str) -> str:
        for secret in exact:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact_text(text)

    return scrub


# An httpx2 client (the fork the official SDKs use) looks like an httpx one by its class name.
_HTTPX2_HINT: Final = (
    "; the model clients of this package are built on httpx, so pass an httpx client "
    "(httpx2 belongs to the official openai and anthropic SDKs, which http_faults reaches "
    "as they are)"
)


def _wrong_client(rule: str, value: object) -> UsageError:
    """The error for a client of the wrong type, named with its library (``httpx2.Client``)."""
    kind = type(value)
    library = kind.__module__.split(".")[0]
    shown = kind.__qualname__ if library == "builtins" else f"{library}.{kind.__qualname__}"
    return UsageError(f"{rule}, not {shown}{_HTTPX2_HINT if library == 'httpx2' else ''}")
