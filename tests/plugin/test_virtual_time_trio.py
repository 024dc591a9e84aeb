"""Virtual time under trio: ``anyio.sleep`` in a kit test waits on the test's clock.

The official SDKs' async clients back off with ``anyio.sleep``. Under anyio's trio backend
(or a ``trio.run`` of the test's own) those waits stayed real: a 503, 503, 200 test slept
its backoff, and the verdict read the real gaps. They are now timers on the test's virtual
clock, as on asyncio: recorded in ``virtual_clock.sleeps``, concurrent ones overlap, and
the earliest ends once the trio run is idle.
"""

from __future__ import annotations

import pytest

pytest.importorskip("trio")
pytest.importorskip("anyio")

# What both inner modules start with: trio as the backend, and "it took no real time"
TRIO_HEAD = """
import threading
import time

import pytest

import anyio
import trio

@pytest.fixture
def anyio_backend():
    return "trio"

def quick(started):
    return time.perf_counter() - started < 1   # well under the 30 s asked for
"""

BODY = (
    TRIO_HEAD
    + """
@pytest.mark.anyio
async def test_a_sleep_is_virtual(virtual_clock):
    started = time.perf_counter()
    await anyio.sleep(30)
    assert quick(started)
    assert virtual_clock.sleeps == [30]
    assert virtual_clock.now() == 30

@pytest.mark.anyio
async def test_concurrent_waits_overlap_and_end_in_order(virtual_clock):
    ended = []
    async def wait(delay):
        await anyio.sleep(delay)
        ended.append((delay, virtual_clock.now()))
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for delay in (3, 1, 2):
            group.start_soon(wait, delay)
    assert quick(started)
    assert ended == [(1, 1), (2, 2), (3, 3)]
    assert virtual_clock.now() == 3
    assert sorted(virtual_clock.sleeps) == [1, 2, 3]

def test_a_trio_run_of_the_test_own(virtual_clock):
    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(anyio.sleep, 5)
            nursery.start_soon(anyio.sleep, 5)
    started = time.perf_counter()
    trio.run(main)
    assert quick(started)
    assert virtual_clock.now() == 5

@pytest.mark.anyio
async def test_a_run_kept_busy_by_polling_still_reaches_its_timers(virtual_clock):
    done = []
    async def later():
        await anyio.sleep(1)
        done.append(virtual_clock.now())
    async with anyio.create_task_group() as group:
        group.start_soon(later)
        while not done:
            await anyio.sleep(0)   # never idle: the timer fires after a short while
    assert done == [1]

@pytest.mark.anyio
async def test_a_real_deadline_before_the_virtual_end_comes_first(virtual_clock):
    with anyio.move_on_after(0.01) as scope:   # real time, as timeouts are
        await anyio.sleep(30)
    assert scope.cancelled_caught
    assert virtual_clock.now() < 30            # the sleep never ended

@pytest.mark.anyio
async def test_a_cancelled_sleep_leaves_the_others_on_time(virtual_clock):
    ended = []
    async def wait(delay):
        await anyio.sleep(delay)
        ended.append((delay, virtual_clock.now()))
    async with anyio.create_task_group() as group:
        group.start_soon(wait, 2)
        with anyio.CancelScope() as scope:
            scope.cancel()
            await anyio.sleep(1)            # cancelled before it could end
        group.start_soon(wait, 3)
    assert ended == [(2, 2), (3, 3)]

@pytest.mark.anyio
async def test_a_worker_thread_at_work_finishes_before_a_virtual_timer(virtual_clock):
    order = []
    def work():
        threading.Event().wait(0.02)   # 20 ms of real work, no sleep
        order.append("thread")
    async def wait():
        await anyio.sleep(1)
        order.append("sleep")
    async with anyio.create_task_group() as group:
        group.start_soon(anyio.to_thread.run_sync, work)
        group.start_soon(wait)
    assert order == ["thread", "sleep"]

def test_a_run_on_trio_mock_clock_keeps_its_time(virtual_clock):
    from trio.testing import MockClock

    async def main():
        await anyio.sleep(4)               # the run's autojump moves trio's clock...
        return trio.current_time()

    started = time.perf_counter()
    assert trio.run(main, clock=MockClock(autojump_threshold=0)) == 4
    assert quick(started)
    assert virtual_clock.sleeps == [4]     # ...and the kit's clock follows it
    assert virtual_clock.now() == 4

@pytest.mark.real_time
@pytest.mark.anyio
async def test_real_time_keeps_the_real_sleep(trace):
    assert "agentfaults" not in (anyio.sleep.__doc__ or "")

@pytest.mark.anyio
async def test_a_test_without_the_kit_keeps_the_real_sleep():
    assert "agentfaults" not in (anyio.sleep.__doc__ or "")
"""
)


