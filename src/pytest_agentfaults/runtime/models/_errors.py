"""The one place where httpx (and socket) exceptions and HTTP statuses become the taxonomy.

`translate_exception` turns an httpx exception into the taxonomy, most specific match
first; `status_error` does the same for an HTTP status; the ``*_error`` builders make the
errors a client raises for an unusable body or a broken stream. Every message goes through
the client's ``scrub`` so no secret reaches it.

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

import json
import re
from collections.abc import Callable
from typing import Final

import httpx

from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults._redact import redact_headers, redact_text
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
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "EXCEPTION_TABLE",
    "TRANSLATABLE",
    "broken_stream_error",
    "is_transport_retryable",
    "malformed_error",
    "one_line",
    "provider_message",
    "status_error",
    "status_hint",
    "stream_failure_error",
    "too_large_error",
    "translate_exception",
]

EXCERPT: Final = 200
# How much of an unusable 2xx body is decoded and scrubbed for the error (never all 32 MiB).
BODY_KEEP: Final = 8192
_BODY_SHOWN: Final = 2000  # what MalformedResponseError.body keeps


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
    detail = scrub(exception_text(exc)) or "no detail"
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
                    return one_line(f"{kind}: {said}" if isinstance(kind, str) else said)
            if isinstance(error, str):
                return one_line(error)
            said = data.get("message")
            if isinstance(said, str):
                return one_line(said)
    if text.startswith("<") or "<html" in text[:200].lower():
        title = _TITLE.search(text)
        if title:
            return one_line("HTML page: " + _TAGS.sub("", title.group(1)))
        return one_line("HTML page: " + _TAGS.sub(" ", text))
    return one_line(text)


def one_line(text: str, limit: int = EXCERPT) -> str:
    start = text[: limit * 4]  # never split a whole 32 MiB body for 200 characters
    flat = " ".join(start.split())
    if len(flat) <= limit and len(start) == len(text):
        return flat
    return flat[:limit] + "..."


def status_hint(response: httpx.Response, *, has_key: bool, key_env: str) -> str:
    """What to fix for a non-2xx ``response`` ("" when nothing specific helps)."""
    status = response.status_code
    if status in (401, 403):
        if not has_key:
            fix = f"set {key_env} or pass api_key=" if key_env else "pass api_key="
            return f"no API key was sent: {fix}"
        where = f"{key_env} or api_key=" if key_env else "api_key="
        return f"check the API key ({where}) and its permissions"
    if status == 404:
        return "check base_url and the model name"
    if 300 <= status < 400:
        location = response.headers.get("location")
        return f"the server redirects to {location}: use that as base_url" if location else ""
    return ""


# --------------------------------------------------------------------------- a client's errors


def malformed_error(
    model: str,
    scrub: Callable[[str], str],
    what: str,
    body: str,
    *,
    streamed: bool,
    hidden: int = 0,
) -> MalformedResponseError:
    """A 2xx ``body`` is unusable (``what`` says why); ``hidden`` characters were cut off."""
    text = scrub(body)
    kind = "streamed response" if streamed else "response"
    excerpt = one_line(text) if text.strip() else "(empty)"
    error = MalformedResponseError(
        f"{model}: malformed {kind}: {what}. Body: {excerpt!r}",
        body=text,
        model=model,
    )
    if hidden:  # ``body`` was cut before scrubbing: count what followed, as truncate() does
        shown = text[:_BODY_SHOWN]
        error.body = f"{shown}... [{len(text) - len(shown) + hidden} more characters]"
    return error


def too_large_error(
    model: str, scrub: Callable[[str], str], what: str, head: bytes, *, limit: str, cls: str
) -> MalformedResponseError:
    """The read stopped at ``max_response_bytes`` (``limit``); ``head`` is what came first."""
    # the head ends where the read cut it: keep only its first half, so a key that
    # straddles that cut is never shown in part (whole keys are scrubbed)
    text = scrub(head.decode("utf-8", "replace"))[: _BODY_SHOWN // 2]
    return MalformedResponseError(
        f"{model}: {what}, past max_response_bytes={limit}; the read "
        f"stopped there. If an answer is really this large, raise the limit: "
        f"{cls}(..., max_response_bytes=...) (None for no limit)",
        body=text,
        model=model,
    )


def broken_stream_error(
    model: str, scrub: Callable[[str], str], what: str, *, size: int, excerpt: str
) -> ModelStreamError:
    """A stream ended early or said it failed, after ``size`` bytes ending in ``excerpt``."""
    shown = scrub(excerpt) or "(nothing)"
    return ModelStreamError(
        f"{model}: {what} ({size} bytes received). It ended with: {shown!r}",
        model=model,
    )


def stream_failure_error(
    exc: BaseException,
    *,
    model: str,
    url: str,
    scrub: Callable[[str], str],
    size: int,
    excerpt: str,
) -> AgentFaultsError:
    """The taxonomy error for ``exc`` raised while reading a stream, ``size`` bytes in."""
    if size == 0:
        return translate_exception(exc, model=model, url=url, scrub=scrub)
    detail = scrub(exception_text(exc)) or "no detail"
    return ModelStreamError(
        f"{model}: the stream broke after {size} bytes "
        f"({type(exc).__name__}: {detail}); a stream is never re-issued after its first "
        f"chunk. It ended with: {scrub(excerpt)!r}",
        model=model,
    )
