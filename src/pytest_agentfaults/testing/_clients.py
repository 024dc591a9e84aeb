"""The client libraries the http layer patches: httpx (over httpcore), httpx2 (over httpcore2).

`Library` holds what differs between the two (the module, respx's mocker, a cut response
body); `outcome` builds a fault's outcome in a library's own types (its ``Response``, its
``ReadTimeout`` ...) from the bytes `_wire` gives; `push` / `remove` route every request
of both libraries through the newest http layer, patching ``_send_single_request`` while
any layer is active.

httpx2 and httpcore2 are imported only when installed, and only when first needed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import httpx
from respx.mocks import HTTPCoreMocker, Mocker

from pytest_agentfaults._patches import live, replaced, retire, retired
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.testing._wire import (
    Served,
    content_type,
    draw_id,
    id_headers,
    kind_served,
    malformed_body,
    model_name,
    provider_for,
    status_served,
    truncated_body,
    wants_stream,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from pytest_agentfaults.testing._fault import HTTPFault

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "HTTPCore2Mocker",
    "Injected",
    "Layer",
    "Library",
    "current_guard",
    "libraries",
    "outcome",
    "push",
    "push_guard",
    "remove",
    "remove_guard",
    "request_body",
    "slow_stream",
]


class Layer(Protocol):
    """An http layer requests are routed through (`HttpInjector`)."""

    def handle(self, library: Library, client: Any, request: Any, original: Any) -> Any: ...

    async def ahandle(self, library: Library, client: Any, request: Any, original: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class Library:
    """One client library: httpx (over httpcore) or httpx2 (over httpcore2)."""

    name: str
    module: Any
    mocker: type[Mocker]
    cut_stream: Callable[[bytes, BaseException], Any]


def _cut_stream_class(module: Any) -> Callable[[bytes, BaseException], Any]:
    class CutStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[misc]
        """A response body that delivers ``data``, then fails with ``error``."""

        def __init__(self, data: bytes, error: BaseException) -> None:
            self._data = data
            self._error = error

        def __iter__(self) -> Iterator[bytes]:
            if self._data:
                yield self._data
            raise self._error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self._data:
                yield self._data
            raise self._error

    return CutStream


def _httpcore2_mocker() -> type[HTTPCoreMocker]:
    # respx keeps one mocker per name for the life of the process, and this module may be
    # imported afresh (pytester's in-process runs restore sys.modules): reuse the first.
    registered = Mocker.registry.get("httpcore2")
    if registered is not None:
        return registered  # type: ignore[return-value]

    class HTTPCore2Mocker(HTTPCoreMocker):
        """respx's mocker for httpcore2, the transport of httpx2 (registered as ``"httpcore2"``).

        With this module imported, ``respx.mock(using="httpcore2")`` mocks httpx2 clients too.
        """

        name = "httpcore2"
        targets: ClassVar[list[str]] = [
            "httpcore2._sync.connection.HTTPConnection",
            "httpcore2._sync.connection_pool.ConnectionPool",
            "httpcore2._sync.http_proxy.HTTPProxy",
            "httpcore2._async.connection.AsyncHTTPConnection",
            "httpcore2._async.connection_pool.AsyncConnectionPool",
            "httpcore2._async.http_proxy.AsyncHTTPProxy",
        ]
        target_methods: ClassVar[list[str]] = ["handle_request", "handle_async_request"]

        @classmethod
        def from_sync_httpx_response(
            cls, httpx_response: httpx.Response, target: Any, **kwargs: Any
        ) -> Any:
            """An httpcore2 response from the router's httpx response."""
            import httpcore2  # noqa: PLC0415 # lazy: optional dependency, loaded on use

            return httpcore2.Response(
                status=httpx_response.status_code,
                headers=httpx_response.headers.raw,
                content=httpx_response.stream,
                extensions=httpx_response.extensions,
            )

        @classmethod
        async def from_async_httpx_response(
            cls, httpx_response: httpx.Response, target: Any, **kwargs: Any
        ) -> Any:
            """The same, for the async pool."""
            return cls.from_sync_httpx_response(httpx_response, target, **kwargs)

    return HTTPCore2Mocker


#: respx's mocker for httpcore2 (registered as ``"httpcore2"``): with this module imported,
#: ``respx.mock(using="httpcore2")`` mocks httpx2 clients too.
HTTPCore2Mocker = _httpcore2_mocker()


_libraries_cache: list[Library] | None = None


def libraries() -> list[Library]:
    """httpx, and httpx2 when it is installed (imported on the first call)."""
    global _libraries_cache
    if _libraries_cache is None:
        found = [Library("httpx", httpx, HTTPCoreMocker, _cut_stream_class(httpx))]
        if importlib.util.find_spec("httpx2") and importlib.util.find_spec("httpcore2"):
            # both at once: httpx2 caches httpcore2's exception classes on first use
            import httpcore2  # noqa: F401, PLC0415 # lazy: optional, imported on first use only
            import httpx2  # noqa: PLC0415 # lazy: optional, imported on first use only

            found.append(Library("httpx2", httpx2, HTTPCore2Mocker, _cut_stream_class(httpx2)))
        _libraries_cache = found
    return _libraries_cache


