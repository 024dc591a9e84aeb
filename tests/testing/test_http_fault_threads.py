"""Which threads an http fault reaches: one without ``url=`` only the test's own context.

A background thread that does not carry the test's context (a fixture's health check, a
library's telemetry or heartbeat thread) sends its requests while the test runs. A fault
the test wrote without ``url=`` is about the code under test: if such a thread's request
took it, the fault would count as fired while the code under test never met it, and the
test would pass on a lie. A fault with ``url=`` names its endpoint, and reaches every
thread, as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import httpx
import httpx2
import pytest

from pytest_agentfaults.testing.faults import FaultPlan

API = "https://api.example.com/v1/things"
HEARTBEAT = "https://telemetry.example.com/v1/beat"


def _status_in_bare_thread(library, url: str) -> int:
    """The status a request to ``url`` gets from a thread started without the test's context."""
    statuses: list[int] = []

    def beat() -> None:
        transport = library.MockTransport(lambda request: library.Response(200))
        with library.Client(transport=transport) as client:
            statuses.append(client.get(url).status_code)

    worker = threading.Thread(target=beat)  # a bare Thread starts from an empty context
    worker.start()
    worker.join()
    return statuses[0]


def _mock_client(library):
    return library.Client(transport=library.MockTransport(lambda request: library.Response(200)))


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_fault_without_url_is_not_taken_by_a_background_thread(faults, trace, library):
    faults.http().status(503)
    assert _status_in_bare_thread(library, HEARTBEAT) == 200  # the heartbeat passes
    with _mock_client(library) as client:
        assert client.get(API).status_code == 503  # the code under test meets the fault
    assert [str(fired) for fired in faults.fired] == [f"http:GET {API} 503 (occurrence 1)"]


def test_a_fault_with_url_reaches_every_thread(faults):
    faults.http(url=HEARTBEAT).status(503)
    assert _status_in_bare_thread(httpx, HEARTBEAT) == 503


def test_threads_that_carry_the_tests_context_meet_a_fault_without_url(faults):
    faults.http().status(503).times(2)
    statuses: list[int] = []

    def call() -> None:
        with _mock_client(httpx) as client:
            statuses.append(client.get(API).status_code)

    worker = threading.Thread(target=contextvars.copy_context().run, args=(call,))
    worker.start()
    worker.join()
    asyncio.run(asyncio.to_thread(call))
    assert statuses == [503, 503]


def test_async_tasks_of_the_test_meet_a_fault_without_url(faults):
    faults.http().status(503)

    async def call() -> int:
        transport = httpx.MockTransport(lambda request: httpx.Response(200))
        async with httpx.AsyncClient(transport=transport) as client:
            return (await client.get(API)).status_code

    assert asyncio.run(call()) == 503


def test_a_plan_outside_pytest_faults_its_own_context_only():
    plan = FaultPlan(seed=1)
    plan.http().status(503)
    with plan.active():
        assert _status_in_bare_thread(httpx, HEARTBEAT) == 200
        with _mock_client(httpx) as client:
            assert client.get(API).status_code == 503
