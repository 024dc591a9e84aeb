"""``function="pkg.module:attr"`` and ``faults.function(...)``: a plain callable by import path.

The attribute is patched for the test as ``unittest.mock.patch`` would patch it, every call
is one attempt (``framework="function"``), and teardown puts the original back.
"""

from __future__ import annotations

import pytest

HELPERS = """
import asyncio

CALLS = []


def fetch(url):
    CALLS.append(url)
    return f"page of {url}"


async def afetch(url):
    await asyncio.sleep(0)
    CALLS.append(url)
    return f"async page of {url}"


class Client:
    def get(self, key):
        CALLS.append(key)
        return key.upper()

    @staticmethod
    def ping():
        return "pong"


NOT_CALLABLE = 3
"""

APP = """
import helpers


def load(url, tries=3):
    for attempt in range(tries):
        try:
            return helpers.fetch(url=url)
        except ConnectionError:
            continue
    raise RuntimeError("gave up")
"""

SUITE = """
import asyncio

import pytest

import app
import helpers
import pytest_agentfaults as af

ORIGINAL = helpers.fetch


@pytest.mark.inject_fault(function="helpers:fetch", raises=ConnectionError("reset"), times=2)
def test_a_marker_fault_and_the_apps_own_retries(trace, faults):
    assert app.load("u") == "page of u"
    assert helpers.CALLS == ["u"]
    assert trace.tool_attempts("helpers:fetch") == 3
    trace.assert_sequence(["tool.fault", "tool.fault", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"function"}
    assert trace.of("tool.call")[0].detail == '{"url": "u"}'
    assert [str(f) for f in faults.fired] == [
        "tool:helpers:fetch raises (occurrence 1)",
        "tool:helpers:fetch raises (occurrence 2)",
    ]


def test_b_after_it_the_function_is_the_original():
    assert helpers.fetch is ORIGINAL


def test_c_fluent_async_method_and_staticmethod(faults, trace):
    helpers.CALLS.clear()
    faults.function("helpers:afetch").returns("cached")
    faults.function("helpers:Client.get").returns(af.ToolFailure(error="quota"))
    faults.function("helpers:Client.ping").raises(TimeoutError)
    assert asyncio.run(helpers.afetch("x")) == "cached"
    assert helpers.Client().get("k") == af.ToolFailure(error="quota")
    with pytest.raises(TimeoutError):
        helpers.Client.ping()
    assert helpers.Client().get("k") == "K"  # times=1: the second call runs
    assert helpers.CALLS == ["k"]
    assert trace.tool_attempts("helpers:Client.get") == 2


def test_d_everything_is_back():
    assert helpers.fetch is ORIGINAL
    assert "get" in vars(helpers.Client) and not hasattr(helpers.Client.get, "__wrapped__")
    assert isinstance(vars(helpers.Client)["ping"], staticmethod)
    assert helpers.Client.ping() == "pong"
"""


def test_function_faults_patch_for_the_test_and_undo_at_teardown(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(helpers=HELPERS, app=APP, test_suite=SUITE)
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=4)


def test_a_strict_function_fault_that_never_fired(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        helpers=HELPERS,
        test_never="""
        import pytest

        @pytest.mark.inject_fault(function="helpers:fetch", raises=ConnectionError())
        def test_never_calls_it():
            pass
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fault on function 'helpers:fetch' never fired*"])


def test_a_function_fault_missed_by_a_kept_reference_says_why(pytester: pytest.Pytester) -> None:
    # The app imported fetch by name, before the test: it keeps the original, and the
    # patched helpers.fetch is never called. "The agent never called a tool; make the
    # agent call it" was wrong on both counts: it did call it, and no agent is involved.
    pytester.makepyfile(
        helpers=HELPERS,
        app_by_name="""
        from helpers import fetch

        def load(url):
            return fetch(url)
        """,
        test_kept="""
        import pytest
        import app_by_name

        @pytest.mark.inject_fault(function="helpers:fetch", raises=ConnectionError())
        def test_the_app_keeps_the_original():
            assert app_by_name.load("u") == "page of u"
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fault on function 'helpers:fetch' never fired*",
            "*what happened: helpers:fetch was not called through that path*",
            "*fix: code that took fetch before the test (from helpers import fetch, or an "
            "object built with it at import) still calls the original*",
        ]
    )
    result.stdout.no_fnmatch_line("*the agent never called a tool*")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("helpers.fetch", "*function= takes an import path 'pkg.module:attr'*"),
        ("helpers:fe tch", "*is not an import path*"),
        ("no_such_module:fetch", "*cannot import module 'no_such_module'*"),
        ("helpers:nope", "*'helpers' has no attribute 'nope'*"),
        ("helpers:NOT_CALLABLE", "*is int, not a function*"),
    ],
)
def test_a_bad_path_is_a_usage_error_naming_the_marker(
    pytester: pytest.Pytester, path: str, message: str
) -> None:
    pytester.makepyfile(
        helpers=HELPERS,
        test_bad=f"""
        import pytest

        @pytest.mark.inject_fault(function={path!r}, raises=ConnectionError())
        def test_it():
            pass
        """,
    )
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:randomly", "-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"*UsageError: *@pytest.mark.inject_fault(function={path!r}*{message}"]
    )


def test_the_fluent_call_checks_the_path_at_once() -> None:
    from pytest_agentfaults.errors import UsageError
    from pytest_agentfaults.testing.faults import FaultPlan

    with pytest.raises(UsageError, match=r"faults.function\('nocolon'\): function= takes"):
        FaultPlan().function("nocolon")
