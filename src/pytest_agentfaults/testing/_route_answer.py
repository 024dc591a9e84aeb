"""``http_faults`` routes answered where the http layer sees the request, not below it.

When the ``http_faults`` router is the only respx router of a client's library, and the
client's transport is the library's own network transport, the routes would answer one
level down anyway: respx's mocker patches the connection pool, turns the pool's request
back into an ``httpx.Request``, asks the routers, and turns the answer into a pool
response that the transport turns into a client response again. `Routed` asks the same
router at the client's transport instead, skipping the pool and both conversions (about
60 us of a ~1 ms SDK test). What respx's way gives, this keeps: the route sees a copy of
the request as sent (`_as_httpx`), records the same call, raises into the client what the
pool would (`_pool_errors`), and the client gets the bytes as sent (`_as_library`).

A request the router lets through (a loopback request no route matches, a pass-through
route) goes on to the client's real transport; on the way, `passing_through` tells the
router, asked again by respx's mocker below, to let it through once more without
recording it twice.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import httpx
from respx.models import PassThrough

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from contextlib import AbstractContextManager

    from pytest_agentfaults.testing._clients import Library

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Routed", "passing_through"]

#: set while a request the router let through goes down to the real transport
passing_through: ContextVar[bool] = ContextVar("agentfaults_passing_through", default=False)


class Routed:
    """A one-request transport: the router's answer, else the client's own transport."""

    __slots__ = ("_library", "_router", "_transport")

    def __init__(self, library: Library, router: Any, transport: Any) -> None:
        self._library = library
        self._router = router
        self._transport = transport

    def handle_request(self, request: Any) -> Any:
        """The routes' answer to a sync client."""
        __tracebackhide__ = True  # an unmatched request's error shows the client's frames
        library = self._library
        copy = _as_httpx(request)
        _read(copy, request, library)  # as respx's mocker reads it: the client's stays unread
        try:
            answer = self._router.handler(copy)
        except PassThrough:
            request.stream = library.module.ByteStream(copy.content)  # the upload, read once
            token = passing_through.set(True)
            try:
                return self._transport.handle_request(request)
            finally:
                passing_through.reset(token)
        except Exception:
            with _pool_errors(library)():  # mapped only when raised: free on the way out
                raise
        return _as_library(library, answer)

    async def handle_async_request(self, request: Any) -> Any:
        """The routes' answer to an async client."""
        __tracebackhide__ = True
        library = self._library
        copy = _as_httpx(request)
        await copy.aread()
        try:
            answer = await self._router.async_handler(copy)
        except PassThrough:
            request.stream = library.module.ByteStream(copy.content)
            token = passing_through.set(True)
            try:
                return await self._transport.handle_async_request(request)
            finally:
                passing_through.reset(token)
        except Exception:
            with _pool_errors(library)():
                raise
        return _as_library(library, answer)


def _read(copy: httpx.Request, request: Any, library: Library) -> None:
    """``copy.read()``, straight from the bytes of a byte-stream upload.

    The client's library keeps an upload given as bytes in a byte stream of one chunk:
    reading the copy would join that chunk and wrap it again. Taken as is, the copy ends
    as ``read()`` leaves it. Any other upload is read through the copy, as respx's
    mocker reads it.
    """
    stream = request.stream
    data = stream.__dict__.get("_stream") if stream.__class__ is library.module.ByteStream else None
    if data.__class__ is bytes:
        copy._content = data  # what read() sets  # noqa: SLF001
        copy.stream = httpx.ByteStream(data)
    else:
        copy.read()


# wire URL -> httpx.URL, parsed once (10 us each): URLs are values, never changed in place
_urls: dict[str, httpx.URL] = {}


def _as_httpx(request: Any) -> httpx.Request:
    """A new ``httpx.Request`` of what reaches the wire, as respx's mocker gives routes.

    The URL as sent (no fragment; user info gone, sent as basic auth), the headers, and
    the client's upload stream, unread: the caller reads the copy, so a side effect that
    changes it, or a one-shot upload it consumes, behaves as under respx.
    """
    url = request.url
    host = url.raw_host.decode("ascii")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    port = "" if url.port is None else f":{url.port}"
    sent = f"{url.scheme}://{host}{port}{url.raw_path.decode('ascii')}"
    parsed = _urls.get(sent)
    if parsed is None:
        parsed = httpx.URL(sent)
        if len(_urls) < 256:  # a session's endpoints; bounded all the same
            _urls[sent] = parsed
    copy = httpx.Request(
        request.method,
        parsed,
        headers=_as_httpx_headers(request.headers),
        stream=request.stream,
        extensions=request.extensions,
    )
    copy.url = parsed  # the same value, and the same object for every request to it
    return copy


