"""pytest's ``subtests`` fixture (pytest 9) and unittest's ``self.subTest`` beside the kit.

Subtests share their test's fixtures: the test's fault plan, trace and clock serve every
subtest (``af.fault_scope()`` gives one its own). Each subtest's report is made during
the test's call, through the same hook as the test's own: the kit reads it as the
subtest's, never as the test's outcome. A failed subtest shows the recovery trace so far;
the test's own outcome decides its end-of-test checks, as without subtests.
"""

from __future__ import annotations

import re

import pytest

if not hasattr(pytest, "Subtests"):  # pytest < 9 has no built-in subtests fixture
    pytest.skip("pytest's built-in subtests fixture is pytest 9's", allow_module_level=True)


def test_subtests_share_the_tests_plan_and_trace(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_shared(subtests, faults, trace):
    for n in (1, 2):
        with subtests.test(n=n):
            assert make().run("go").output == "done"
            assert len(faults.fired) == 1            # the test's fault, spent by the first
            assert trace.count("run.end") == n       # the test's trace adds every run up

def test_one_plan_per_subtest(subtests):
    for n in (1, 2):
        with subtests.test(n=n), af.fault_scope() as scope:
            scope.faults.tool("fetch").raises(ConnectionError("reset")).times(1)
            make().run("go")
            assert scope.trace.retries("fetch") == 1
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_passing_subtest_does_not_make_a_failed_test_pass_its_checks(suite):
    # Without subtests, a failed test shows its own failure alone; a passing subtest
    # before the failure must not turn the never-fired check on at teardown.
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_fails(subtests):
    with subtests.test("passes"):
        pass
    raise AssertionError("the test's own failure")
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1, errors=0)
    assert "never fired" not in result.stdout.str()


def test_a_failed_subtest_keeps_the_never_fired_check_and_the_full_trace(suite):
    # The body goes on after a failed subtest: a fault it never fired is still reported
    # (with the trace of the whole test), beside the subtest's own failure.
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
@pytest.mark.inject_fault(tool="fetch", raises=TimeoutError("late"), at=9)
def test_body_goes_on(subtests):
    with subtests.test("fails"):
        raise AssertionError("the subtest's failure")
    make().run("go")
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2, errors=1)  # the subtest, and the test that holds it
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_body_goes_on*", "*never fired*"])
    teardown = out.split("ERROR at teardown")[1].split("= FAILURES =")[0]
    assert "tool.retry" in teardown  # the trace of the run made after the failed subtest
    subtest = out.split("test_body_goes_on [fails]")[1]
    assert "recovery trace" in subtest.split("contains 1 failed subtest")[0]


def test_a_later_failure_shows_the_whole_trace_after_a_failed_subtest(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_fails_later(subtests):
    with subtests.test("fails first"):
        raise AssertionError("the subtest's failure")
    make().run("go")
    raise AssertionError("the test's own failure")
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)  # the subtest, and the test itself
    own = re.split(r"_ test_fails_later _+\n", result.stdout.str())[1]  # not the subtest's
    assert "recovery trace" in own
    assert "tool.retry" in own


def test_unittest_subtests_do_not_decide_the_tests_checks(suite):
    result = suite("""
import unittest

class TestCase(unittest.TestCase):
    @pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
    def test_fails(self):
        with self.subTest("passes"):
            pass
        raise AssertionError("the test's own failure")
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1, errors=0)
    assert "never fired" not in result.stdout.str()
