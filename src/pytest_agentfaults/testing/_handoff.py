"""Where an httpx / httpx2 client hands a request to its transport: the HTTP layer's seam.

`pytest_agentfaults.testing.http` hooks ``Client._send_single_request``, above every
transport, so its faults fire before any mock the test installed. These helpers say what
the client's transport is, and give an injected outcome through the client's own code.
"""

from __future__ import annotations

from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "NETWORK",
    "OWN",
    "PATCHED",
    "Answer",
    "Via",
    "serves_an_app",
    "transport_kind",
    "transport_name",
]

NETWORK: Final = "network"  # the library's own HTTPTransport: the socket, or respx below it
PATCHED: Final = "patched"  # the library's HTTPTransport, patched by another (pytest-httpx)
OWN: Final = "own"  # a transport of the client's own (MockTransport, respx's "httpx")


def transport_kind(module: Any, library: str, transport: Any) -> str:
    """What answers a request the layer lets through: `NETWORK`, `PATCHED` or `OWN`.

    Only the library's own, unpatched network transport is guarded; anything else (a
    MockTransport, pytest-httpx's patched HTTPTransport, respx's ``using="httpx"``
    transport, vcrpy's cassette, a user's subclass) answers by itself, and the request
    goes on to it. A patch is known by the module its code is in, not by its name: vcrpy's
    wrapper takes the library's ``__module__`` and name (``functools.wraps``).
    """
    if isinstance(transport, module.HTTPTransport):
        method = type(transport).handle_request
    elif isinstance(transport, module.AsyncHTTPTransport):
        method = type(transport).handle_async_request
    else:
        return OWN
    if _defined_in(method).partition(".")[0] == library:
        return NETWORK
    return PATCHED


def _defined_in(method: Any) -> str:
    """The module whose code ``method`` runs: its globals', whatever ``__module__`` says."""
    defined = getattr(method, "__globals__", {}).get("__name__")
    return str(defined if defined is not None else getattr(method, "__module__", ""))


#: Transports that serve an app in process: the test's calls to the app under test.
_APP_TRANSPORTS: Final = frozenset({"ASGITransport", "WSGITransport"})
_APP_MODULES: Final = ("starlette.testclient", "litestar.testing")


def serves_an_app(transport: Any) -> bool:
    """Whether ``transport`` hands requests to an app in process, not to a host.

    httpx's and httpx2's ``ASGITransport`` and ``WSGITransport`` (and subclasses), and
    the test clients' own (Starlette's and FastAPI's ``TestClient``, Litestar's).
    """
    return any(
        base.__name__ in _APP_TRANSPORTS or base.__module__.startswith(_APP_MODULES)
        for base in type(transport).__mro__
    )


def transport_name(transport: Any) -> str:
    """``httpx.MockTransport``, or ``HTTPTransport as patched by pytest_httpx``."""
    kind = type(transport)
    for method_name in ("handle_request", "handle_async_request"):
        method = getattr(kind, method_name, None)
        module = _defined_in(method) if method is not None else ""
        if module and module.partition(".")[0] != kind.__module__.partition(".")[0]:
            return f"{kind.__name__} as patched by {module.partition('.')[0]}"
    return f"{kind.__module__.partition('.')[0]}.{kind.__qualname__}"


class Answer:
    """A one-request transport that gives an injected outcome (see `Via`).

    ``outcome`` has ``response`` and ``error``: the error is raised, else the response
    returned.
    """

    __slots__ = ("outcome",)

    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    def handle_request(self, request: Any) -> Any:
        """Give the outcome."""
        __tracebackhide__ = True  # the error is the client's: its frames and the user's show
        if self.outcome.error is not None:
            raise self.outcome.error
        return self.outcome.response

    async def handle_async_request(self, request: Any) -> Any:
        """Give the outcome, to an async client."""
        __tracebackhide__ = True
        return self.handle_request(request)


class Via:
    """The client, seen through another transport for one request.

    The client's own ``_send_single_request`` runs on it, so an injected response is
    finished exactly as a real one (request, elapsed, cookies, encoding, logging), and an
    injected error gets the request attached as httpx does.
    """

    __slots__ = ("_client", "_transport")

    def __init__(self, client: Any, transport: Answer) -> None:
        self._client = client
        self._transport = transport

    def _transport_for_url(self, url: Any) -> Answer:
        return self._transport

    # What ``_send_single_request`` reads of its client besides the transport, spelled
    # out: through `__getattr__`, each read first fails (an AttributeError made and
    # dropped), for every faulted or routed request.
    @property
    def cookies(self) -> Any:
        """The client's cookie jar (the answer's cookies go there)."""
        return self._client.cookies

    @property
    def _default_encoding(self) -> Any:
        return self._client._default_encoding  # noqa: SLF001 - what the client reads of itself

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def __repr__(self) -> str:
        # what a failure shows as ``self`` of the client's frame: the user's client
        return repr(self._client)
