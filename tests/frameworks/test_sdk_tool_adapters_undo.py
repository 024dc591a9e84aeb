"""The anthropic and google-genai tool adapters are gone after a kit test, whatever failed."""

from __future__ import annotations

import pytest

SUITE = """
import pytest
from anthropic.lib.tools import _beta_functions, _beta_runner
from google.genai import _extra_utils

def current():
    return {
        "call": _beta_functions.BetaFunctionTool.__dict__["call"],
        "acall": _beta_functions.BetaAsyncFunctionTool.__dict__["call"],
        "run_tool": _beta_runner.BaseSyncToolRunner.__dict__["_run_tool"],
        "invoke": _extra_utils.invoke_function_from_dict_args,
        "ainvoke": _extra_utils.invoke_function_from_dict_args_async,
        "parts": _extra_utils.get_function_response_parts,
    }


ORIGINALS = current()  # at import, before any test


@pytest.fixture
def breaks_at_teardown():
    yield
    raise RuntimeError("a fixture's teardown failed")


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), strict=False)
def test_a_kit_test_with_a_failing_teardown(breaks_at_teardown):
    on = current()
    assert all(on[key] is not ORIGINALS[key] for key in ORIGINALS), on


def test_b_a_later_plain_test_sees_the_sdks_own_functions():
    assert current() == ORIGINALS
"""


def test_the_sdk_tool_hooks_are_undone_when_a_teardown_raises(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_it=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*a fixture's teardown failed*"])
