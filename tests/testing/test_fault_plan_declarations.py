"""Declaring faults on a plan, outside pytest: bad tool names, and function targets that
are patched only while the plan is active and say so when they never fired."""

from __future__ import annotations

import sys
import types

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing import FaultPlan


@pytest.mark.parametrize("name", ["", 3])
def test_a_tool_fault_needs_a_tool_name(name):
    with pytest.raises(UsageError) as caught:
        FaultPlan().tool(name)  # type: ignore[arg-type]
    assert str(caught.value) == f"faults.tool(name): give a tool name, got {name!r}"


@pytest.fixture
def helpers():
    module = types.ModuleType("agentfaults_declared_helpers")

    def lookup(key: str) -> str:
        return f"value of {key}"

    module.lookup = lookup  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        del sys.modules[module.__name__]


def test_a_function_fault_patches_only_while_its_plan_is_active(helpers):
    original = helpers.lookup
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    assert helpers.lookup is original  # declared, not yet active: untouched
    with plan.active(), pytest.raises(ConnectionError, match="down"):
        helpers.lookup("k")
    assert helpers.lookup is original
    assert helpers.lookup("k") == "value of k"


def test_a_function_fault_declared_on_an_active_plan_is_patched_at_once(helpers):
    plan = FaultPlan()
    with plan.active():
        plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
        with pytest.raises(ConnectionError):
            helpers.lookup("k")
    assert helpers.lookup("k") == "value of k"


def test_an_unfired_function_fault_names_its_declaration_and_the_patched_path(helpers):
    plan = FaultPlan()
    plan.function("agentfaults_declared_helpers:lookup").raises(ConnectionError("down"))
    with plan.active():
        pass
    with pytest.raises(AssertionError) as caught:
        plan.check()
    message = str(caught.value)
    assert "faults.function('agentfaults_declared_helpers:lookup')" in message
    assert message.endswith("\n  the function was patched, and never called through that path")
