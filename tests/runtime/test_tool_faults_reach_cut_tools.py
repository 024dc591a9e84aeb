"""A tool fault reaches a sync tool that runs on a worker thread to be cut at its timeout.

A timeout you set, in real time, moves a sync tool's attempt onto a worker thread; the
fault plan's injection has to happen there too, or the tool would run for real.
"""

from __future__ import annotations

import threading

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.testing import FaultPlan


def _agent(ran: list[str]) -> af.Agent:
    @af.tool
    def charge(amount: int) -> str:
        """Charge a card."""
        ran.append(threading.current_thread().name)
        return "charged for real"

    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=af.RealClock(),
        resilience=af.ResilienceConfig(tool_overrides={"charge": {"timeout_seconds": 30}}),
    )


def _plan() -> FaultPlan:
    plan = FaultPlan(seed=1)
    plan.tool("charge").returns("declined")
    return plan


def _tool_result(result: af.RunResult) -> str:
    return next(m.content for m in result.messages if m.role == "tool")


def test_a_tool_fault_replaces_a_cut_sync_tool_in_run():
    ran: list[str] = []
    plan = _plan()
    with plan.active():
        result = _agent(ran).run("pay")
    assert ran == []  # the fault answered in the tool's place
    assert _tool_result(result) == "declined"
    assert [(f.target, f.name) for f in plan.fired] == [("tool", "charge")]


@pytest.mark.asyncio
async def test_a_tool_fault_replaces_a_cut_sync_tool_in_arun():
    ran: list[str] = []
    plan = _plan()
    with plan.active():
        result = await _agent(ran).arun("pay")
    assert ran == []
    assert _tool_result(result) == "declined"
    assert [(f.target, f.name) for f in plan.fired] == [("tool", "charge")]


def test_without_a_fault_the_cut_sync_tool_runs_on_a_worker_thread():
    ran: list[str] = []
    plan = FaultPlan(seed=1)
    plan.tool("other").returns("x").strict(False)
    with plan.active():
        result = _agent(ran).run("pay")
    assert _tool_result(result) == "charged for real"
    assert len(ran) == 1
    assert ran[0] != threading.current_thread().name