def test_anyio_sleep_under_trio_is_virtual_in_a_kit_test(pytester):
    pytester.makepyfile(test_trio=BODY)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=10)


SDK = """
import time

import pytest

import anyio

CHAT = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "It is sunny."}}],
}

@pytest.fixture
def anyio_backend():
    return "trio"

@pytest.mark.anyio
@pytest.mark.inject_fault(http=503, times=2)
async def test_the_async_sdk_backs_off_in_virtual_time(
    async_openai_client, http_faults, virtual_clock, trace
):
    http_faults.post("https://api.openai.com/v1/chat/completions").respond(200, json=CHAT)
    started = time.perf_counter()
    answer = await async_openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}]
    )
    assert answer.choices[0].message.content == "It is sunny."
    assert time.perf_counter() - started < 0.5     # the SDK's ~1.5 s of backoff
    assert len(virtual_clock.sleeps) == 2
    assert virtual_clock.now() == sum(virtual_clock.sleeps)
    verdict = trace.verdict()
    assert verdict.passed, verdict

@pytest.mark.anyio
@pytest.mark.inject_fault(http=529, times=2)
async def test_over_the_loopback_server_too(llm_server, trace, virtual_clock):
    import anthropic
    from pytest_agentfaults.testing import say

    llm_server.script([say("Sunny.")])
    started = time.perf_counter()
    async with anthropic.AsyncAnthropic(
        base_url=llm_server.base_url("anthropic"), api_key="k"
    ) as client:
        message = await client.messages.create(
            model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "Hi"}]
        )
    assert message.content[0].text == "Sunny."
    assert time.perf_counter() - started < 0.5     # the SDK's backoff, virtual
    assert [r.fault for r in llm_server.requests] == ["529", "529", None]
    assert len(virtual_clock.sleeps) == 2
    trace.assert_resilient()
"""


def test_the_async_sdks_under_trio_back_off_virtually(pytester):
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    pytester.makepyfile(test_sdk_trio=SDK)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


TRIO_SLEEP = (
    TRIO_HEAD
    + """
@pytest.mark.anyio
async def test_trio_sleep_is_virtual(virtual_clock):
    started = time.perf_counter()
    await trio.sleep(30)
    assert quick(started)
    assert virtual_clock.sleeps == [30]
    assert virtual_clock.now() == 30

def test_in_a_trio_run_of_the_test_own_waits_overlap(virtual_clock):
    ended = []
    async def wait(delay):
        await trio.sleep(delay)
        ended.append((delay, virtual_clock.now()))
    async def main():
        async with trio.open_nursery() as nursery:
            for delay in (3, 1, 2):
                nursery.start_soon(wait, delay)
            nursery.start_soon(anyio.sleep, 2.5)   # both kinds on one clock
    started = time.perf_counter()
    trio.run(main)
    assert quick(started)
    assert ended == [(1, 1), (2, 2), (3, 3)]
    assert sorted(virtual_clock.sleeps) == [1, 2, 2.5, 3]

@pytest.mark.anyio
async def test_a_real_deadline_first_and_a_zero_sleep_pass_through(virtual_clock):
    await trio.sleep(0)                         # a checkpoint, as ever
    with trio.move_on_after(0.01) as scope:     # real time, as timeouts are
        await trio.sleep(30)
    assert scope.cancelled_caught
    assert virtual_clock.sleeps == [30]
    assert virtual_clock.now() < 30
    with pytest.raises(ValueError):
        await trio.sleep(-1)                    # trio's own refusal

def test_the_run_own_mock_clock_keeps_its_time(virtual_clock):
    from trio.testing import MockClock

    async def main():
        await trio.sleep(4)
        return trio.current_time()

    assert trio.run(main, clock=MockClock(autojump_threshold=0)) == 4
    assert virtual_clock.now() == 4

@pytest.mark.real_time
@pytest.mark.anyio
async def test_real_time_keeps_trio_sleep(trace):
    assert "agentfaults" not in (trio.sleep.__doc__ or "")

@pytest.mark.anyio
async def test_a_test_without_the_kit_keeps_trio_sleep():
    assert "agentfaults" not in (trio.sleep.__doc__ or "")
"""
)


