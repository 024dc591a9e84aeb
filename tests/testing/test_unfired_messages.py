"""The "never fired" message says what really happened (tester's report D): a stacked
fault's at= counted from the earlier faults, a fault declared after its tool ran, an
llm= fault aimed at an agent whose model was never called."""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing._fault import LLMFault
from pytest_agentfaults.testing._unfired import explain_unfired
from pytest_agentfaults.testing.faults import FaultPlan


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


def _agent() -> af.Agent:
    model = af.ScriptedModel([af.call_tool("fetch", url="u"), af.say("done")])
    return af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())


def _unfired_message(plan: FaultPlan) -> str:
    with pytest.raises(AssertionError) as caught:
        plan.check()
    return str(caught.value)


def test_a_stacked_fault_s_at_is_explained_counting_the_earlier_faults():
    plan = FaultPlan(seed=1)
    plan.tool("fetch").raises(ConnectionError("first"))
    plan.tool("fetch").raises(TimeoutError("second")).at(2)
    with plan.active():
        _agent().run("go")  # call 1: the first fault; call 2 (the retry) works
    message = _unfired_message(plan)
    assert "what happened: fetch was called 2 times, and the fault waits for call 3" in message
    assert "call 1 went to the faults declared before it" in message
    assert "at=2 counts from call 2" in message
    assert "waits for call 2 (at=2)" not in message  # the old, wrong, count
    assert "fix: lower at= (at=1 is call 2 here" in message


def test_a_lone_fault_s_at_is_explained_as_before():
    plan = FaultPlan(seed=1)
    plan.tool("fetch").raises(ConnectionError("x")).at(5)
    with plan.active():
        _agent().run("go")
    message = _unfired_message(plan)
    assert "fetch was called 1 time, and the fault waits for call 5 (at=5)" in message
    assert "fix: lower at= (at=1 is the first call)" in message


def test_a_fault_declared_after_its_tool_ran_says_so():
    plan = FaultPlan(seed=1)
    with plan.active():
        _agent().run("go")
        plan.tool("fetch").raises(ConnectionError("late"))
    message = _unfired_message(plan)
    assert "what happened: fetch was called before this fault was declared" in message
    assert "the tools called were fetch" not in message  # which read as a misspelt name
    assert "fix: declare faults before running the code under test" in message


def test_an_agent_that_never_called_its_model_names_the_agents_seen():
    fault = LLMFault(kind="rate_limit", agent="bott", source="faults.llm.rate_limit()")
    message = explain_unfired(fault, {}, set(), agents_called={"bot", "fixer"})
    seen = "no model call of agent 'bott' was seen; the agents that called a model were bot, fixer"
    assert seen in message
    assert "fix: name an agent that runs (agent= is the name given to af.Agent)" in message


def test_an_agent_fault_in_a_test_without_known_agents_still_names_the_agent_fix():
    plan = FaultPlan(seed=1)
    plan.llm.rate_limit().agent("bott")
    with plan.active():
        _agent().run("go")
    message = _unfired_message(plan)
    assert "no model call of agent 'bott' was seen" in message
    assert "agent= is the name given to af.Agent" in message
    assert "run an af.Agent in the test" not in message


def test_an_llm_fault_for_every_agent_without_model_calls_is_unchanged():
    fault = LLMFault(kind="rate_limit", source="faults.llm.rate_limit()")
    message = explain_unfired(fault, {}, set())
    assert "no af.Agent model call was seen" in message
    assert "run an af.Agent in the test" in message


def test_a_misspelt_agent_names_the_agents_whose_model_calls_the_plan_saw():
    from pytest_agentfaults import ScriptedModel, say

    plan = FaultPlan()
    plan.llm.rate_limit().agent("bott")
    with plan.active():
        af.Agent("bot", model=ScriptedModel([say("hi")])).run("go")
    with pytest.raises(AssertionError) as caught:
        plan.check()
    assert "the agents that called a model were bot" in str(caught.value)
