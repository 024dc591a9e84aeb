"""The plan interceptor sorts a plan's faults once, and sorts again when the plan changes.

It remembers each fault's description too; a fault changed between hits says what it
injects now.
"""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.testing.faults import FaultPlan


def _agent(calls: int) -> tuple[af.Agent, ScriptedModel]:
    @af.tool
    def fetch() -> str:
        """Fetch."""
        return "ok"

    model = ScriptedModel([*(call_tool("fetch") for _ in range(calls)), say("done")])
    agent = af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=0, strategy="none"),
    )
    return agent, model


def test_a_fault_added_after_the_first_attempt_is_injected():
    agent, _ = _agent(calls=2)
    plan = FaultPlan()
    plan.tool("other").raises(ValueError)  # sorted at the first attempt: nothing on fetch
    seen: list[int] = []

    def add_a_fault(event: af.Event) -> None:
        if event.type == "tool.result" and not seen:
            seen.append(1)
            plan.tool("fetch").raises(ConnectionError("reset"))

    agent.observers = (*agent.observers, add_a_fault)
    with plan.active():
        result = agent.run("go")
    assert result.trace.count("tool.fault", tool="fetch") == 1
    assert result.trace.count("tool.result", tool="fetch") == 1
    assert [f.fault.tool for f in plan.fired if hasattr(f.fault, "tool")] == ["fetch"]


def test_the_fault_event_describes_what_the_fault_injects_at_each_hit():
    agent, _ = _agent(calls=2)
    plan = FaultPlan()
    builder = plan.tool("fetch").raises(ConnectionError).times(2)

    def change_it(event: af.Event) -> None:
        if event.type == "tool.fault" and event.detail.endswith("ConnectionError"):
            builder.fault.raises = TimeoutError  # the fault changed between two hits

    agent.observers = (*agent.observers, change_it)
    with plan.active():
        result = agent.run("go")
    details = [e.detail for e in result.trace.of("tool.fault")]
    assert details == ["tool 'fetch' raises ConnectionError", "tool 'fetch' raises TimeoutError"]


def test_idempotence_declared_by_a_fault_marks_its_events():
    agent, _ = _agent(calls=1)
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError("reset")).idempotent(False)
    with plan.active():
        result = agent.run("go")
    (fault,) = result.trace.of("tool.fault")
    assert fault.idempotent is False
    assert result.trace.of("tool.call")[0].idempotent is False


def test_a_fault_added_between_two_attempts_of_one_call_hits_the_retry():
    # Added after the call's first attempt failed: the call asked the plan about the tool
    # before that, so the retry's own check is what must see the new fault.
    failures = [1]

    @af.tool
    def fetch() -> str:
        """Fetch; fails once."""
        if failures[0]:
            failures[0] -= 1
            raise ConnectionError("reset")
        return "ok"

    model = ScriptedModel([call_tool("fetch"), say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    plan = FaultPlan()
    plan.tool("other").raises(ValueError)

    def add_a_fault(event: af.Event) -> None:
        if event.type == "tool.error" and not plan.of("tool")[1:]:
            plan.tool("fetch").raises(TimeoutError("slow"))

    agent.observers = (*agent.observers, add_a_fault)
    with plan.active():
        result = agent.run("go")
    assert [e.attempt for e in result.trace.of("tool.fault", tool="fetch")] == [2]
    assert [e.error.type for e in result.trace.of("tool.error")] == [
        "ConnectionError",
        "TimeoutError",
    ]
    assert result.trace.count("tool.result", tool="fetch") == 1