# ----------------------------------------------------------------------------- patching

_stack: list[Layer] = []
_undo: list[tuple[type, str, Any, Any]] = []


def _install() -> None:
    # The hook is where a client hands a request to its transport (``_send_single_request``),
    # above any transport: so a fault fires before whatever answers below (the network,
    # pytest-httpx's patched HTTPTransport, respx, a MockTransport), and no other mocking
    # library patches this method, so undoing it never undoes (or restores) theirs.
    for library in libraries():
        module = library.module
        for owner, make in ((module.Client, _sync_entry), (module.AsyncClient, _async_entry)):
            original = owner.__dict__["_send_single_request"]
            made = _entries.get(owner)
            if made is not None and made[0] is original and not retired(made[1]):
                entry = made[1]
            else:
                entry = make(library, original)
                _entries[owner] = (original, entry)
            _undo.append((owner, "_send_single_request", original, entry))
            owner._send_single_request = entry


# The entry last put on each client class, over the original it wraps: every test that
# uses the kit installs the hook and removes it, and an entry refers to itself (a cycle
# only the garbage collector frees), so a new one per test would cost a test a share of
# a full collection. One removed cleanly is the same function as a new one would be; one
# retired (found covered at removal) passes calls through for good, and is never reused.
_entries: dict[type, tuple[Any, Callable[..., Any]]] = {}


def _uninstall() -> None:
    while _undo:
        owner, name, original, ours = _undo.pop()
        if owner.__dict__.get(name) is ours:
            setattr(owner, name, live(original))
        else:  # covered since (a function= fault on it): retired, passes through
            retire(ours)


def _sync_entry(library: Library, original: Callable[..., Any]) -> Callable[..., Any]:
    def _send_single_request(client: Any, request: Any) -> Any:
        __tracebackhide__ = True
        layers = _stack or _guards
        if not layers or retired(_send_single_request):
            return original(client, request)
        return layers[-1].handle(library, client, request, original)

    return replaced(_send_single_request, original)


def _async_entry(library: Library, original: Callable[..., Any]) -> Callable[..., Any]:
    async def _send_single_request(client: Any, request: Any) -> Any:
        __tracebackhide__ = True
        layers = _stack or _guards
        if not layers or retired(_send_single_request):
            return await original(client, request)
        return await layers[-1].ahandle(library, client, request, original)

    return replaced(_send_single_request, original)


def push(layer: Layer) -> None:
    """Route requests through ``layer`` (the newest layer wins), patching on the first."""
    if not _stack and not _guards:
        _install()
    _stack.append(layer)


def remove(layer: Layer) -> None:
    """Stop routing through ``layer``; with no layer left, undo the patch."""
    if layer in _stack:
        _stack.remove(layer)
    if not _stack and not _guards:
        _uninstall()


# The network guard of the running test (`testing._network`): it answers requests only
# while no fault layer is on, and a fault layer asks it about the requests it lets go.
_guards: list[Layer] = []


def push_guard(guard: Layer) -> None:
    """Route requests through ``guard`` while no layer of `push` is on."""
    if not _stack and not _guards:
        _install()
    _guards.append(guard)


def remove_guard(guard: Layer) -> None:
    """Undo `push_guard`; with nothing left, undo the patch."""
    if guard in _guards:
        _guards.remove(guard)
    if not _stack and not _guards:
        _uninstall()


def current_guard() -> Any:
    """The running test's network guard, or None (allowed, or outside pytest)."""
    return _guards[-1] if _guards else None


# ----------------------------------------------------------------------------- outcomes


class Injected:
    """An injected outcome: a response to return or an exception to raise.

    ``later`` is the failure a cut response body raises once the client reads it.
    """

    __slots__ = ("delay", "error", "fault", "later", "response")

    def __init__(
        self,
        response: Any = None,
        error: BaseException | None = None,
        later: BaseException | None = None,
        delay: float | None = None,
    ) -> None:
        self.response = response
        self.error = error
        self.later = later
        #: ``slow_first_token``: the request goes through, its first chunk held this long
        self.delay = delay
        #: the fault behind the outcome (set by the layer)
        self.fault: Any = None


