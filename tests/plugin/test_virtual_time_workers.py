"""Work a kit test hands to a worker thread, with its context, waits in virtual time.

pydantic-ai runs a sync tool with ``anyio.to_thread.run_sync``, LangChain runs tools and
callbacks in a thread pool through ``copy_context().run``, and apps call
``asyncio.to_thread``: each carries the test's context to the worker. Sleeps there (a
tool's own backoff, an SDK's retry wait) are the test's waits: virtual and recorded. A
thread that carries no context of the test (a heartbeat, a server, ``run_in_executor``,
which copies none) keeps real time, and so does a worker after its test has ended.
Realness is checked by recording: a real sleep is in no clock's ``sleeps``.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

HEAD = """
import asyncio, contextvars, threading, time
from concurrent.futures import ThreadPoolExecutor

import anyio
import anyio.to_thread
import pytest
"""


def test_waits_of_work_handed_over_with_the_tests_context_are_virtual(pytester):
    pytester.makepyfile(
        HEAD
        + """
def test_asyncio_to_thread(virtual_clock):
    async def main():
        await asyncio.to_thread(time.sleep, 30)
    started = time.perf_counter()
    asyncio.run(main())
    assert time.perf_counter() - started < 5
    assert virtual_clock.sleeps == [30]
    assert virtual_clock.now() == 30

def test_anyio_to_thread(virtual_clock):
    async def main():
        await anyio.to_thread.run_sync(time.sleep, 12)
    anyio.run(main)
    assert virtual_clock.sleeps == [12]

def test_a_pool_given_the_context(virtual_clock):
    with ThreadPoolExecutor(2) as pool:
        pool.submit(contextvars.copy_context().run, time.sleep, 7).result()
    assert virtual_clock.sleeps == [7]

def test_waits_of_two_workers_follow_one_another(virtual_clock):
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(contextvars.copy_context().run, time.sleep, 1) for _ in range(2)]
        [job.result() for job in jobs]
    assert sorted(virtual_clock.sleeps) == [1, 1]
    assert virtual_clock.now() == 2

def test_run_in_executor_carries_no_context_so_it_is_real(virtual_clock):
    async def main():
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0)
    asyncio.run(main())
    assert virtual_clock.sleeps == []

def test_a_thread_started_by_the_test_is_real(virtual_clock):
    thread = threading.Thread(target=time.sleep, args=(0,))
    thread.start()
    thread.join()
    assert virtual_clock.sleeps == []

@pytest.mark.real_time
def test_real_time_stays_real():
    async def main():
        await asyncio.to_thread(time.sleep, 0)
    asyncio.run(main())
"""
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=7)


def test_a_worker_outliving_its_test_sleeps_in_real_time(pytester):
    pytester.makepyfile(
        HEAD
        + """
KEPT = {}

def test_hands_a_context_to_a_pool(virtual_clock):
    KEPT["pool"] = ThreadPoolExecutor(1)
    KEPT["context"] = contextvars.copy_context()
    KEPT["clock"] = virtual_clock

def test_later():
    def nap():
        started = time.perf_counter()
        time.sleep(0.01)
        return time.perf_counter() - started
    slept = KEPT["pool"].submit(KEPT["context"].run, nap).result()
    KEPT["pool"].shutdown()
    assert slept >= 0.01
    assert KEPT["clock"].sleeps == []
"""
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


@pytest.mark.parametrize("inherited", [False, True])
def test_where_every_thread_inherits_the_context_only_pool_workers_count(
    monkeypatch: pytest.MonkeyPatch, inherited: bool
) -> None:
    """Free-threaded 3.14 starts every thread in its creator's context: a heartbeat too."""
    import contextvars
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import anyio
    import anyio.to_thread

    import pytest_agentfaults as af
    from pytest_agentfaults.runtime import _virtual_time
    from pytest_agentfaults.runtime.clock import use_default_clock

    monkeypatch.setattr(_virtual_time, "_INHERITED", inherited)
    clock = af.VirtualClock()
    # as the plugin does for a test: the clock is the context's default, its sleeps virtual
    with use_default_clock(clock), clock.patch_sleep():
        # A thread started with the context, as such a Python starts every thread.
        started = threading.Thread(target=contextvars.copy_context().run, args=(time.sleep, 0))
        started.start()
        started.join()
        as_started = list(clock.sleeps)
        with ThreadPoolExecutor(1) as pool:
            pool.submit(contextvars.copy_context().run, time.sleep, 3).result()
        anyio.run(anyio.to_thread.run_sync, time.sleep, 4)  # anyio's own worker threads
    assert as_started == ([] if inherited else [0.0])
    assert clock.sleeps == [*as_started, 3.0, 4.0]
