"""`FaultPlan` from the outside: ``with plan.active(): agent.run(...)``, no plugin needed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing.faults import FaultPlan


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"<html>{url}</html>"


def agent_with(
    *steps: af.Step, clock: af.VirtualClock | None = None, **options: object
) -> af.Agent:
    model = af.ScriptedModel(list(steps), on_exhausted="repeat_last")
    return af.Agent("bot", model=model, tools=[fetch], clock=clock or af.VirtualClock(), **options)


def test_a_tool_fault_is_injected_retried_and_recorded() -> None:
    plan = FaultPlan(seed=1)
    plan.tool("fetch").raises(ConnectionError("reset")).times(2)
    clock = af.VirtualClock()
    config = af.ResilienceConfig(max_retries=3, strategy="fixed", base_delay=0.5)
    agent = agent_with(
        af.call_tool("fetch", url="https://example.com"),
        af.say("done"),
        clock=clock,
        resilience=config,
    )
    with plan.active():
        result = agent.run("go")
    assert result.output == "done"
    assert [(f.target, f.name, f.kind, f.occurrence) for f in plan.fired] == [
        ("tool", "fetch", "raises", 1),
        ("tool", "fetch", "raises", 2),
    ]
    assert result.trace.count("tool.fault", tool="fetch") == 2
    assert result.trace.retries("fetch") == 2
    assert clock.sleeps == [0.5, 0.5]
    plan.check()


def test_an_llm_fault_replaces_one_model_call() -> None:
    plan = FaultPlan()
    plan.llm.rate_limit(retry_after=2).at(1)

    def on_llm_error(exc: Exception, attempt: int) -> af.LlmErrorDecision:
        assert isinstance(exc, af.RateLimitError)
        return af.LlmErrorDecision.retry(max_attempts=2, initial_backoff=1.0)

    agent = agent_with(af.say("done"), on_llm_error=on_llm_error)
    with plan.active():
        result = agent.run("go")
    assert result.output == "done"
    assert [(f.target, f.kind) for f in plan.fired] == [("llm", "rate_limit")]
    assert [e.status for e in result.trace.of("llm.fault")] == ["rate_limit"]


def test_the_plan_is_off_outside_its_block() -> None:
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError("reset")).times(5)
    agent = agent_with(af.call_tool("fetch", url="https://example.com"), af.say("done"))
    result = agent.run("go")
    assert plan.fired == []
    assert result.trace.count("tool.fault") == 0
    assert result.trace.count("tool.result", tool="fetch") == 1


def test_check_names_a_strict_fault_that_never_fired() -> None:
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError("reset")).at(3)
    plan.tool("fetch").returns("cached").strict(False).at(9)
    with plan.active():
        agent_with(af.call_tool("fetch", url="https://example.com"), af.say("done")).run("go")
    with pytest.raises(AssertionError, match="fetch") as caught:
        plan.check()
    assert str(caught.value).count("never fired") == 1


def test_a_generated_plan_is_an_ordinary_plan() -> None:
    from hypothesis import find

    from pytest_agentfaults import strategies as afst

    plan = find(afst.fault_plans(tools=["fetch"], llm=False, min_faults=1), lambda p: True)
    assert isinstance(plan, FaultPlan)
    with plan.active():
        agent_with(af.call_tool("fetch", url="https://example.com"), af.say("done")).run("go")
    assert [f.name for f in plan.fired] == ["fetch"]


def test_a_plan_works_in_a_process_without_pytest() -> None:
    script = textwrap.dedent(
        """
        import json, sys
        import pytest_agentfaults as af
        from pytest_agentfaults.testing.faults import FaultPlan

        @af.tool
        def fetch(url: str) -> str:
            \"\"\"Fetch.\"\"\"
            return "page"

        plan = FaultPlan(seed=3)
        plan.tool("fetch").raises(TimeoutError("slow")).times(1)
        model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("done")])
        agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
        with plan.active():
            result = agent.run("go")
        print(json.dumps({
            "output": result.output,
            "fired": [str(f) for f in plan.fired],
            "retries": result.trace.retries("fetch"),
            "pytest_loaded": "pytest" in sys.modules,
        }))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    ).stdout
    report = json.loads(out)
    assert report == {
        "output": "done",
        "fired": ["tool:fetch raises (occurrence 1)"],
        "retries": 1,
        "pytest_loaded": False,
    }