def test_trio_sleep_is_virtual_in_a_kit_test(pytester):
    # trio's own sleep stayed real where anyio's was virtual: a trio app's backoff (and
    # anyio code calling the trio backend directly) waited for real in a kit test
    pytester.makepyfile(test_trio_sleep=TRIO_SLEEP)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=6)
    assert "agentfaults" not in (__import__("trio").sleep.__doc__ or "")  # undone after


# A module that does not import trio at its top: trio arrives while a kit test runs.
LATE = """
import sys
import time

import pytest

AT_COLLECTION = "trio" in sys.modules
META_PATH = list(sys.meta_path)   # the import finders before any test

def mine(function):
    return "agentfaults" in (function.__doc__ or "")

def test_trio_imported_in_the_body_sleeps_virtually(virtual_clock):
    assert not AT_COLLECTION   # the premise: trio comes with this test
    import trio

    async def main():
        await trio.sleep(30)

    started = time.perf_counter()
    trio.run(main)
    assert time.perf_counter() - started < 1   # well under the 30 s asked for
    assert virtual_clock.sleeps == [30]
    assert virtual_clock.now() == 30

def test_after_it_trio_sleep_is_the_real_one_and_no_finder_is_left():
    import trio
    assert not mine(trio.sleep)
    assert sys.meta_path == META_PATH

def test_a_later_kit_test_finds_trio_imported(virtual_clock):
    import trio
    assert mine(trio.sleep)
    trio.run(trio.sleep, 7)
    assert virtual_clock.sleeps == [7]
"""


def test_trio_first_imported_in_a_kit_test_sleeps_virtually(pytester, monkeypatch):
    # trio.sleep was replaced only if trio was imported when the test's virtual time was
    # switched on. Where no plugin imports trio at start-up (anyio's pytest plugin does,
    # so autoload off here, as some CI runs have it), `import trio` in the test's body,
    # or the kit's own network guard importing httpcore (which imports trio) at setup,
    # came too late, and a 30 s trio.sleep really slept 30 s. A fresh process, where
    # trio is not imported yet; pytest-timeout ends a real sleep.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_late_trio=LATE)
    plugins = ("pytest_agentfaults.plugin", "pytest_asyncio.plugin", "pytest_timeout")
    loads = [arg for plugin in plugins for arg in ("-p", plugin)]
    result = pytester.runpytest_subprocess(*loads, "--timeout=10", timeout=90)
    result.assert_outcomes(passed=3)


# Where trio never comes (not installed: here its import is blocked), the finder that waits
# for it stays for the whole test, and goes at its end whatever the test did.
NEVER = """
import sys

import pytest

sys.modules["trio"] = None   # `import trio` raises ImportError, as without trio installed
META_PATH = list(sys.meta_path)

def test_passes(virtual_clock):
    with pytest.raises(ImportError):
        import trio

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError, strict=False)
def test_fails():
    raise RuntimeError("the test failed")

@pytest.fixture
def broken(virtual_clock):
    raise RuntimeError("setup failed")

def test_setup_fails(broken):
    pass

def test_no_finder_is_left():
    assert sys.meta_path == META_PATH
"""


def test_the_finder_waiting_for_trio_goes_with_the_test(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_never=NEVER)
    plugins = ("pytest_agentfaults.plugin", "pytest_asyncio.plugin")
    result = pytester.runpytest_subprocess(*[a for p in plugins for a in ("-p", p)], timeout=90)
    result.assert_outcomes(passed=2, failed=1, errors=1)
