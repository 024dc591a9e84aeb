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


# docs/howto/property-testing.md: the function-scoped kit fixtures meet Hypothesis' health
# check in a @given test (one plan, clock or model would serve every example), while the
# session-scoped `trace` and `af.fault_scope()` do not.
FIXTURES = """
from hypothesis import given, settings, strategies as st

import pytest_agentfaults as af

@settings(max_examples=2, suppress_health_check=())  # Hypothesis' defaults, whatever profile
@given(n=st.integers(1, 3))
def test_uses(n, {fixture}):
    pass

@settings(max_examples=2, suppress_health_check=())
@given(n=st.integers(1, 3))
def test_scoped(n, trace):
    with af.fault_scope() as scope:
        model = af.ScriptedModel([af.say("done")])
        assert af.Agent("bot", model=model).run("go").output == "done"
    assert scope.trace.count("run.end") == 1
"""


@pytest.mark.parametrize("fixture", ["faults", "virtual_clock", "scripted_model"])
def test_a_function_scoped_kit_fixture_in_a_given_test_fails_the_health_check(pytester, fixture):
    pytester.makefile(  # the inner sessions' ini turns hypothesis' plugin off: on here
        ".ini",
        pytest="[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )
    pytester.makepyfile(test_h=FIXTURES.replace("{fixture}", fixture))
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    # Hypothesis words it "uses a function-scoped fixture 'x'" (older: "Function-scoped
    # fixture 'x' used by")
    result.stdout.fnmatch_lines([f"*FailedHealthCheck*unction-scoped fixture '{fixture}'*"])
