"""The ``trace`` fixture in a Hypothesis ``@given`` test reads the running example's events.

``trace`` is session-scoped (a view of the running test's trace), so Hypothesis' health
check for function-scoped fixtures does not stop a ``@given`` test that names it. Each
example is a test of its own to the user: reading ``trace`` in one shows that example's
runs, not the sum of every example before it (which made the second example's
``trace.count("run.end") == 1`` fail with ``2 == 1`` and Hypothesis shrink a failure
that no example had). The test's own report still shows every example's events. A test
that takes the function-scoped ``faults`` (Hypothesis' health check suppressed) shares
the plan with every example, and its trace with it.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

GIVEN = """
from hypothesis import HealthCheck, given, settings, strategies as st

EXAMPLES = []
EXAMPLES_SHARED = []

@settings(max_examples=5, database=None)
@given(calls=st.integers(1, 3))
def test_each_example_reads_its_own_runs(calls, trace):
    assert len(trace) == 0                       # nothing of the examples before
    steps = [call_tool("fetch", url=str(i)) for i in range(calls)]
    make([*steps, say("done")]).run("go")
    assert trace.count("run.end") == 1
    assert trace.count("tool.result") == calls
    EXAMPLES.append(calls)

@settings(max_examples=3, database=None)
@given(calls=st.integers(1, 3))
def test_a_failing_example_shows_the_whole_test_in_its_report(calls, trace):
    make().run("go")
    assert calls < 3

@settings(max_examples=3, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.integers(1, 3))
def test_shared_fixtures_share_the_trace_too(calls, faults, trace):
    # faults is shared by every example (the health check suppressed): the trace with it,
    # so the plan's fired faults and the trace's fault events still agree
    faults.tool("fetch").raises(ConnectionError("reset")).times(1)
    make().run("go")
    assert len(faults.fired) == trace.count("tool.fault") == len(EXAMPLES_SHARED) + 1
    EXAMPLES_SHARED.append(calls)

def test_z_ran_several_examples():
    assert len(EXAMPLES_SHARED) > 1
    assert len(EXAMPLES) > 1
"""


def test_the_trace_fixture_is_per_example_in_a_given_test(suite, pytester):
    pytester.makefile(  # the inner sessions' ini turns hypothesis' plugin off: on here
        ".ini",
        pytest="[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )
    result = suite(GIVEN).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "test_a_failing_example_shows_the_whole_test_in_its_report(" in out  # its name
    assert "calls=3" in out  # the one failing example, not a sum of earlier ones
    assert "recovery trace" in out
