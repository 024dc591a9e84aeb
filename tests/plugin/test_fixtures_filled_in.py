"""The kit's fixtures that the setup hook fills in give what the fixtures would give.

``trace``, ``faults`` and ``virtual_clock`` reach a test without pytest's fixture machinery
(`_plugin_fixtures`); however a test or a fixture asks for one, it gets the same object,
a user's fixture of the same name still wins, and ``--setup-show`` still shows them.
"""

from __future__ import annotations

SAME_OBJECTS = """
import pytest

@pytest.fixture
def seen(request, trace, faults, virtual_clock):
    return trace, faults, virtual_clock

def test_same(request, trace, faults, virtual_clock, seen):
    assert seen == (trace, faults, virtual_clock)
    assert all(a is b for a, b in zip(seen, (trace, faults, virtual_clock)))
    assert request.getfixturevalue("trace") is trace
    assert request.getfixturevalue("faults") is faults
    assert request.getfixturevalue("virtual_clock") is virtual_clock
    virtual_clock.sleep(2)
    assert virtual_clock.now() == 2

def test_one_trace_view_a_session(trace, request):
    assert request.getfixturevalue("trace") is trace
    assert trace.events == []
"""


def test_a_test_and_its_fixtures_get_the_same_kit_objects(pytester):
    pytester.makepyfile(test_same=SAME_OBJECTS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


USERS_OWN = """
import pytest

@pytest.fixture
def trace():
    return "the user's trace"

@pytest.fixture
def faults():
    return "the user's faults"

def test_users_own(trace, faults):
    assert trace == "the user's trace"
    assert faults == "the user's faults"

@pytest.mark.parametrize("virtual_clock", ["a parameter"])
def test_parametrized(virtual_clock):
    assert virtual_clock == "a parameter"
"""


def test_a_users_fixture_or_parameter_of_the_same_name_wins(pytester):
    pytester.makepyfile(test_users=USERS_OWN)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


REAL_TIME = """
import pytest

@pytest.mark.real_time
def test_real(virtual_clock):
    pass
"""


def test_a_real_time_test_asking_for_the_virtual_clock_still_hears_why_not(pytester):
    pytester.makepyfile(test_real=REAL_TIME)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*is marked real_time, so it has no virtual clock*"])


SHOWN = """
def test_shown(trace, faults):
    pass
"""


def test_setup_show_still_shows_the_kits_fixtures(pytester):
    pytester.makepyfile(test_shown=SHOWN)
    result = pytester.runpytest("-p", "no:randomly", "--setup-show")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SETUP    S trace*", "*SETUP    F faults*"])


COUNTED = """
import pytest

SET_UP = []

@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef):
    SET_UP.append(fixturedef.argname)

def pytest_unconfigure():
    print("SET UP", sorted(set(SET_UP) & {"trace", "faults", "virtual_clock"}))
"""

NAMED = """
import pytest

@pytest.mark.parametrize("n", range(3))
def test_named(n, trace, faults, virtual_clock):
    pass
"""


def test_a_test_naming_them_costs_no_fixture_setup(pytester):
    # What each costs a test through pytest (the trace's too, session-scoped): as much
    # again as the plugin's own setup.
    pytester.makeconftest(COUNTED)
    pytester.makepyfile(test_named=NAMED)
    result = pytester.runpytest("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=3)
    assert "SET UP []" in result.stdout.lines
