"""pytest-repeat beside the kit: each repetition is a test of its own, with a fresh kit.

``--count N`` (or ``@pytest.mark.repeat(N)``) makes N items of one test, ids ``[1-N]``
to ``[N-N]``: each gets its markers' faults afresh. The replay line of a repetition made
by ``--count`` carries the option: without it, the id it names does not exist.
"""

from __future__ import annotations

import shlex

import pytest

pytest.importorskip("pytest_repeat")


def test_each_repetition_has_a_fresh_plan_and_trace(suite):
    result = suite("""
SEEN = []

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_repeated(faults, trace, virtual_clock):
    make().run("go")
    SEEN.append((len(faults.fired), trace.retries("fetch"), virtual_clock.sleeps == trace.delays()))

@pytest.mark.repeat(2)
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_marked(trace):
    make().run("go")
    assert trace.retries("fetch") == 1

def test_z_every_repetition_saw_its_own_faults():
    assert SEEN == [(2, 2, True)] * 3
""").runpytest("-p", "no:randomly", "--count", "3")
    result.assert_outcomes(passed=3 + 2 + 3)


def test_the_replay_line_of_a_repetition_runs_that_repetition(suite):
    pytester = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_fails(trace):
    make().run("go")
    raise AssertionError("broken")
""")
    result = pytester.runpytest("-p", "no:randomly", "--count", "2")
    result.assert_outcomes(failed=2)
    [line] = [line for line in result.outlines if "test_fails[2-2]" in line and "replay:" in line]
    command = shlex.split(line.split("replay: ", 1)[1])
    assert command[0] == "pytest"
    assert "--count=2" in command
    again = pytester.runpytest("-p", "no:randomly", *command[1:])
    again.assert_outcomes(failed=1)  # the one repetition, found by its id
    again.stdout.fnmatch_lines(["*test_fails?2-2?*"])
