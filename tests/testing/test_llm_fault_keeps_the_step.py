"""An llm fault never uses up a scripted step: the step stays for the next call.

A transient kind fails the model call; a malformed kind answers it in the model's place.
Either way the script's step is what the model says next, so a fault cannot eat a
``call_tool`` step and let a test pass while its tool never ran. Each test builds its own
`FaultPlan` and activates it, as a user outside pytest would.
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


def _assert_the_step_stayed(
    result: af.RunResult, model: ScriptedModel, calls: list[str], plan: FaultPlan, kind: str
) -> None:
    assert calls == ["https://x.test"]  # the call_tool step was not eaten: the tool ran
    assert result.output == "done"
    assert result.trace.count("tool.result", tool="fetch") == 1
    assert result.trace.count("llm.fault") == 1
    # the faulted call is recorded; the next call gets the call_tool step, then "done"
    assert len(model.requests) == 3
    assert model.remaining == 0
    assert [(f.target, f.kind) for f in plan.fired] == [("llm", kind)]


@pytest.mark.parametrize("kind", TRANSIENT)
def test_a_transient_fault_leaves_the_step_for_the_retry(kind: str) -> None:
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    calls: list[str] = []
    plan = _plan(kind)
    with plan.active():
        result = _agent(model, calls).run("go")
    _assert_the_step_stayed(result, model, calls, plan, kind)
    assert result.trace.count("llm.retry") == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", TRANSIENT + MALFORMED)
async def test_no_llm_fault_uses_up_the_step_async(kind: str) -> None:
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
def test_a_malformed_fault_answers_before_the_step_which_stays(kind: str) -> None:
    # strict: every step must be used, so the fault took none of them
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    calls: list[str] = []
    plan = _plan(kind)
    with plan.active():
        result = _agent(model, calls).run("go")
    _assert_the_step_stayed(result, model, calls, plan, kind)


def test_the_round_trip_the_marker_promises_a_malformed_tool_call_then_the_real_one() -> None:
    # The case that used to pass while the tool never ran: no retry policy is needed, the
    # agent feeds the broken call back and the model's next answer is the scripted call.
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    calls: list[str] = []
    plan = _plan("malformed_tool_args")

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        calls.append(url)
        return "page"

    with plan.active():
        result = af.Agent("bot", model=model, tools=[fetch]).run("go")
    assert calls == ["https://x.test"]
    kinds = [event.type for event in result.trace if event.type.startswith(("llm.", "tool."))]
    assert kinds == [
        "llm.request", "llm.fault", "llm.response", "tool.error",
        "llm.request", "llm.response", "tool.call", "tool.result",
        "llm.request", "llm.response",
    ]  # fmt: skip
