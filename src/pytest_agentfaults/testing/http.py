"""In-process HTTP faults for httpx and httpx2 clients, and the ``http_faults`` router.

The official openai and anthropic SDKs send requests through httpx2 (transport httpcore2);
our own model clients and most tools use httpx (httpcore). Both are covered, in two
layers, outermost first::

    client (httpx / httpx2 Client, AsyncClient, the official SDKs)
      -> Client._send_single_request    HttpInjector: the plan's http faults, one
                                        http.request event per attempt, the network guard;
                                        the http_faults routes when theirs is the only
                                        respx router (`_route_answer`: same answers, the
                                        pool and respx's conversions skipped)
      -> the client's transport         a user's mock answers here: pytest-httpx's
                                        patched HTTPTransport, a MockTransport, respx's
                                        ``using="httpx"`` transport
      -> ConnectionPool.handle_request  respx mockers: HTTPCoreMocker (httpx) and
                                        HTTPCore2Mocker (httpx2), where the http_faults
                                        router and any respx router of the test answer
                                        (patched once a request goes on this far)
      -> the socket

So faults come before every mock and route, and a faulted request reaches none of them;
the request after it goes on to whatever the test's own mock installed. A fault raises
the exception of the library the client uses (``httpx2.ReadTimeout`` for an httpx2
client), or answers as a server would (a status with ``Retry-After``, an HTML body, a
stream cut mid-way). An injected failure takes no time: a ``"timeout"`` fails at once;
the waits that matter are the client's backoff, which the test's virtual clock records.

What happens to a request no fault hits (the pass-through policy):

0. when the client's transport is not the library's own network transport (a
   MockTransport, pytest-httpx, respx's ``using="httpx"``, a vcrpy cassette): it goes to
   that transport, which answers for itself;
1. to a running `LLMServer`: it goes to the server untouched, which serves the faults
   and records the events itself;
2. when a respx router is active for the client's library (``http_faults``, or the
   test's own ``respx.mock``): the routers answer; a request that matches no route and
   is not to loopback is refused as in 4., naming the routes it missed;
3. to loopback (127.0.0.0/8, ``localhost``, ``::1``): it goes to the real server the
   test started;
4. anything else is refused by the test's network guard (`testing._network`): a plain
   client gets `NetworkBlockedError`, an SDK a final 403 it does not retry, and the test
   fails at teardown; with no guard on (``plan.active()`` outside pytest), it raises
   `UnmatchedRequestError`, an `AssertionError` naming the request. No test reaches the
   network by accident, and no retry policy retries the mistake.

The layer is on only while a plan that has http faults is active, or while a test uses
``http_faults``. httpx2 and httpcore2 are imported only when installed, and only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import httpx
import respx
from respx.models import AllMockedAssertionError, PassThrough, Route, RouteList

from pytest_agentfaults._network_policy import is_loopback
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._clients import (
    Injected,
    Library,
    current_guard,
    libraries,
    outcome,
    push,
    remove,
    slow_stream,
)
from pytest_agentfaults.testing._current import current_plan, sitting_out
from pytest_agentfaults.testing._fast_mock import patch_below
from pytest_agentfaults.testing._handoff import (
    NETWORK,
    OWN,
    Answer,
    Via,
    serves_an_app,
    transport_kind,
    transport_name,
)
from pytest_agentfaults.testing._http_fields import (
    Digests,
    attempt_fields,
    emit_attempt,
    fault_facts,
    why_unmatched,
)
from pytest_agentfaults.testing._httpd import serves_port
from pytest_agentfaults.testing._light_routes import NO_CALLS, Calls, LightRoute, resolve_routes
from pytest_agentfaults.testing._network import UnmatchedRequestError, is_sdk_request
from pytest_agentfaults.testing._route_answer import Routed, passing_through
from pytest_agentfaults.testing._routes import (
    AllCalledSwitch,
    unmatched_routes_note,
    unused_routes_message,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from respx.patterns import Pattern

    from pytest_agentfaults.testing.faults import FaultPlan, HTTPFault
    from pytest_agentfaults.testing.scripted import ScriptedModel
    from pytest_agentfaults.testing.steps import Step

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["HttpFaultRouter", "HttpInjector", "UnmatchedRequestError", "is_loopback"]

# ----------------------------------------------------------------------------- the layer

_SILENT: Final = "silent"  # pass through, unrecorded (the loopback LLMServer records)
_PASS: Final = "pass"  # noqa: S105 - pass through and record the outcome


class HttpInjector:
    """The in-process HTTP layer of one active `FaultPlan` (see the module docs).

    Made by `FaultPlan.http_layer`; `router` is the ``http_faults`` fixture.
    """

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan
        self._router: HttpFaultRouter | None = None
        self._digests: Digests = {}  # this test's request bodies' digests (`attempt_fields`)
        #: this test's request URLs as shown, and whether loopback (`_decide`)
        self._shown: dict[Any, tuple[str, bool]] = {}

    def start(self) -> None:
        """Route httpx and httpx2 requests through this layer (the newest layer wins)."""
        push(self)

    def stop(self) -> None:
        """Undo `start`, and stop the router (noting its unused routes for `FaultPlan.check`).

        The layer comes off whatever the report raises (a route's value whose repr fails):
        left on, it would answer later tests with this test's faults.
        """
        try:
            if self._router is not None:
                router, self._router = self._router, None
                try:
                    self.plan.unused_routes = router.unused_report()
                finally:
                    router.stop()
        finally:
            remove(self)

    @property
    def router(self) -> HttpFaultRouter:
        """The respx router for this plan's test, started on first use."""
        if self._router is None:
            router = HttpFaultRouter()
            router.start()
            self._router = router
        return self._router

    # ------------------------------------------------------------------ one request

    def handle(self, library: Library, client: Any, request: Any, original: Any) -> Any:
        """Send one sync request: a fault, the client's transport, or the guard."""
        __tracebackhide__ = True
        decision, url = self._decide(library, client, request)
        if decision is _SILENT:
            return original(client, request)
        if isinstance(decision, Injected) and decision.delay is not None:
            return self._slow(library, request, url, original(client, request), decision)
        if isinstance(decision, Injected):
            return original(Via(client, Answer(decision)), request)
        try:
            response = original(client if decision is _PASS else Via(client, decision), request)
        except Exception as exc:
            self._record(request, url, error=exc)
            raise
        self._record(request, url, response=response)
        return response

    async def ahandle(self, library: Library, client: Any, request: Any, original: Any) -> Any:
        """Send one async request, like `handle`."""
        __tracebackhide__ = True
        decision, url = self._decide(library, client, request)
        if decision is _SILENT:
            return await original(client, request)
        if isinstance(decision, Injected) and decision.delay is not None:
            response = await original(client, request)
            return self._slow(library, request, url, response, decision)
        if isinstance(decision, Injected):
            return await original(Via(client, Answer(decision)), request)
        try:
            target = client if decision is _PASS else Via(client, decision)
            response = await original(target, request)
        except Exception as exc:
            self._record(request, url, error=exc)
            raise
        self._record(request, url, response=response)
        return response

    def _decide(self, library: Library, client: Any, request: Any) -> tuple[Any, str]:
        """What to do with ``request``, and its URL as events show it (``str(url)``, once)."""
        __tracebackhide__ = True
        if sitting_out():  # a wider fixture's request: no one test's (`_plugin_scopes`)
            return _SILENT, ""
        url = request.url
        transport = client._transport_for_url(url)
        kind = transport_kind(library.module, library.name, transport)
        network = kind == NETWORK
        # ``str(url)``, and whether its host is loopback, of a URL parsed before (its
        # parts, a value: both follow from them) in this test
        parts = getattr(url, "_uri_reference", None)
        known = self._shown.get(parts) if parts is not None else None
        if known is None:
            known = (str(url), is_loopback(url.host))
            if parts is not None and len(self._shown) < 64:
                self._shown[parts] = known
        shown, loopback = known
        # an HTTPTransport, patched or not, hands a loopback request to the server (the
        # llm_server fixture refuses a pytest-httpx that would not): the server serves
        # the faults, and the request counts once
        if kind != OWN and loopback and serves_port(url):
            patch_below(library.mocker)
            return _SILENT, ""
        method = request.method
        plan = self.plan  # a fault without url= is only for the test's own context, and
        # not for the test's own calls to an app it serves in process (`serves_an_app`)
        app = kind == OWN and serves_an_app(transport) and not is_sdk_request(request)
        plan.app_requests += app
        hit = plan.next_http_fault(method, shown, foreign=app or current_plan() is not plan)
        if hit is not None:
            outcome = self._inject(library, request, shown, *hit)
            if outcome.delay is not None:  # recorded once answered (`_slow`)
                patch_below(library.mocker)  # it goes on to the transport
                outcome.fault = hit[0]
                return outcome, shown
            failure = outcome.error or outcome.later
            self._record(request, shown, response=outcome.response, error=failure, fault=hit[0])
            return outcome, shown
        router = self._router
        if router is not None:
            if not network:
                router.note_bypass(request, transport)
            elif library.mocker.routers == [router]:  # else respx's mocker asks them all
                return Routed(library, router, transport), shown
        if not network or library.mocker.routers or loopback:
            patch_below(library.mocker)
            return _PASS, shown
        guard = current_guard()
        refused = (
            guard.refuse(library.module, request, why_unmatched(method, shown))
            if guard is not None
            else Injected(error=UnmatchedRequestError(method, shown))
        )
        self._record(request, shown, response=refused.response, error=refused.error)
        return refused, shown

    def _inject(
        self, library: Library, request: Any, url: str, fault: HTTPFault, occurrence: int
    ) -> Injected:
        __tracebackhide__ = True
        fault.check()
        method = request.method
        kind, options, description = fault_facts(fault)
        # the plan and the recorder redact what they keep
        self.plan.record(fault, f"{method} {url}", kind, occurrence)
        self._emit(
            "http.fault",
            {
                "method": method,
                "url": url,
                "status": fault.status or kind,
                "retry_after": fault.retry_after,
                "occurrence": occurrence,
                "detail": f"{method} {url}: {description}",
            },
            ("url",),
        )
        return outcome(library, request, fault, options, self._router)

    def _slow(self, library: Library, request: Any, url: str, response: Any, slow: Injected) -> Any:
        """``response`` with its first chunk held (``slow_first_token``), recorded.

        The delay is within the client's read timeout (`outcome` answers one past it).
        """
        delay = float(slow.delay or 0.0)
        response.stream = slow_stream(library.module, response.stream, delay)
        self._record(request, url, response=response, fault=slow.fault)
        return response

    # ------------------------------------------------------------------ events

    def _record(
        self,
        request: Any,
        url: str,
        *,
        response: Any = None,
        error: BaseException | None = None,
        fault: HTTPFault | None = None,
    ) -> None:
        fields = attempt_fields(
            request, url, response, error, fault, self._digests, self.plan.learned
        )
        self._emit("http.request", fields, ("url", "client"))

    def _emit(self, type: str, fields: dict[str, Any], texts: tuple[str, ...]) -> None:
        """Record ``fields`` as a ``type`` event of the plan's (`emit_attempt`)."""
        emit_attempt(self.plan, type, fields, texts)


# ----------------------------------------------------------------------------- the router


class HttpFaultRouter(respx.Router):
    """The ``http_faults`` fixture: a respx router that sees httpx AND httpx2 clients.

    Routes work as in respx (``http_faults.post(url).respond(200, json=...)``,
    ``route.calls``); the test's http faults apply first. A request matching no route
    raises `UnmatchedRequestError`, except one to loopback, which passes through to the
    real local server. A route never requested fails the test at teardown, unless the
    test sets ``http_faults.assert_all_called = False``; ``http_faults.assert_all_called()``
    checks at once, as in respx.

    `script` answers a provider's endpoint with scripted steps in its wire format, so no
    test hand-writes a provider's JSON::

        http_faults.script("anthropic", [call_tool("get_weather", city="Paris"), say("Sunny.")])
    """

    def __init__(self) -> None:
        # respx.Router.__init__(assert_all_called=False, assert_all_mocked=True), with the
        # cheap call lists of `_light_routes` (a router is built for every test using it)
        self._assert_all_called = False
        self._assert_all_mocked = True
        self._bases = {}
        self.routes = RouteList()
        self.calls = Calls()
        self._snapshots = []
        self.snapshot()
        self._mockers = _mockers or _know_mockers()
        self._routes_must_be_called = True
        #: requests answered by a client's own transport, which routes never see
        self.bypassed: list[tuple[Any, str]] = []

    def __repr__(self) -> str:
        # a failure shows the fixture as an argument of the user's test: what it holds
        routes, calls = len(self.routes), len(self.calls)
        return (
            f"<http_faults: {routes} route{'s' * (routes != 1)}, {calls} call{'s' * (calls != 1)}>"
        )

    def route(self, *patterns: Pattern, name: str | None = None, **lookups: Any) -> Route:
        """As respx's, building a `LightRoute` (the same respx ``Route``, cheaper to make)."""
        return self.add(LightRoute(*patterns, **lookups), name=name)

    def snapshot(self) -> None:
        """As respx's, keeping the calls in a `Calls` (a router's first two: `_NOTHING_YET`)."""
        if not (self.routes._routes or self.calls):
            self._snapshots.append(_NOTHING_YET)
            return
        routes = RouteList(self.routes)
        self._snapshots.append((routes, Calls(self.calls)))
        for route in routes:
            route.snapshot()

    def unused_report(self) -> str | None:
        """The teardown failure over routes never requested, or None (all used, or opted out)."""
        unused = [route for route in self.routes if not route.called]
        if not unused or not self._routes_must_be_called:
            return None
        return unused_routes_message(unused, self.bypassed)

    def note_bypass(self, request: Any, transport: Any) -> None:
        """Note a request that a client's own transport answers (see `assert_all_called`)."""
        if len(self.bypassed) < 50:  # enough to explain an unused route
            self.bypassed.append((request, transport_name(transport)))

    def script(
        self,
        provider: str,
        steps: Sequence[Step | str],
        *,
        url: str | None = None,
        strict: bool = True,
    ) -> ScriptedModel:
        """Answer ``provider``'s endpoint with scripted ``steps``, in its wire format.

        ``provider`` is ``"openai"`` (chat completions), ``"openai-responses"``,
        ``"anthropic"``, ``"ollama"`` or ``"gemini"``; on the official endpoint, or the
        ``url=`` of another (a client's base URL, or the endpoint's). Returns the
        `ScriptedModel` behind it (``.requests``); leftovers fail unless ``strict=False``.
        """
        __tracebackhide__ = True
        from pytest_agentfaults.testing._script_routes import script_route  # noqa: PLC0415 - only script() needs the scripted routes

        return script_route(self, provider, steps, url=url, strict=strict)

    @property
    def assert_all_called(self) -> AllCalledSwitch:
        """True (the default) while unused routes fail the test; call it to check now."""
        return AllCalledSwitch(self)

    @assert_all_called.setter
    def assert_all_called(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise UsageError(
                f"http_faults.assert_all_called = {value!r}: give True (unused routes fail "
                "the test, the default) or False (they may go unused)"
            )
        self._routes_must_be_called = value

    def start(self) -> None:
        """Register with the httpcore and httpcore2 mockers (they patch on demand)."""
        self.snapshot()
        for mocker in self._mockers:
            mocker.register(self)

    def stop(self) -> None:
        """Unregister; a mocker with no router left stops patching."""
        for mocker in self._mockers:
            mocker.unregister(self)
            mocker.stop()
        self.rollback()

    def handler(self, request: httpx.Request) -> httpx.Response:
        """Answer from the routes; an unrouted request is guarded (see the class docs)."""
        __tracebackhide__ = True
        if passing_through.get() or sitting_out():  # let through by `Routed` already, or
            # a wider fixture's request (`sitting_out`): not this test's to answer
            raise PassThrough("passes through", request=request, origin=_ANY)
        try:
            return resolve_routes(self, request).response  # type: ignore[return-value]
        except AllMockedAssertionError:
            unrouted = self._unrouted(request)
            if isinstance(unrouted, _Refused):
                return unrouted.response
            raise unrouted from None

    async def async_handler(self, request: httpx.Request) -> httpx.Response:
        """Answer from the routes, for async clients."""
        __tracebackhide__ = True
        if passing_through.get() or sitting_out():  # as `handler`
            raise PassThrough("passes through", request=request, origin=_ANY)
        try:
            return await super().async_handler(request)
        except AllMockedAssertionError:
            unrouted = self._unrouted(request)
            if isinstance(unrouted, _Refused):
                return unrouted.response
            raise unrouted from None

    def _unrouted(self, request: httpx.Request) -> Exception | _Refused:
        others = any(router is not self for m in self._mockers for router in m.routers)
        if is_loopback(request.url.host) and not others:
            return PassThrough(
                f"loopback request passes through: {request!r}",
                request=request,
                origin=respx.Route(),
            )
        guard = current_guard()
        if guard is None:
            return UnmatchedRequestError(request.method, str(request.url))
        why = why_unmatched(request.method, str(request.url)) + unmatched_routes_note(self.routes)
        refused = guard.refuse(httpx, request, why)
        return refused.error if refused.error is not None else _Refused(refused.response)


_ANY: Final = respx.Route()  # the origin of a pass-through no route asked for

#: respx's mockers of the libraries (`libraries`), once known: every router registers
#: with them
_mockers: tuple[Any, ...] = ()


def _know_mockers() -> tuple[Any, ...]:
    global _mockers  # what `libraries` found, kept as it keeps them
    _mockers = tuple(library.mocker for library in libraries())
    return _mockers


#: a snapshot of no routes and no calls (what a router's `snapshot` takes when built and
#: started): one for every router, as `rollback` only copies out of it
_NOTHING_YET: Final = (RouteList(), NO_CALLS)


class _Refused:
    """The network guard's final answer to an SDK's unrouted request (not an exception)."""

    __slots__ = ("response",)

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
