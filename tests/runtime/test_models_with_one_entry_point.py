"""A model with only ``request`` (sync) or only ``arequest`` (async), and faults around them.

`agent.run()` needs ``request``, `agent.arun()` needs ``arequest``: the wrong one fails
with a `UsageError` naming the model and the driver to use. A fault that answers in the
model's place (a malformed kind, as a transient one) does not call it, so a model that
counts its calls (a server's script) gives its next answer to the call that follows.
"""

from __future__ import annotations

import contextvars

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ModelResponse
from pytest_agentfaults.testing import FaultPlan


class AsyncOnly:
    """A model with only ``arequest``, and a ``name``."""

    name = "cloud-async"

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=Message.assistant("hi"))


class SyncOnly:
    """A model with only ``request``, and no ``name``: it goes by its class."""

    def request(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(message=Message.assistant("hi"))


class Counting:
    """A model that answers "answer N" to its N-th call, sync or async."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def request(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        return ModelResponse(message=Message.assistant(f"answer {self.calls}"))

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        return self.request(request)


def _bare_run(agent: af.Agent) -> af.RunResult:
    """``agent.run`` outside the plugin's per-test fault plan, as in an app."""
    return contextvars.Context().run(agent.run, "go")


def test_run_with_an_async_only_model_names_it_and_says_to_await_arun():
    agent = af.Agent("bot", model=AsyncOnly(), clock=af.VirtualClock())
    with pytest.raises(UsageError) as caught:
        _bare_run(agent)
    assert str(caught.value) == (
        "model 'cloud-async' has no sync request(); use await agent.arun()"
    )


@pytest.mark.asyncio
async def test_arun_with_a_sync_only_model_names_its_class_and_says_to_use_run():
    agent = af.Agent("bot", model=SyncOnly(), clock=af.VirtualClock())
    with pytest.raises(UsageError) as caught:
        await agent.arun("go")
    assert str(caught.value) == "model 'SyncOnly' has no async arequest(); use agent.run()"


def test_run_with_a_sync_only_model_under_a_fault_plan_says_the_same():
    agent = af.Agent("bot", model=AsyncOnly(), clock=af.VirtualClock())
    plan = FaultPlan(seed=1)
    plan.llm.server_error().at(5)  # active, but not on the first call
    with plan.active(), pytest.raises(UsageError, match="has no sync request"):
        agent.run("go")


def _blocked_once() -> FaultPlan:
    plan = FaultPlan(seed=1)
    plan.llm.blocked()
    return plan


def _retrying(model: Counting) -> af.Agent:
    return af.Agent(
        "bot",
        model=model,
        clock=af.VirtualClock(),
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=2),
    )


def test_a_fault_answering_in_the_models_place_does_not_call_it_in_run():
    model = Counting()
    with _blocked_once().active():
        result = _retrying(model).run("go")
    # the blocked answer came from the fault; the model's first answer went to the retry
    assert (result.output, model.calls) == ("answer 1", 1)
    assert "model 'counting' blocked its answer" in str(result.trace.of("llm.error")[0].error)


@pytest.mark.asyncio
async def test_a_fault_answering_in_the_models_place_does_not_call_it_in_arun():
    model = Counting()
    with _blocked_once().active():
        result = await _retrying(model).arun("go")
    assert (result.output, model.calls) == ("answer 1", 1)


@pytest.mark.asyncio
async def test_an_unfaulted_call_under_an_active_plan_gets_the_models_own_answer():
    model = Counting()
    plan = FaultPlan(seed=1)
    plan.llm.blocked().at(3)
    with plan.active():
        first = af.Agent("bot", model=model, clock=af.VirtualClock()).run("go")
        second = await af.Agent("bot", model=model, clock=af.VirtualClock()).arun("go")
    assert (first.output, second.output) == ("answer 1", "answer 2")
    assert plan.fired == []