def outcome(
    library: Library,
    request: Any,
    fault: HTTPFault,
    options: dict[str, Any] | None = None,
    routes: Any = None,
) -> Injected:
    """What the client gets for ``fault``: a status or a failure kind (see `HTTP_KINDS`).

    A status answers with the provider's error body and the retry headers asked for; a
    failure raises the library's own exception, or answers with a body that is not
    JSON, is cut mid-way or stalls (the cut and the stall raise once the client reads);
    ``slow_first_token`` lets the request through and holds its first chunk. ``options``
    are ``fault.options`` when the caller has them already.

    A stream cut or stalled carries the start of the answer a script route of ``routes``
    (the ``http_faults`` router) would give, its step kept for the request asked again;
    else the kit's own partial answer.
    """
    module = library.module
    path = request.url.path
    provider = provider_for(path)
    if options is None:
        options = fault.options
    if fault.status is not None:
        return Injected(_response(module, status_served(provider, fault.status, **options)))
    kind = fault.label
    if kind == "timeout":
        return Injected(error=module.ReadTimeout("agentfaults: injected read timeout"))
    if kind == "connect_error":
        return Injected(error=module.ConnectError("agentfaults: injected connect error"))
    if kind == "reset":
        error = module.ReadError("[Errno 104] Connection reset by peer (agentfaults)")
        error.__cause__ = ConnectionResetError(104, "Connection reset by peer")
        return Injected(error=error)
    body = request_body(request)
    stream = wants_stream(provider, body, path)
    if kind == "slow_first_token":
        read = (request.extensions.get("timeout") or {}).get("read")
        delay = fault.delay
        if read is None or delay is None or delay < read:
            return Injected(delay=delay)
        # the client gives up first: it never sees the answer, so (as for a stall) no
        # route answers, and a script's step stays for the request asked again
        failure = module.ReadTimeout(
            f"agentfaults: slow_first_token: no first chunk within the client's read "
            f"timeout ({read:g}s < {delay:g}s)"
        )
        headers = [("content-type", content_type(provider, stream))]
        headers += id_headers(provider, draw_id(provider, None))
        response = module.Response(200, headers=headers, stream=library.cut_stream(b"", failure))
        return Injected(response, later=failure)
    if kind == "malformed_body":
        media_type, data = malformed_body(provider, stream=stream)
        return Injected(module.Response(200, headers=[("content-type", media_type)], content=data))
    model = model_name(body, path)
    if kind == "read_error":
        media_type, data = truncated_body(provider, stream=False, model=model)
        failure = module.ReadError("agentfaults: injected read error after the headers")
        response = module.Response(
            200,
            headers=[("content-type", media_type)],
            stream=library.cut_stream(data, failure),
        )
        return Injected(response, later=failure)
    answer = None
    if stream and routes is not None and kind in ("stall", "truncated_stream"):
        from pytest_agentfaults.testing._script_routes import scripted_stream  # noqa: PLC0415 - only a scripted stream that stalls or is cut needs it

        answer = scripted_stream(routes, request.method, str(request.url), body)
    served = kind_served(kind, provider, stream=stream, model=model, **options, answer=answer)
    if served.then == "end":
        return Injected(_response(module, served))
    if served.then == "cut":
        failure = module.RemoteProtocolError(
            "peer closed connection without sending complete message body: "
            "incomplete chunked read (agentfaults: injected truncated stream)"
        )
    else:
        failure = module.ReadTimeout(
            f"agentfaults: the stream stalled after {len(served.chunks)} event(s); "
            "the client's read timeout fired"
        )
    data = b"".join(served.chunks)
    response = module.Response(
        200, headers=served.headers, stream=library.cut_stream(data, failure)
    )
    return Injected(response, later=failure)


def _response(module: Any, served: Served) -> Any:
    # the headers ``content=`` would give, on a stream read as a server's: 2 us, not 10
    data = b"".join(served.chunks)
    headers = [*served.headers, ("Content-Length", str(len(data)))]
    return module.Response(served.status, headers=headers, stream=module.ByteStream(data))


def slow_stream(module: Any, inner: Any, delay: float) -> Any:
    """``inner`` (a response body), its first chunk held ``delay`` seconds of virtual time.

    Only for a delay within the client's read timeout: past it, `outcome` answers with
    the timeout instead.
    """

    def wait() -> None:
        advance = getattr(default_clock(), "advance", None)
        if advance is not None:  # a real clock: no real wait (no test sleeps)
            advance(delay)

    class SlowStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[misc]
        def __iter__(self) -> Iterator[bytes]:
            wait()
            yield from inner

        async def __aiter__(self) -> AsyncIterator[bytes]:
            wait()
            async for chunk in inner:
                yield chunk

        def close(self) -> None:
            inner.close()

        async def aclose(self) -> None:
            await inner.aclose()

    return SlowStream()


def request_body(request: Any) -> bytes:
    """The bytes of ``request``'s body, or ``b""`` for a streamed upload nobody has read."""
    try:
        content = request.content
    except Exception:  # a streamed upload that nobody has read: no digest
        return b""
    return content if isinstance(content, bytes) else b""
