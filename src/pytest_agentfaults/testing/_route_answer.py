"""``http_faults`` routes answered where the http layer sees the request, not below it.

When the ``http_faults`` router is the only respx router of a client's library, and the
client's transport is the library's own network transport, the routes would answer one
level down anyway: respx's mocker patches the connection pool, turns the pool's request
back into an ``httpx.Request``, asks the routers, and turns the answer into a pool
response that the transport turns into a client response again. `Routed` asks the same
router at the client's transport instead, skipping the pool and both conversions (about
60 us of a ~1 ms SDK test): the route sees the same ``httpx.Request``, records the same
call, and the client gets the same response.

A request the router lets through (a loopback request no route matches, a pass-through
route) goes on to the client's real transport; on the way, `passing_through` tells the
router, asked again by respx's mocker below, to let it through once more without
recording it twice.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import httpx
from respx.models import PassThrough

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from pytest_agentfaults.testing._clients import Library

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
        request.read()
        try:
            answer = self._router.handler(_as_httpx(request))
        except PassThrough:
            token = passing_through.set(True)
            try:
                return self._transport.handle_request(request)
            finally:
                passing_through.reset(token)
        return _as_library(self._library, answer)

    async def handle_async_request(self, request: Any) -> Any:
        """The routes' answer to an async client."""
        await request.aread()
        try:
            answer = await self._router.async_handler(_as_httpx(request))
        except PassThrough:
            token = passing_through.set(True)
            try:
                return await self._transport.handle_async_request(request)
            finally:
                passing_through.reset(token)
        return _as_library(self._library, answer)


# str -> httpx.URL, parsed once (10 us each): URLs are values, never changed in place
_urls: dict[str, httpx.URL] = {}


def _as_httpx(request: Any) -> httpx.Request:
    """The ``httpx.Request`` respx's routes read (the request itself for an httpx client)."""
    if isinstance(request, httpx.Request):
        return request
    shown = str(request.url)
    url = _urls.get(shown)
    if url is None:
        url = httpx.URL(shown)
        if len(_urls) < 256:  # a session's endpoints; bounded all the same
            _urls[shown] = url
    converted = httpx.Request(
        request.method,
        url,
        headers=request.headers.raw,
        stream=httpx.ByteStream(request.content),
        extensions=request.extensions,
    )
    converted.read()  # as respx's mocker does: routes read ``request.content``
    return converted


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
        headers=answer.headers.raw,
        stream=body,
        extensions=answer.extensions,
    )


def _Stream(library: Library, inner: Any) -> Any:  # noqa: N802 # a class per library
    """``inner`` (a route's streamed body) as a byte stream of the client's library."""
    module = library.module

    class RouteStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __iter__(self) -> Iterator[bytes]:
            yield from inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
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
