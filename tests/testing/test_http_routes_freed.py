"""The http_faults router's routes and call lists are freed when a test lets go of them.

respx's call lists name their route, which would make route, lists and every request
and answer recorded a cycle that only the garbage collector frees (`_light_routes.Calls`
names it weakly); snapshots taken before any call share one empty list.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any

import httpx
import httpx2

from pytest_agentfaults.testing._light_routes import NO_CALLS, LightRoute, resolve_routes
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.http import HttpFaultRouter

API = "https://api.example.com/v1/things"


def test_a_route_and_its_call_lists_are_freed_without_the_garbage_collector():
    # a route's call lists name the route (as respx's do); held strongly, route and lists
    # would be a cycle that only a collection frees, with every request and answer recorded
    gc.collect()
    gc.disable()
    try:
        route = LightRoute(method="GET", url=API)
        route.respond(200, content=b"ok")
        route.snapshot()
        request = httpx.Request("GET", API)
        route.calls.record(request, route.match(request))
        gone = weakref.ref(route)
        del route
        assert gone() is None
    finally:
        gc.enable()


def test_snapshots_before_any_call_share_one_list_that_rollbacks_never_change():
    router = HttpFaultRouter()
    router.start()
    try:
        route = router.get(API).respond(200, content=b"ok")
        route.snapshot()  # before any call: the shared empty list
        request = httpx.Request("GET", API)
        resolve_routes(router, request)
        assert len(route.calls) == 1
        assert len(router.calls) == 1
        route.rollback()
        assert route.calls == []
        assert route.calls is not NO_CALLS
        route.calls.record(request, None)
        assert NO_CALLS == []  # a rollback copies out of it: it stays empty
    finally:
        router.stop()
    assert router.calls == []
    assert list(router.routes) == []
    assert NO_CALLS == []


def test_a_faulted_and_routed_test_leaves_nothing_for_the_garbage_collector():
    # a plan's HTTP layer, its router and route, the faults fired and the answers recorded
    # are freed by reference counting when the test ends: no collection per test. httpx2
    # (the SDKs' client): an httpx response and its bound stream refer to each other.

    def one_test(client: Any) -> None:
        plan = FaultPlan(seed=1)
        plan.http(url=API).status(503).times(1)
        with plan.active():
            plan.http_layer().router.get(API).respond(200, content=b"ok")
            assert client.get(API).status_code == 503
            assert client.get(API).content == b"ok"
        plan.check()

    with httpx2.Client() as client:  # a session's (building one makes cycles of its own)
        one_test(client)  # the first imports and remembers what it needs
        # Only this thread runs while counting: the collector counts every thread's garbage,
        # and a server or an earlier test's daemon thread may still be making some.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(60.0)
        gc.collect()
        gc.disable()
        try:
            for _ in range(3):
                one_test(client)
            assert gc.collect() == 0
        finally:
            gc.enable()
            sys.setswitchinterval(interval)


def test_a_route_call_list_as_a_mock_is_named_for_its_route():
    route = LightRoute(method="GET", url=API)
    route.snapshot()
    calls = route.calls
    assert calls._mock_name is route  # the mock part, built now, as respx names it
    route.rollback()
    assert route.calls._mock_name is route
