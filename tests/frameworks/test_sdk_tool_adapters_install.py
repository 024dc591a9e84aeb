"""Installing the anthropic and google-genai tool adapters: twice, over others, on a changed SDK.

The adapters' install and undo, called directly as the registry calls them.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import beta_tool
from anthropic.lib.tools import _beta_functions, _beta_runner
from google.genai import _extra_utils

import pytest_agentfaults as af
from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._frameworks import anthropic as anthropic_adapter
from pytest_agentfaults.testing._frameworks import google_genai as genai_adapter

CALL = _beta_functions.BetaFunctionTool.__dict__["call"]
INVOKE = _extra_utils.invoke_function_from_dict_args


@pytest.mark.parametrize("adapter", [anthropic_adapter, genai_adapter], ids=["anthropic", "genai"])
def test_installed_twice_the_inner_install_changes_nothing(adapter: Any) -> None:
    outer = adapter.install()
    try:
        hooked = (
            _beta_functions.BetaFunctionTool.__dict__["call"],
            _extra_utils.invoke_function_from_dict_args,
        )
        inner = adapter.install()  # an enclosing session hooked them already
        inner()
        now = (
            _beta_functions.BetaFunctionTool.__dict__["call"],
            _extra_utils.invoke_function_from_dict_args,
        )
        assert now == hooked
    finally:
        outer()
    assert _beta_functions.BetaFunctionTool.__dict__["call"] is CALL
    assert _extra_utils.invoke_function_from_dict_args is INVOKE


def test_a_patch_made_over_the_hook_is_left_to_its_owner() -> None:
    theirs = lambda self, input: "theirs"  # noqa: A006, E731 - a patch of someone else's
    try:
        undo = anthropic_adapter.install()
        _beta_functions.BetaFunctionTool.call = theirs
        undo()
        assert _beta_functions.BetaFunctionTool.__dict__["call"] is theirs
        undo = genai_adapter.install()
        _extra_utils.invoke_function_from_dict_args = theirs
        undo()
        assert _extra_utils.invoke_function_from_dict_args is theirs
    finally:  # what the owner of that patch would put back
        _beta_functions.BetaFunctionTool.call = CALL
        _extra_utils.invoke_function_from_dict_args = INVOKE


def test_an_sdk_without_the_hooked_path_is_unhookable(monkeypatch: pytest.MonkeyPatch) -> None:
    # the second hook cannot be made: the first, made already, is undone
    monkeypatch.delattr(_beta_functions.BetaAsyncFunctionTool, "call")
    with pytest.raises(Unhookable, match="BetaAsyncFunctionTool has no call of its own"):
        anthropic_adapter.install()
    assert _beta_functions.BetaFunctionTool.__dict__["call"] is CALL
    monkeypatch.delattr(_extra_utils, "invoke_function_from_dict_args_async")
    with pytest.raises(Unhookable, match="no invoke_function_from_dict_args_async"):
        genai_adapter.install()
    assert _extra_utils.invoke_function_from_dict_args is INVOKE


def test_a_runner_without_run_tool_still_has_its_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(_beta_runner.BaseSyncToolRunner, "_run_tool")
    monkeypatch.delattr(_extra_utils, "get_function_response_parts")
    anthropic_undo, genai_undo = anthropic_adapter.install(), genai_adapter.install()
    anthropic_undo()
    genai_undo()
    assert _beta_functions.BetaFunctionTool.__dict__["call"] is CALL


@af.tool
def _never(x: int) -> int:
    """Never called."""
    return x


def test_input_the_sdk_cannot_read_takes_no_fault() -> None:
    @beta_tool
    def get_weather(city: str) -> str:
        """Weather."""
        return city

    class Broken:
        name = "broken"

        @property
        def input_schema(self) -> dict[str, Any]:
            raise RuntimeError("no schema")

    assert anthropic_adapter._refused(get_weather, "not a dict")
    assert anthropic_adapter._refused(get_weather, {"town": "x"})
    assert not anthropic_adapter._refused(get_weather, {"city": "x"})
    assert not anthropic_adapter._refused(Broken(), {"city": "x"})  # the SDK will say


def test_a_function_without_a_signature_is_taken_as_callable() -> None:
    assert genai_adapter._takes(print, {})
    assert genai_adapter._name(print) == "print"
    with pytest.raises(genai_adapter._FunctionFailed, match="down Recommendations: retry"):
        genai_adapter._failed(af.ToolFailure(error="down", recommendations=["retry"]))
