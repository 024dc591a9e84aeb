"""A marker fault on a Hypothesis test is spent by the first examples: the kit says so.

The marker's faults belong to the test, not to each example: ``times=1`` fires in the
first example only, while the trace adds every example up (audit finding 10). The kit
warns with `HypothesisMarkerWarning`, naming the marker and ``af.fault_scope()``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("hypothesis")

GIVEN = """
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pytest_agentfaults as af

@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("r"), times=1, strict=False)
def test_marked(n, trace):
    pass

@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 3))
def test_scoped(n, trace):
    with af.fault_scope() as scope:
        scope.faults.tool("fetch").raises(ConnectionError("r")).times(1).strict(False)
"""


def test_a_marker_fault_on_a_given_test_warns_and_names_fault_scope(pytester):
    pytester.makepyfile(test_h=GIVEN)
    result = pytester.runpytest(
        "-p", "no:randomly", "-W", "default::pytest_agentfaults.HypothesisMarkerWarning"
    )
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*test_h.py::test_marked*",
            "*HypothesisMarkerWarning: *test_marked*inject_fault(tool='fetch'*times=1*",
        ]
    )
    assert "af.fault_scope()" in result.stdout.str()
    assert "test_scoped" not in result.stdout.str().split("warnings summary")[-1]


def test_the_warning_is_a_pytest_warning_of_the_kit():
    import pytest_agentfaults as af

    assert issubclass(af.HypothesisMarkerWarning, af.AgentFaultsWarning)
    assert issubclass(af.AgentFaultsWarning, pytest.PytestWarning)
