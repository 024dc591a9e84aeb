"""Virtual time without asking, scoped to the test (issue 19, section 1).

A test that uses the kit (an ``inject_fault`` marker or a kit fixture) waits in virtual
time on its own thread, in its own event loops and in work it hands over with its context
(test_virtual_time_workers.py); every other thread, and every other test, keeps the real
sleep functions, checked by identity rather than by sleeping.
"""

from __future__ import annotations

import pytest

ORIGINALS = """
import asyncio, threading, time
import anyio

REAL = (time.sleep, asyncio.sleep, anyio.sleep)  # at import: before any test runs


def untouched():
    return (time.sleep, asyncio.sleep, anyio.sleep) == REAL
"""


def test_a_kit_test_waits_in_virtual_time_without_asking(suite):
    result = suite(
        ORIGINALS
        + """
def test_sleeps(virtual_clock):
    assert not untouched()
    started = time.perf_counter()
    time.sleep(120)
    asyncio.run(asyncio.sleep(5))
    anyio.run(anyio.sleep, 7)
    assert virtual_clock.sleeps == [120, 5, 7]
    assert virtual_clock.now() == 132
    assert time.perf_counter() - started < 60  # 132 s of waiting took no real time

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError)
def test_a_marker_is_enough():
    assert not untouched()
    assert make().run("go").output == "done"

def test_any_kit_fixture_is_enough(trace):
    assert not untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_tests_that_do_not_use_the_kit_keep_the_real_functions(suite):
    result = suite(
        ORIGINALS
        + """
def test_kit_first(virtual_clock):
    time.sleep(1)

def test_plain():
    assert untouched()

def test_an_agent_without_kit_fixtures():
    # The runtime is loaded now (the kit may be used), but no marker, no kit fixture.
    make().run("go")
    assert untouched()

@pytest.mark.real_time
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError)
def test_real_time_opts_out():
    assert untouched()
    make().run("go")

def test_undone_after_the_kit_tests():
    assert untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=5)


