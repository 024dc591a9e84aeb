"""pytest-rerunfailures beside the kit: each rerun of a test is a fresh attempt of it.

pytest-rerunfailures runs the same item's protocol again (``--reruns N``,
``@pytest.mark.flaky(reruns=N)``). Each attempt gets a fresh fault plan from the markers,
a fresh trace and clock, its own end-of-test checks, and nothing of the attempt before it
stays patched; how one attempt ended (its teardown, its trace section) is not carried
into the next. The inner sessions run without xdist: with it, rerunfailures starts a
loopback status server per session that it never stops.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_rerunfailures")

PEER = ("-p", "no:randomly", "-p", "no:xdist", "-p", "rerunfailures")


def outcomes(result):
    return {key: n for key, n in result.parseoutcomes().items() if key != "seconds"}


@pytest.fixture(autouse=True)
def _with_rerunfailures(pytester):
    # the plugin tests' inner ini blocks rerunfailures (`conftest._inner_ini`): allowed here
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )


def test_each_rerun_has_a_fresh_plan_trace_clock_and_check(suite):
    result = suite("""
import time
from pytest_agentfaults.runtime import hooks

REAL_SLEEP = time.sleep
SEEN = []
PLANS = []


def active_plans():
    # (an in-process inner session runs in the outer test's context: its plan is not ours)
    return [i.plan for i in hooks.active_interceptors() if any(i.plan is p for p in PLANS)]

@pytest.mark.flaky(reruns=2)
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_flaky(faults, trace, virtual_clock):
    assert virtual_clock.now() == 0 and len(trace) == 0 and faults.fired == []
    assert active_plans() == []                            # no earlier attempt's plan
    PLANS.append(faults)
    make().run("go")
    SEEN.append((len(faults.fired), trace.retries("fetch"), virtual_clock.sleeps == trace.delays()))
    assert len(SEEN) == 3                                  # fails twice, then passes

@pytest.mark.flaky(reruns=1)
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_second_attempt_never_runs_the_tool():
    SEEN.append("attempt")
    if SEEN.count("attempt") == 1:
        make().run("go")
        raise AssertionError("the first attempt fails after the fault fired")

def test_z_nothing_left():
    assert SEEN[:3] == [(2, 2, True)] * 3
    assert time.sleep is REAL_SLEEP
    assert len(PLANS) == 3 and active_plans() == []
""").runpytest(*PEER)
    assert outcomes(result) == {"passed": 3, "errors": 1, "rerun": 3}
    # the rerun that never ran the tool is held to its own never-fired check
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_second_attempt_never_runs_the_tool*", "*never fired*"]
    )


def test_a_rerun_shows_its_own_recovery_trace_on_the_final_failure(suite):
    result = suite("""
@pytest.mark.flaky(reruns=1)
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_always_fails():
    make().run("go")
    raise AssertionError("still broken")
""").runpytest(*PEER)
    assert outcomes(result) == {"failed": 1, "rerun": 1}
    failures = result.stdout.str().split("= FAILURES =")[1]
    assert failures.count("recovery trace") == 1, failures
    assert "tool 'fetch' raises ConnectionError('reset')" in failures


def test_a_rerun_may_read_the_trace_before_its_first_agent_run(suite):
    # A test that names no kit fixture asks for the trace late; the first attempt's end
    # must not make the rerun's read a "read after the test ended" error.
    result = suite("""
ATTEMPTS = []

@pytest.mark.flaky(reruns=1)
def test_late(request):
    ATTEMPTS.append(1)
    trace = request.getfixturevalue("trace")
    assert len(trace) == 0
    make().run("go")
    assert trace.count("tool.result") == 1
    assert len(ATTEMPTS) == 2
""").runpytest(*PEER)
    assert outcomes(result) == {"passed": 1, "rerun": 1}


LEAK_CHECK = """
import time
REAL_SLEEP = time.sleep

def pytest_unconfigure(config):
    from pytest_agentfaults.runtime import hooks
    print("LEAK CHECK", time.sleep is REAL_SLEEP, hooks.active_interceptors() == ())
"""


def test_an_interrupted_rerun_leaves_nothing_patched(suite):
    # A KeyboardInterrupt skips the rerun's teardown: the plugin switches it off all the
    # same, as it does a first attempt's.
    pytester = suite("""
ATTEMPTS = []

@pytest.mark.flaky(reruns=1)
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), strict=False)
def test_a(virtual_clock):
    ATTEMPTS.append(1)
    if len(ATTEMPTS) == 2:
        raise KeyboardInterrupt
    raise AssertionError("the first attempt fails")
""")
    pytester.makeconftest(LEAK_CHECK)
    result = pytester.runpytest_subprocess(*PEER, "-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*", "LEAK CHECK True True"])
