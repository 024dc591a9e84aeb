"""A budget cap reached while the run recovers: no call past the cap, and no retry
announced (or waited for) that the cap leaves no call for.

``Budget.max_llm_calls`` counts every model call, retries and fallbacks included; an
output-correction round is a retry, counted in ``usage.retries``.
"""

from __future__ import annotations

from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, fail, say


class Answer(BaseModel):
    count: int


def agent_with(model, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=model, **kwargs)


def retry_five_times(exc, attempt):
    return af.LlmErrorDecision.retry(max_attempts=5, initial_backoff=1)


def test_the_fallback_after_a_model_error_counts_against_max_llm_calls():
    fallback = ScriptedModel([say("from the fallback")], name="strong", strict=False)
    agent = agent_with(
        ScriptedModel([fail.http(503)]),
        budget=af.Budget(max_llm_calls=1),
        resilience=af.ResilienceConfig(fallback_model=fallback),
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert result.usage.llm_calls == 1
    assert fallback.requests == []
    assert result.trace.count("fallback") == 0
    (stop,) = result.trace.of("budget.exceeded")
    assert stop.status == "max_llm_calls"


def test_the_fallback_still_answers_within_the_budget():
    fallback = ScriptedModel([say("from the fallback")], name="strong")
    agent = agent_with(
        ScriptedModel([fail.http(503)]),
        budget=af.Budget(max_llm_calls=2),
        resilience=af.ResilienceConfig(fallback_model=fallback),
    )
    result = agent.run("x")
    assert (result.status, result.output) == ("ok", "from the fallback")
    assert result.usage.llm_calls == 2


def test_no_model_retry_is_announced_or_waited_for_past_max_llm_calls():
    clock = af.VirtualClock()
    agent = agent_with(
        ScriptedModel([fail.http(503)] * 2),
        clock=clock,
        budget=af.Budget(max_llm_calls=2),
        on_llm_error=retry_five_times,
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert clock.sleeps == [1.0]  # the wait before call 2; none for a call 3 never made
    assert [e.attempt for e in result.trace.of("llm.retry")] == [2]
    assert result.usage.retries == 1
    result.trace.assert_sequence("llm.error", "llm.retry", "llm.error", "budget.exceeded")
    assert [e.type for e in result.trace.events][-3:] == [
        "llm.error",
        "budget.exceeded",
        "run.end",
    ]


def test_no_output_correction_is_announced_past_max_llm_calls():
    model = ScriptedModel([say("not json")])
    agent = agent_with(model, output_type=Answer, budget=af.Budget(max_llm_calls=1))
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert result.trace.count("llm.retry") == 0
    assert result.usage.retries == 0
    # no correction message was sent, so none is left dangling in the conversation
    assert [m.role for m in result.messages] == ["user", "assistant"]


def test_no_output_correction_is_announced_past_max_turns():
    model = ScriptedModel([say("not json")])
    agent = agent_with(model, output_type=Answer, budget=af.Budget(max_turns=1))
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert result.trace.count("llm.retry") == 0
    (stop,) = result.trace.of("budget.exceeded")
    assert stop.status == "max_turns"


def test_output_corrections_are_counted_as_retries():
    model = ScriptedModel([say("three"), say('{"count": "x"}'), say('{"count": 3}')])
    result = agent_with(model, output_type=Answer).run("x")
    assert result.output == Answer(count=3)
    assert result.trace.count("llm.retry") == 2
    assert result.usage.retries == 2
