"""The real-network guard of one test: no request leaves the machine unless the test says so.

The plugin starts a `NetworkGuard` for every test that uses the kit, and for every test
under ini ``agentfaults_network = block``; ``@pytest.mark.allow_network`` and ini
``agentfaults_network = allow`` start none. While it is on, an httpx or httpx2 request
that would go out to a non-loopback host, with no fault, route or mock to answer it, is
refused before it is sent:

- a plain client gets `UnmatchedRequestError` (a `NetworkBlockedError`, and an
  `AssertionError`), which nothing of ours retries;
- an official SDK (openai, anthropic: any Stainless client, known by its
  ``x-stainless-*`` headers) retries every exception its transport raises (anthropic
  three times, then "Connection error."), so it gets a final answer instead: a 403 with
  ``x-should-retry: false``, which both SDKs raise at once as ``PermissionDeniedError``
  with the refusal as its message.

With ``sockets=True`` (as the plugin starts it) ``socket.socket.connect`` refuses
non-loopback addresses too, before any packet goes out, for every other client (urllib,
requests, a raw socket), and so do ``sendto`` and ``sendmsg`` with such an address (a
datagram needs no connect); ``socket.getaddrinfo``, ``gethostbyname`` and
``gethostbyname_ex`` refuse a name that is not loopback's, and ``gethostbyaddr`` and
``getnameinfo`` such a host's reverse lookup: no DNS query leaves either.
Loopback (127.0.0.0/8, ``::1``, ``localhost``) is always allowed. The code under test may
swallow any refusal, so a test that passed also fails at teardown, naming each refused
request (`check`). In a test with a fault plan, the
refused attempt is an ``http.request`` of its trace (``refused: True``): recorded by the
plan's HTTP layer, or here for a ``socket.connect`` (`connect_fields`).
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Final, NoReturn

import httpx
from respx.mocks import HTTPCoreMocker
from respx.models import AllMockedAssertionError

from pytest_agentfaults._network_policy import (
    HOW_TO_ALLOW,
    SOCKET_WAY_OUT,
    blocked_message,
    is_loopback,
)
from pytest_agentfaults._redact import LearnedSecrets, redact_text
from pytest_agentfaults.errors import NetworkBlockedError
from pytest_agentfaults.testing._clients import (
    Injected,
    Library,
    push_guard,
    remove_guard,
)
from pytest_agentfaults.testing._current import active_plan
from pytest_agentfaults.testing._handoff import NETWORK, Answer, Via, transport_kind
from pytest_agentfaults.testing._http_fields import (
    REFUSED_HEADER,
    REFUSED_STATUS,
    connect_fields,
    emit_attempt,
    learn_request,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["NetworkGuard", "UnmatchedRequestError", "is_sdk_request"]


class UnmatchedRequestError(NetworkBlockedError, AllMockedAssertionError):
    """A request that no fault, no route and no loopback server answers: refused.

    A `NetworkBlockedError` and an `AssertionError` (respx's ``AllMockedAssertionError``),
    so no retry policy of ours ever retries it: it is a mistake in the test, not a network
    failure. (An SDK, which retries any exception, gets a final 403 instead.)
    """

    def __init__(self, method: str, url: str, test: str | None = None, hint: str = "") -> None:
        self.method = method
        self.url = redact_text(url)
        host = httpx.URL(url).host
        what = f"{self.method} {self.url}"
        super().__init__(
            blocked_message(what, host, test, hint)
            if test is not None
            else (
                f"agentfaults: {what} is not mocked and would reach the network. Answer it "
                "with a route (http_faults.post(url).respond(200, json=...)), a fault "
                "(faults.http(url=...)), or point the client at a loopback server such as "
                "llm_server; requests to 127.0.0.1 and localhost pass through."
            ),
            host=host,
            test=test or "",
        )


def is_sdk_request(request: Any) -> bool:
    """Whether ``request`` comes from a Stainless SDK (openai, anthropic ...)."""
    headers = request.headers
    return "x-stainless-retry-count" in headers or "x-stainless-lang" in headers


class NetworkGuard:
    """Refuses one test's requests to real hosts (see the module docs)."""

    _socket_connect: ClassVar[Any] = None  # socket.socket's own, while one guard patches it
    _socket_key: ClassVar[object | None] = None  # the patch that is on (`_patch_sockets`)

    def __init__(
        self,
        test: str,
        *,
        sockets: bool = False,
        fixturenames: Sequence[str] = (),
        learned: LearnedSecrets | None = None,
    ) -> None:
        self.test = test
        self.sockets = sockets
        #: the test's fixtures: those that mock httpx alone explain a refused httpx2 request
        self.fixturenames = fixturenames
        #: where the credentials of the requests it handles are learned (the session's)
        self.learned = learned
        #: every request refused (``"POST https://... (how)"``, redacted), whatever the
        #: client: the code under test may swallow the refusal, so `check` fails the test
        self.answered: list[str] = []
        #: the scheme and host of the first request refused, for `check`'s advice
        self.origin = ""
        #: why the httpx mocks of the test did not answer them (`unseen_by_mocks`), if so
        self.hint = ""
        #: >0 while a fixture wider than the test runs (`_plugin_scopes`): it is no one
        #: test's, so this test's guard stands aside for it
        self.suspended = 0
        self._patched = False

    # ------------------------------------------------------------------ switching

    def start(self) -> None:
        """Guard httpx and httpx2 (and ``socket.connect`` with ``sockets=True``)."""
        push_guard(self)
        if self.sockets and NetworkGuard._socket_connect is None:
            _patch_sockets(self)
            self._patched = True

    def stop(self) -> None:
        """Undo `start`; safe to call twice."""
        remove_guard(self)
        if self._patched:
            self._patched = False
            _unpatch_sockets()

    def check(self) -> None:
        """Raise `AssertionError` naming every request refused, whatever the client."""
        __tracebackhide__ = True
        if self.answered:
            listed = "\n".join(f"  {line}" for line in self.answered)
            way_out = (  # origin: an httpx or httpx2 request, which faults reach
                "Answer them in the test with http_faults routes or faults, or point the "
                f"client at llm_server; or {HOW_TO_ALLOW}. To test what the app does when a "
                "host cannot be reached, inject that failure: "
                f"@pytest.mark.inject_fault(http='connect_error', url='{self.origin}')."
                if self.origin
                else f"{SOCKET_WAY_OUT}; or {HOW_TO_ALLOW}."
            )
            raise AssertionError(
                f"agentfaults: {self.test} sent requests to real hosts; tests do not reach "
                f"the network, so each was refused before it was sent:\n{listed}\n"
                f"{self.hint.lstrip()}{' ' if self.hint else ''}{way_out}"
            )

    # ------------------------------------------------------------------ one request

    def handle(self, library: Library, client: Any, request: Any, original: Any) -> Any:
        """Send one sync request, or refuse it (recorded, in a test with a trace)."""
        __tracebackhide__ = True
        if not self._refuses(library, client, request):
            return original(client, request)
        plan = active_plan()
        if plan is not None:  # the test's HTTP layer refuses it with us, and records it
            return plan.http_layer().handle(library, client, request, original)
        return original(Via(client, Answer(self.refuse(library.module, request))), request)

    async def ahandle(self, library: Library, client: Any, request: Any, original: Any) -> Any:
        """Send one async request, or refuse it, like `handle`."""
        __tracebackhide__ = True
        if not self._refuses(library, client, request):
            return await original(client, request)
        plan = active_plan()
        if plan is not None:
            return await plan.http_layer().ahandle(library, client, request, original)
        return await original(Via(client, Answer(self.refuse(library.module, request))), request)

    def _refuses(self, library: Library, client: Any, request: Any) -> bool:
        """Whether ``request`` is one to refuse: no loopback, no mock, no router answers it.

        The HTTP layer of the test's plan, switched on for it, asks the same (`refuse`):
        a refusal is an ``http.request`` of the test's trace, as with http faults.
        """
        if self.learned is not None:
            learn_request(request, self.learned)
        if self.suspended or is_loopback(request.url.host):
            return False
        transport = client._transport_for_url(request.url)
        if transport_kind(library.module, library.name, transport) != NETWORK:
            return False  # a MockTransport, pytest-httpx: it answers for itself
        # a respx router of the test answers (http_faults guards its own)
        return not library.mocker.routers

    def refuse(self, module: Any, request: Any, why: str = "") -> Injected:
        """The refusal of ``request``, in the types of ``module`` (httpx or httpx2).

        An SDK's request gets the final 403 (and is noted for `check`); any other an
        error to raise. ``why`` (a sentence) says what of the test did not answer it.
        """
        hint = self.unseen_by_mocks(module) + why
        host = request.url.host
        self.origin = self.origin or f"{request.url.scheme}://{host}"
        what = f"{request.method} {redact_text(str(request.url))}"
        if not is_sdk_request(request):
            error = UnmatchedRequestError(request.method, str(request.url), self.test, hint)
            self.answered.append(f"{what} ({type(error).__name__})")
            return Injected(error=error)
        message = blocked_message(what, host, self.test, hint)
        self.answered.append(f"{what} (a 403 with x-should-retry: false, which no SDK retries)")
        self.hint = self.hint or hint
        body = {
            "type": "error",
            "error": {"type": "network_blocked", "code": "network_blocked", "message": message},
        }
        headers = [
            ("content-type", "application/json"),
            ("x-should-retry", "false"),
            (REFUSED_HEADER, "network"),  # the trace reads it: refused, never sent
        ]
        return Injected(
            module.Response(REFUSED_STATUS, headers=headers, content=json.dumps(body).encode())
        )

    def unseen_by_mocks(self, module: Any) -> str:
        """Why the test's httpx mocks did not answer a request of ``module`` ('' if no such).

        respx's default router and pytest-httpx patch httpx; the official SDKs send through
        httpx2, so a user's ``respx_mock`` or ``httpx_mock`` route for an SDK's URL is never
        asked. (A respx router on httpx2, ``respx.mock(using="httpcore2")``, would have
        answered: no refusal then.)
        """
        if module.__name__ != "httpx2":
            return ""
        mocks = [name for name in _HTTPX_MOCKS if name in self.fixturenames]
        if not mocks and HTTPCoreMocker.routers:
            mocks = ["respx.mock"]
        if not mocks:
            return ""
        one = len(mocks) == 1
        return (
            f" {' and '.join(mocks)} {'mocks' if one else 'mock'} httpx, not httpx2, which "
            f"sent this request (as the official SDKs do): {'its' if one else 'their'} "
            "routes do not see it; http_faults routes see both."
        )


#: the fixtures of respx and pytest-httpx, which mock httpx (not httpx2)
_HTTPX_MOCKS: Final = ("respx_mock", "httpx_mock")


# ----------------------------------------------------------------------------- sockets


def _patch_sockets(guard: NetworkGuard) -> None:
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex
    original_sendto = socket.socket.sendto
    original_sendmsg = socket.socket.sendmsg
    lookups = {name: getattr(socket, name) for name in _LOOKUPS}

    # A longer-lived patch (a module-scoped monkeypatch) can wrap these wrappers and put
    # them back after this guard stopped, where they outlive its test: only while this
    # patch is the one on do they decide anything; after, they call straight through, and
    # the guard of the running test (if any) decides from its own wrapper above them.
    # Which patch is on is told by ``key``, not by the tuple that holds the wrappers: the
    # wrappers holding that tuple would make a cycle, and every test that uses the kit would
    # leave its guard and them to the garbage collector.
    key = object()

    def connect(sock: socket.socket, address: Any) -> None:
        __tracebackhide__ = True
        if NetworkGuard._socket_key is key:
            _check_address(guard, sock, address)
        original_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        __tracebackhide__ = True
        if NetworkGuard._socket_key is key:
            _check_address(guard, sock, address)
        return original_connect_ex(sock, address)

    # a datagram needs no connect: its address is the last argument of sendto (``data,
    # address`` or ``data, flags, address``) and the fourth of sendmsg, if given
    def sendto(sock: socket.socket, *args: Any) -> int:
        __tracebackhide__ = True
        if NetworkGuard._socket_key is key and args:
            _check_address(guard, sock, args[-1], "sendto")
        return original_sendto(sock, *args)

    def sendmsg(sock: socket.socket, *args: Any) -> int:
        __tracebackhide__ = True
        if NetworkGuard._socket_key is key and len(args) > 3:  # the address, if given
            _check_address(guard, sock, args[3], "sendmsg")
        return original_sendmsg(sock, *args)

    def lookup(name: str) -> Any:
        original = lookups[name]
        check = _LOOKUPS[name]

        def looked_up(host: Any, *args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            if NetworkGuard._socket_key is key:
                check(guard, name, host, args[:1])
            return original(host, *args, **kwargs)

        return looked_up

    own = vars(socket.socket)
    # (owner, name, ours, what was there: the owner's own attribute, or None when inherited)
    NetworkGuard._socket_connect = (
        (socket.socket, "connect", connect, own.get("connect")),
        (socket.socket, "connect_ex", connect_ex, own.get("connect_ex")),
        (socket.socket, "sendto", sendto, own.get("sendto")),
        (socket.socket, "sendmsg", sendmsg, own.get("sendmsg")),
        *((socket, name, lookup(name), before) for name, before in lookups.items()),
    )
    NetworkGuard._socket_key = key
    for owner, name, ours, _ in NetworkGuard._socket_connect:
        setattr(owner, name, ours)


def _unpatch_sockets() -> None:
    patched, NetworkGuard._socket_connect = NetworkGuard._socket_connect, None
    NetworkGuard._socket_key = None
    for owner, name, ours, before in patched or ():
        if vars(owner).get(name) is not ours:
            continue  # replaced since (the test's own patch, undone already): leave theirs
        if before is None:
            delattr(owner, name)  # inherited from _socket.socket: show it again
        else:
            setattr(owner, name, before)


_LOCAL_FAMILIES: Final = tuple(
    family for family in (getattr(socket, "AF_UNIX", None),) if family is not None
)


def _check_address(
    guard: NetworkGuard, sock: socket.socket, address: Any, call: str = "connect"
) -> None:
    """Refuse a connect to (or a datagram sent to, ``call``) a host that is not loopback."""
    __tracebackhide__ = True
    if guard.suspended or sock.family in _LOCAL_FAMILIES:
        return
    if not isinstance(address, tuple) or not address:
        return
    host = str(address[0])
    if is_loopback(host) or host in ("0.0.0.0", "::"):  # noqa: S104 - compared, never bound
        return
    port = address[1] if len(address) > 1 else "?"
    if call == "connect":
        # closed here: the caller (socket.create_connection) only closes on an OSError;
        # a datagram socket stays open for its next send, as after any failed send
        sock.close()
    _refuse(guard, f"socket.{call}(({host!r}, {port}))", host, port)


def _check_name(guard: NetworkGuard, function: str, host: Any, port: tuple[Any, ...]) -> None:
    """Refuse a lookup of ``host`` that would ask a resolver: a name, not loopback's."""
    __tracebackhide__ = True
    if guard.suspended or not host or not isinstance(host, (str, bytes)):
        return  # None or "" (the wildcard, this machine), or no host: the resolver's to say
    # bytes go to the resolver as they are: any that are no text are a name all the same
    name = (host.decode("utf-8", "replace") if isinstance(host, bytes) else host).rstrip(".")
    if is_loopback(name):
        return
    try:  # an address is not looked up: its connect, if any, decides
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        pass
    else:
        return
    what = f"socket.{function}({', '.join(repr(part) for part in (host, *port))})"
    _refuse(guard, what, name, port[0] if port else "?")


def _check_reverse(guard: NetworkGuard, function: str, host: Any, port: tuple[Any, ...]) -> None:
    """Refuse a reverse lookup (a PTR query) of an address or name that is not loopback's.

    ``gethostbyaddr(host)``, and ``getnameinfo(sockaddr, flags)`` unless its flags ask for
    the address as numbers (``NI_NUMERICHOST``: no query).
    """
    __tracebackhide__ = True
    if guard.suspended:
        return
    if function == "getnameinfo":
        if not isinstance(host, tuple) or not host or (port and port[0] & _NUMERIC_HOST):
            return  # not an address, or no lookup asked: the function's own to answer
        shown = f"socket.getnameinfo({host!r}, {port[0]!r})" if port else ""
        host, port = host[0], host[1:2]
    else:
        shown = ""
    if not host or not isinstance(host, (str, bytes)):
        return  # "" (this machine), or no host: the resolver's to say
    name = (host.decode("utf-8", "replace") if isinstance(host, bytes) else host).rstrip(".")
    if is_loopback(name):
        return
    what = shown or f"socket.{function}({', '.join(repr(part) for part in (host, *port))})"
    _refuse(guard, what, name, port[0] if port else "?")


_Check = Callable[["NetworkGuard", str, Any, tuple[Any, ...]], None]

#: the `socket` functions that ask a resolver, each with its rule: a forward lookup of a
#: name (a DNS query for a name not in the hosts file), a reverse lookup of an address (a
#: PTR query: ``getfqdn`` goes through ``gethostbyaddr``)
_LOOKUPS: Final[dict[str, _Check]] = {
    "getaddrinfo": _check_name,
    "gethostbyname": _check_name,
    "gethostbyname_ex": _check_name,
    "gethostbyaddr": _check_reverse,
    "getnameinfo": _check_reverse,
}
_NUMERIC_HOST: Final = socket.NI_NUMERICHOST


def _refuse(guard: NetworkGuard, what: str, host: str, port: object) -> NoReturn:
    """Refuse ``what`` (a connect or a lookup of ``host``): noted for `check`, traced, raised."""
    __tracebackhide__ = True
    guard.answered.append(f"{what} (NetworkBlockedError)")
    error = NetworkBlockedError(
        blocked_message(what, host, guard.test, socket_client=True), host=host, test=guard.test
    )
    plan = active_plan()
    if plan is not None:  # in the test's trace, as a refused httpx request is
        emit_attempt(plan, "http.request", connect_fields(host, port, error, what), ("url",))
    raise error