def test_real_time_is_a_registered_marker(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.real_time*"])


def test_patch_sleep_is_a_compatible_no_op_in_a_kit_test(suite):
    result = suite(
        ORIGINALS
        + """
def test_no_op(virtual_clock):
    patched = time.sleep
    assert virtual_clock.patch_sleep() is virtual_clock
    assert time.sleep is patched
    time.sleep(3)
    assert virtual_clock.sleeps == [3]

def test_then_undone():
    assert untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_other_threads_keep_real_time(suite):
    result = suite(
        ORIGINALS
        + """
def test_heartbeat(virtual_clock):
    beats = []
    def heartbeat():
        while len(beats) < 50:
            time.sleep(0)              # real: recorded on no clock
            beats.append(threading.get_ident())
    thread = threading.Thread(target=heartbeat)
    thread.start()
    time.sleep(30)                     # the test's own wait: virtual
    thread.join()
    assert len(beats) == 50
    assert virtual_clock.sleeps == [30]

def test_an_executor_thread_given_no_context_too(virtual_clock):
    async def main():
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0)
        await asyncio.sleep(2)
    asyncio.run(main())
    assert virtual_clock.sleeps == [2]  # asyncio.to_thread, which copies it: virtual

def test_an_event_loop_in_another_thread_is_real(virtual_clock):
    seen = []
    def serve():
        async def server():
            await asyncio.sleep(0.001)  # a server's loop: really waits, recorded nowhere
            seen.append(True)
        asyncio.run(server())
    thread = threading.Thread(target=serve)
    thread.start()
    thread.join()
    assert seen == [True]
    assert virtual_clock.sleeps == []
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_a_kept_reference_passes_through_after_the_test(suite):
    result = suite(
        ORIGINALS
        + """
KEPT = {}

def test_keeps_the_patched_function(virtual_clock):
    KEPT["sleep"], KEPT["clock"] = time.sleep, virtual_clock
    time.sleep(1)

def test_later_calls_reach_the_real_sleep():
    KEPT["sleep"](0)
    assert KEPT["clock"].sleeps == [1]
    assert untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


CONCURRENT = """
async def three_waits():
    started = asyncio.get_running_loop().time()
    await asyncio.gather(asyncio.sleep(1), asyncio.sleep(1), anyio.sleep(1))
    return asyncio.get_running_loop().time() - started

def test_asyncio_run(virtual_clock):
    assert three_waits_take_no_real_time(asyncio.run(three_waits()))
    assert virtual_clock.now() == 1
    assert virtual_clock.sleeps == [1, 1, 1]

@pytest.mark.asyncio
async def test_pytest_asyncio(virtual_clock):
    assert three_waits_take_no_real_time(await three_waits())
    await asyncio.sleep(2)
    assert virtual_clock.now() == 3

@pytest.mark.anyio
async def test_anyio_plugin(virtual_clock):
    async with anyio.create_task_group() as group:
        for delay in (1, 2, 3):
            group.start_soon(anyio.sleep, delay)
    assert virtual_clock.now() == 3
    assert sorted(virtual_clock.sleeps) == [1, 2, 3]

def test_staggered_waits_end_in_order(virtual_clock):
    ended = []
    async def wait(delay):
        await asyncio.sleep(delay)
        ended.append((delay, virtual_clock.now()))
    async def main():
        await asyncio.gather(wait(3), wait(1), wait(2))
    asyncio.run(main())
    assert ended == [(1, 1), (2, 2), (3, 3)]

def three_waits_take_no_real_time(elapsed):
    return elapsed < 0.9

@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


def test_concurrent_waits_overlap(suite):
    result = suite(ORIGINALS + CONCURRENT).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)


HANGING = """
def hanging_agent(body):
    @af.tool
    async def charge(amount: int) -> str:
        \"\"\"Charge a card; the gateway never answers.\"\"\"
        await body()
        return "charged"

    model = ScriptedModel([call_tool("charge", amount=7), say("ok")])
    config = af.ResilienceConfig(timeout_seconds=5, max_retries=0)
    return af.Agent("bot", model=model, tools=[charge], resilience=config)

async def forever():
    await asyncio.Event().wait()

async def long_sleep():
    await asyncio.sleep(60)

@pytest.mark.parametrize("body", [forever, long_sleep])
def test_run(body, trace, virtual_clock):
    result = hanging_agent(body).run("pay")
    errors = trace.of("tool.error", tool="charge")
    assert [e.error.type for e in errors] == ["ToolTimeoutError"]
    assert [e.at for e in errors] == [5.0]
    assert virtual_clock.now() == 5.0
    assert result.output == "ok"

@pytest.mark.asyncio
@pytest.mark.parametrize("body", [forever, long_sleep])
async def test_arun(body, trace, virtual_clock):
    async def tick():  # a concurrent wait of the test's own, shorter than the deadline
        await asyncio.sleep(2)
        return virtual_clock.now()
    result, ticked = await asyncio.gather(hanging_agent(body).arun("pay"), tick())
    assert ticked == 2
    assert [e.at for e in trace.of("tool.error", tool="charge")] == [5.0]
    assert result.output == "ok"
"""


def test_a_hanging_async_tool_is_cut_by_its_timeout_in_virtual_time(suite):
    result = suite(HANGING).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize("fixture", ["openai_client", "async_anthropic_client"])
def test_the_sdk_client_fixtures_count_as_kit_fixtures(pytester, fixture):
    # the kit's own (a suite's own fixture of that name does not: test_users_fixture_names.py)
    pytester.makepyfile(f"""
import time

def test_it({fixture}):
    assert "pytest-agentfaults" in (time.sleep.__doc__ or "")
""")
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


def test_a_sleep_outliving_its_test_finishes_in_real_time(suite):
    result = suite(
        ORIGINALS
        + """
LOOP = asyncio.new_event_loop()
TASKS = []

def test_starts_a_sleep_it_does_not_await(virtual_clock):
    async def start():
        TASKS.append(asyncio.ensure_future(asyncio.sleep(0.001, "woke")))
        await asyncio.sleep(0)  # the sleep has begun: a virtual timer at 0.001
    LOOP.run_until_complete(start())
    assert virtual_clock.sleeps == [0.001]

def test_the_next_test_still_sees_it_end():
    assert LOOP.run_until_complete(asyncio.wait_for(TASKS[0], 5)) == "woke"
    LOOP.close()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_fault_scope_block_waits_on_its_own_clock(suite):
    result = suite(
        ORIGINALS
        + """
def test_scope(virtual_clock):
    time.sleep(1)
    with af.fault_scope() as scope:
        time.sleep(2)
        asyncio.run(asyncio.sleep(3))
    time.sleep(4)
    assert scope.clock.sleeps == [2, 3]
    assert virtual_clock.sleeps == [1, 4]

def test_outside_a_kit_test_too():
    with af.fault_scope() as scope:
        time.sleep(5)
    assert scope.clock.sleeps == [5]
    assert untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_loop_kept_busy_by_polling_still_reaches_its_timers(suite):
    result = suite(
        ORIGINALS
        + """
def test_polling(virtual_clock):
    done = []
    async def later():
        await asyncio.sleep(1)
        done.append(virtual_clock.now())
    async def main():
        task = asyncio.ensure_future(later())
        while not done:
            await asyncio.sleep(0)   # never idle: the timer fires after a short while
        await task
    asyncio.run(main())
    assert done == [1]
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_a_marker_function_fault_on_time_sleep_fires_and_other_sleeps_stay_virtual(suite):
    # The marker's function fault and virtual time both patch time.sleep: the fault must
    # be the one the test's code meets first, and virtual time what it calls through to.
    result = suite(
        ORIGINALS
        + """
@pytest.mark.inject_fault(function="time:sleep", raises=ConnectionError("boom"), times=1)
def test_marker_alone():
    with pytest.raises(ConnectionError, match="boom"):
        time.sleep(5)
    from pytest_agentfaults.runtime.clock import default_clock

    time.sleep(30)  # past the fault: the test's virtual clock, no real wait
    asyncio.run(asyncio.sleep(7))
    assert default_clock().sleeps == [30, 7]


@pytest.mark.inject_fault(function="time:sleep", raises=ConnectionError("boom"), times=1)
def test_marker_and_kit_fixture(virtual_clock, trace):
    with pytest.raises(ConnectionError, match="boom"):
        time.sleep(5)
    time.sleep(30)
    anyio.run(anyio.sleep, 2)
    assert virtual_clock.sleeps == [30, 2]
    assert [e.type for e in trace.events] == [
        *("tool.call", "tool.fault", "tool.error"),  # the fault, on time:sleep(5)
        *("tool.call", "tool.result"),  # time:sleep(30), through the fault's wrapper
    ]


@pytest.mark.inject_fault(function="time:sleep", raises=ConnectionError("boom"), times=1)
@pytest.mark.inject_fault(tool="never_called", raises=ValueError("x"))  # strict: teardown fails
def test_a_teardown_that_fails(virtual_clock):
    with pytest.raises(ConnectionError):
        time.sleep(5)
    time.sleep(1)


def test_z_both_patches_are_undone():
    assert untouched()
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4, errors=1)  # the teardown's error, on a passed test
    result.stdout.fnmatch_lines(["*never_called*never fired*"])
