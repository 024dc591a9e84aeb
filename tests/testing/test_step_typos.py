"""A misspelt step constructor (`malformed.emtpy()`, `fail.rate_limt()`) names the fix.

The fluent fault builders already answer a typo with the closest method and the list of
them all; the two step namespaces of a script answer the same way, and point across when
the name belongs to the other one (`fail.empty()` is `malformed.empty()`), or is an
``llm=`` kind whose step has another name (`fail.server_error()` is `fail.http(503)`).
"""

from __future__ import annotations

import traceback

import pytest

from pytest_agentfaults.testing import FaultPlan, fail, malformed


def test_a_misspelt_malformed_step_names_the_closest_and_lists_them_all() -> None:
    with pytest.raises(AttributeError) as caught:
        malformed.emtpy()  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "malformed has no step .emtpy(); did you mean malformed.empty()?" in message
    for step in ("tool_args", "unknown_tool", "empty", "blocked", "not_json", "truncated"):
        assert f".{step}()" in message


def test_a_misspelt_fail_step_names_the_closest_and_lists_them_all() -> None:
    with pytest.raises(AttributeError) as caught:
        fail.rate_limt()  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "fail has no step .rate_limt(); did you mean fail.rate_limit()?" in message
    for step in ("http", "rate_limit", "timeout", "connection"):
        assert f".{step}()" in message


@pytest.mark.parametrize(
    ("namespace", "name", "fix"),
    [
        (fail, "empty", "malformed.empty()"),
        (fail, "not_json", "malformed.not_json()"),
        (malformed, "timeout", "fail.timeout()"),
        (malformed, "rate_limit", "fail.rate_limit()"),
        (fail, "server_error", "fail.http(503)"),
        (malformed, "malformed_tool_args", "malformed.tool_args()"),
    ],
)
def test_a_step_of_the_other_namespace_or_an_llm_kind_points_to_its_step(
    namespace: object, name: str, fix: str
) -> None:
    with pytest.raises(AttributeError) as caught:
        getattr(namespace, name)
    assert f"did you mean {fix}?" in str(caught.value)


def test_private_and_dunder_lookups_stay_plain_attribute_errors() -> None:
    # copy, pickle and introspection probe such names; they must not get the typo message
    with pytest.raises(AttributeError) as caught:
        malformed.__wrapped__  # type: ignore[attr-defined]  # noqa: B018
    assert "did you mean" not in str(caught.value)
    assert not hasattr(fail, "_private")


def _misspelt_step() -> object:
    return malformed.emtpy()


def _misspelt_fluent_call() -> object:
    return FaultPlan().tool("fetch").raisse


@pytest.mark.parametrize("misspelt", [_misspelt_step, _misspelt_fluent_call])
def test_python_adds_no_second_suggestion(misspelt):
    # Python 3.12+ appends "Did you mean: 'empty'?" to an AttributeError it can augment,
    # so the shown error would suggest twice, in two styles.
    with pytest.raises(AttributeError) as caught:
        misspelt()
    shown = "".join(traceback.format_exception_only(caught.type, caught.value))
    assert "did you mean" in shown
    assert "Did you mean" not in shown
