"""Quiet where unused (issue 21, item 8): a suite that never touches the kit sees nothing
of it, though the plugin is loaded; a suite that does gets the seed and summary lines."""

from __future__ import annotations

import pytest

THIRD_PARTY = """
import random

def test_passes():
    assert random.random() < 2

def test_fails():
    assert 1 == 2, "their own failure"
"""


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["default", "-q"])
def test_a_suite_that_never_uses_the_kit_prints_nothing_of_it(pytester, quiet):
    pytester.makepyfile(test_theirs=THIRD_PARTY)
    result = pytester.runpytest(*quiet)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "their own failure" in out
    assert "agentfaults:" not in out
    assert "recovery trace" not in out


def test_a_suite_that_never_uses_the_kit_is_quiet_under_xdist_too(pytester):
    pytester.makepyfile(test_theirs=THIRD_PARTY)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    assert "agentfaults:" not in result.stdout.str()


MIXED = """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_kit():
    assert make().run("go").output == "done"

def test_plain_failure():
    assert 1 == 2, "plain"
"""


def test_one_test_using_the_kit_brings_the_seed_and_the_summary_back(suite):
    result = suite(MIXED).runpytest("-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "agentfaults: seed=* (reproduce with --agentfaults-seed=*)",
            "*",
            "agentfaults: 1 fault injected, 1 retry, 0 fixer calls, 0 escalations",
        ]
    )
    # the failing test recorded nothing: no empty trace section for it
    assert "recovery trace" not in result.stdout.str()


def test_a_kit_fixture_that_recorded_nothing_still_counts_as_use(suite):
    result = suite("""
def test_reads_the_trace(trace):
    assert len(trace) == 0
""").runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["agentfaults: seed=*", "*agentfaults: 0 faults injected, *"])
