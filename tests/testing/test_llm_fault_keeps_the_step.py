"""A transient llm fault fails the model call and leaves the scripted step for the retry.

The malformed kinds still replace the answer of the call they hit, using that step up.
Each test builds its own `FaultPlan` and activates it, as a user outside pytest would.
"""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing import FaultPlan, ScriptedModel, call_tool, say

TRANSIENT = ("rate_limit", "server_error", "timeout", "connection")
MALFORMED = ("malformed_tool_args", "empty", "blocked", "not_json", "unknown_tool", "truncated")


def _agent(model: ScriptedModel, calls: list[str]) -> af.Agent:
    @af.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        calls.append(url)
        return "page"

    return af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        clock=af.VirtualClock(),
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(
            max_attempts=3, initial_backoff=1.0
        ),
    )


def _plan(kind: str) -> FaultPlan:
    plan = FaultPlan(seed=1)
    plan.add(af.testing.faults.parse_marker((), {"llm": kind}))
    return plan


@pytest.mark.parametrize("kind", TRANSIENT)
def test_a_transient_fault_leaves_the_step_for_the_retry(kind: str) -> None:
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    calls: list[str] = []
    plan = _plan(kind)
    with plan.active():
        result = _agent(model, calls).run("go")
    assert calls == ["https://x.test"]  # the tool really ran
    assert result.output == "done"
    assert result.trace.count("tool.result", tool="fetch") == 1
    assert result.trace.count("llm.fault") == 1
    assert result.trace.count("llm.retry") == 1
    # the faulted call is recorded, then the retry and the next turn get both steps
    assert len(model.requests) == 3
    assert model.remaining == 0
    assert [(f.target, f.kind) for f in plan.fired] == [("llm", kind)]


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", TRANSIENT)
async def test_a_transient_fault_leaves_the_step_for_the_retry_async(kind: str) -> None:
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    calls: list[str] = []
    with _plan(kind).active():
        result = await _agent(model, calls).arun("go")
    assert calls == ["https://x.test"]
    assert result.output == "done"
    assert result.trace.count("tool.result", tool="fetch") == 1
    assert len(model.requests) == 3
    assert model.remaining == 0


def test_a_fluent_transient_fault_on_a_later_call_keeps_that_calls_step() -> None:
    model = ScriptedModel([call_tool("fetch", url="a"), call_tool("fetch", url="b"), say("done")])
    calls: list[str] = []
    plan = FaultPlan(seed=1)
    plan.llm.server_error(502).at(2).times(2)
    with plan.active():
        result = _agent(model, calls).run("go")
    assert calls == ["a", "b"]
    assert result.output == "done"
    assert result.trace.count("llm.fault") == 2
    assert len(model.requests) == 5
    assert model.remaining == 0


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_fault_replaces_the_answer_and_uses_the_step_up(kind: str) -> None:
    # strict=False: what the agent does after the fault differs per kind, so a step may stay
    model = ScriptedModel(
        [call_tool("fetch", url="https://x.test"), say("done"), say("spare")], strict=False
    )
    calls: list[str] = []
    plan = _plan(kind)
    with plan.active():
        _agent(model, calls).run("go")
    assert calls == []  # the call_tool step was replaced: fetch never asked for
    assert model.requests[0].messages[-1].content == "go"
    assert model.remaining < 2  # the replaced step is gone, whatever the agent did next
    assert [(f.target, f.kind) for f in plan.fired] == [("llm", kind)]