def _as_httpx_headers(headers: Any) -> Any:
    """``headers`` (httpx2's) as ``httpx.Headers``: the same (name, lower name, value) list.

    The two libraries keep headers alike; copying that list skips normalizing each header
    again (``headers.raw`` would be re-read name by name). Anything else: ``headers.raw``.
    """
    items = getattr(headers, "_list", None)
    if items.__class__ is not list:
        return headers.raw
    copy = httpx.Headers(_empty_of(httpx))
    copy._list = list(items)  # noqa: SLF001 - the list httpx's own Headers(headers) copies
    return copy


# library module -> an empty Headers of it, never changed: ``Headers(empty)`` makes a new
# empty one as ``Headers()`` does, without asking whether None is a Mapping (an ABC check)
_empty_headers: dict[Any, Any] = {}


def _empty_of(module: Any) -> Any:
    empty = _empty_headers.get(module)
    if empty is None:
        empty = _empty_headers[module] = module.Headers()
    return empty


def _pool_errors(library: Library) -> Callable[[], AbstractContextManager[None]]:
    """The library's own mapping of its pool's errors to its exceptions, as its transport uses.

    A route (its side effect, or its body) may raise what the pool would, such as
    ``httpcore.ConnectError``: under respx the client's transport turns it into the
    client's ``ConnectError``, which is what the SDKs retry. A private function of httpx
    and httpx2, looked up by name; without it, errors pass unchanged.
    """
    mapper = _mappers.get(library.name)
    if mapper is None:
        transports = getattr(library.module, "_transports", None)
        default = getattr(transports, "default", None)
        mapper = getattr(default, "map_httpcore_exceptions", contextlib.nullcontext)
        _mappers[library.name] = mapper
    return mapper


_mappers: dict[str, Callable[[], AbstractContextManager[None]]] = {}


def _as_library(library: Library, answer: httpx.Response) -> Any:
    """The route's answer as the client's transport gives it (a fresh library response)."""
    module = library.module
    stream = answer.stream
    # The bytes as sent, not ``answer.content``: respx has read (so decoded) the body, and
    # the headers still say how it is encoded, so the client decodes it, as under respx.
    body: Any = (
        module.ByteStream(b"".join(stream))
        if isinstance(stream, httpx.ByteStream)
        else _Stream(library, stream)
    )
    return module.Response(
        answer.status_code,
        headers=_as_library_headers(module, answer.headers),
        stream=body,
        extensions=answer.extensions,
    )


def _as_library_headers(module: Any, headers: httpx.Headers) -> Any:
    """``headers`` as the library's ``Headers``: the same (name, lower name, value) list.

    The reverse of `_as_httpx_headers`, for the same reason; anything else: ``headers.raw``.
    """
    items = getattr(headers, "_list", None)
    if items.__class__ is not list:
        return headers.raw
    copy = module.Headers(_empty_of(module))
    copy._list = list(items)  # noqa: SLF001 - the list the library's Headers(headers) copies
    return copy


def _Stream(library: Library, inner: Any) -> Any:  # noqa: N802 # a class per library
    """``inner`` (a route's streamed body) as a byte stream of the client's library."""
    module = library.module
    errors = _pool_errors(library)  # a body cut by a pool error: the client's ReadError

    class RouteStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __iter__(self) -> Iterator[bytes]:
            with errors():
                yield from inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            with errors():
                if hasattr(inner, "__aiter__"):
                    async for chunk in inner:
                        yield chunk
                else:
                    for chunk in inner:
                        yield chunk

        def close(self) -> None:
            close = getattr(inner, "close", None)
            if close is not None:
                close()

        async def aclose(self) -> None:
            aclose = getattr(inner, "aclose", None)
            if aclose is not None:
                await aclose()

    return RouteStream()
