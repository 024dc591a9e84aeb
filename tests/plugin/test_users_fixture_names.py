"""A user's own fixture named like one of the kit's does not make a test a kit test.

Suites have fixtures of their own called ``trace``, ``faults``, ``virtual_clock``,
``http_faults``, ``llm_server`` or ``openai_client``. A test that asks for one of those,
and for nothing else of the kit, is not using the kit: it keeps the real sleep functions
and its network, and the session prints no seed or summary line for it ("do no harm").
"""

from __future__ import annotations

import pytest

NAMES = (
    "trace",
    "faults",
    "virtual_clock",
    "http_faults",
    "llm_server",
    "scripted_model",
    "openai_client",
    "async_openai_client",
    "anthropic_client",
    "async_anthropic_client",
)

CONFTEST = "import pytest\n" + "".join(
    f"\n@pytest.fixture\ndef {name}():\n    return 'the suite own {name}'\n" for name in NAMES
)

TESTS = """
import asyncio, socket, time
import anyio
import pytest

REAL = (time.sleep, asyncio.sleep, anyio.sleep, socket.socket.connect)


def untouched():
    return (time.sleep, asyncio.sleep, anyio.sleep, socket.socket.connect) == REAL


@pytest.mark.parametrize("name", {names!r})
def test_own(name, request):
    assert request.getfixturevalue(name) == f"the suite own {{name}}"
    assert untouched()

""" + "".join(
    f"""
def test_{name}({name}):
    assert {name} == "the suite own {name}"
    assert untouched()
"""
    for name in NAMES
)


def _write(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_own=TESTS.format(names=NAMES))


def test_a_users_fixture_of_a_kit_fixtures_name_is_no_kit_test(pytester):
    _write(pytester)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(NAMES))
    # a session none of whose tests uses the kit prints nothing of it
    result.stdout.no_fnmatch_line("*agentfaults: seed=*")
    result.stdout.no_fnmatch_line("*faults injected*")


def test_a_users_fixture_of_a_kit_fixtures_name_stays_no_kit_test_after_kit_tests(pytester):
    # once an earlier test loaded the runtime, every later test "may use the kit": a
    # user's fixture of our name must still not switch virtual time or the guard on
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_a_first="import pytest\n\n@pytest.mark.inject_fault(tool='t', raises=OSError, strict=False)\n"
        "def test_kit():\n    pass\n",
        test_own=TESTS.format(names=NAMES),
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1 + 2 * len(NAMES))


EXTENDS = """
import time
import pytest

REAL = time.sleep


@pytest.fixture
def faults(faults):  # the suite's own, built on the kit's: still the kit's
    faults.tool("fetch").raises(ConnectionError("reset")).strict(False)
    return faults


def test_extends(faults, request):
    assert type(faults).__name__ == "FaultPlan"
    assert time.sleep is not REAL  # a kit test: virtual time
"""


def test_a_users_fixture_that_extends_the_kits_keeps_the_test_a_kit_test(pytester):
    pytester.makepyfile(test_extends=EXTENDS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*agentfaults: seed=*"])


CLASH_CONFTEST = """
import pytest
import pytest_agentfaults as af

@pytest.fixture
def virtual_clock():  # from before the kit had one: a clock the kit never waits on
    return af.VirtualClock()
"""

CLASH = """
import time
import pytest

@pytest.mark.inject_fault(tool="fetch", raises=OSError, strict=False)
def test_marked(virtual_clock):
    time.sleep(3)  # on the kit's clock, not on the suite's
    assert virtual_clock.sleeps == []
"""


def test_a_kit_test_given_a_users_fixture_of_a_kit_name_is_warned_naming_it(pytester):
    pytester.makeconftest(CLASH_CONFTEST)
    pytester.makepyfile(test_clash=CLASH)
    result = pytester.runpytest(
        "-p", "no:randomly", "-W", "default::pytest_agentfaults.AgentFaultsWarning"
    )
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        [
            "*AgentFaultsWarning: test_clash.py::test_marked uses the kit (an inject_fault "
            "marker or a kit fixture), but its fixture 'virtual_clock' is not the kit's: it "
            "is the one at conftest.py:*, and shows none of the test's faults, trace or virtual "
            "waits. Rename yours, or build it on the kit's: def virtual_clock(virtual_clock): *",
        ]
    )
