"""A loop that waits on the real clock while its sleeps are virtual is stopped, and named.

``while time.monotonic() < deadline: time.sleep(0.01)`` in a kit test never sees its
sleeps take time: it would spin until the real deadline, recording millions of sleeps
(audit finding 6). The kit stops it with `VirtualTimeSpinError`, which says what happened
and the fix, and fails the test at teardown even when the code swallows the error.
"""

from __future__ import annotations

import time

POLL = """
import time
import pytest

def wait_until(timeout, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(interval)

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError, strict=False)
def test_raised(virtual_clock):
    wait_until(timeout=20)

def sleep_swallowing(times):
    # bounded by a count, not a real deadline: a loaded machine may not reach the spin
    # threshold within a deadline, and the test is about what the kit does once it does
    for _ in range(times):
        try:
            time.sleep(0.01)
        except Exception:
            pass

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError, strict=False)
def test_swallowed(virtual_clock):
    sleep_swallowing(150_000)
    assert len(virtual_clock.sleeps) <= 100_000  # bounded, whatever the loop did

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError, strict=False)
def test_many_short_sleeps_are_fine(virtual_clock):
    for _ in range(1000):
        time.sleep(0.01)
    assert virtual_clock.now() >= 9.99
"""


def test_a_deadline_loop_on_the_real_clock_fails_fast_and_names_the_fix(pytester):
    pytester.makepyfile(test_poll=POLL)
    start = time.monotonic()
    result = pytester.runpytest("-p", "no:randomly", "-rA")
    took = time.monotonic() - start
    result.assert_outcomes(passed=2, failed=1, errors=1)
    assert took < 15, took  # not the 20 s of the real deadline
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallowed*",
            "*VirtualTimeSpinError*",
            "*FAILED test_poll.py::test_raised - *VirtualTimeSpinError*",
        ]
    )
    text = result.stdout.str()
    assert "time.monotonic()" in text
    assert "virtual_clock.now()" in text
    assert "@pytest.mark.real_time" in text
