"""A bad marker's error says where it was written and what to write instead (audit
finding 15): the test's file:line, or the module's pytestmark once, and a did-you-mean."""

from __future__ import annotations

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._marker import parse_marker


def test_a_bad_marker_names_the_tests_file_and_line(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raise_=ConnectionError("reset"))
def test_typo():
    make().run("go")
""").runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "E   *UsageError: test_suite.py:18 (test_typo): @pytest.mark.inject_fault(tool='fetch', "
            "raise_=ConnectionError('reset')): unknown key 'raise_' for a tool fault "
            "(did you mean raises=?); valid keys: *",
        ]
    )


def test_a_bad_module_pytestmark_is_reported_in_full_once(pytester):
    pytester.makepyfile(
        test_mod="""
import pytest
pytestmark = pytest.mark.inject_fault(tool="fetch", retries=3)

def test_a(): pass
def test_b(): pass
def test_c(): pass
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    errors = [line for line in out.splitlines() if line.startswith("E ")]
    assert sum("unknown key 'retries'" in line for line in errors) == 1, out
    result.stdout.fnmatch_lines(
        [
            "E   *UsageError: module pytestmark of test_mod.py: "
            "@pytest.mark.inject_fault(tool='fetch', retries=3): unknown key 'retries' for a "
            "tool fault (did you mean times=? times= is how many calls the fault hits; "
            "retries are the agent's resilience=); valid keys: *",
        ]
    )
    again = "the module pytestmark of test_mod.py is invalid: see the error at test_mod.py::test_a"
    assert sum(again in line for line in errors) == 2


@pytest.mark.parametrize(
    ("marker", "hint"),
    [
        ({"llm": "rate_limt"}, "got 'rate_limt'; did you mean 'rate_limit'?"),
        ({"http": "timout"}, "got 'timout'; did you mean 'timeout'?"),
    ],
)
def test_a_misspelt_kind_gets_the_closest(marker, hint):
    with pytest.raises(UsageError) as raised:
        parse_marker((), marker)
    assert str(raised.value).endswith(hint)


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("raise_", "(did you mean raises=?)"),
        ("exception", "(did you mean raises=?)"),
        ("return_value", "(did you mean returns=?)"),
        ("tims", "(did you mean times=?)"),
    ],
)
def test_a_misspelt_key_gets_the_closest(key, hint):
    with pytest.raises(UsageError) as raised:
        parse_marker((), {"tool": "fetch", key: 1})
    assert hint in str(raised.value)


# ------------------------------------------------------------ fluent typos (finding 16)


def test_a_fluent_typo_names_the_closest_method_and_the_fault_is_not_shown_half_built(suite):
    result = suite("""
def test_tool(faults):
    faults.tool("fetch").raisse(ConnectionError("reset"))

def test_llm(faults):
    faults.llm.rate_limt()
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E *AttributeError: faults.tool('fetch') has no method .raisse(); "
            "did you mean .raises()? (its methods: .at(), .delay(), *)",
            "E *AttributeError: faults.llm has no method .rate_limt(); "
            "did you mean .rate_limit()? (its methods: *)",
        ]
    )
    out = result.stdout.str()
    assert "(no action) None" not in out
    assert "tool 'fetch' (unfinished: no .raises(), .returns() or .delay())" in out
