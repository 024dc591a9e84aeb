"""on_llm_error decisions, fallback models, structured output, combinators, loop_until."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, malformed, say


def agent_with(steps, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    model = steps if not isinstance(steps, list) else ScriptedModel(steps)
    return af.Agent("bot", model=model, **kwargs)


# ----------------------------------------------------------------------- on_llm_error


def test_retry_decision_backs_off_through_the_clock_and_asks_again_each_failure():
    asked = []

    def handler(exc, attempt):
        asked.append((type(exc).__name__, attempt))
        return af.LlmErrorDecision.retry(max_attempts=4, initial_backoff=0.5)

    clock = af.VirtualClock()
    agent = agent_with(
        [fail.http(503), fail.timeout(), fail.connection(), say("ok")],
        on_llm_error=handler,
        clock=clock,
    )
    result = agent.run("x")
    assert result.output == "ok"
    assert asked == [
        ("ModelServerError", 1),
        ("ModelTimeoutError", 2),
        ("ModelTransportError", 3),
    ]
    assert clock.sleeps == [0.5, 1.0, 2.0]
    assert result.trace.count("llm.retry") == 3
    assert result.trace.count("llm.error") == 3
    assert result.usage.llm_calls == 4


def test_retry_attempts_are_counted_per_model_turn():
    asked = []

    def handler(exc, attempt):
        asked.append(attempt)
        return af.LlmErrorDecision.retry(max_attempts=2, initial_backoff=0)

    @af.tool
    def noop() -> str:
        """Nothing."""
        return ""

    agent_with(
        [fail.http(500), call_tool("noop"), fail.http(500), say("ok")],
        on_llm_error=handler,
        tools=[noop],
    ).run("x")
    assert asked == [1, 1]


def test_retries_run_out_and_the_last_error_propagates():
    last = af.ModelServerError("third", status=502)
    agent = agent_with(
        [fail.http(500), fail.http(503), fail(last)],
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=3),
    )
    with pytest.raises(af.ModelServerError) as caught:
        agent.run("x")
    assert caught.value is last


def test_respond_with_substitutes_the_answer_for_the_turn():
    result = agent_with(
        [fail.rate_limit(retry_after=30)],
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.respond_with("try again later"),
    ).run("x")
    assert result.output == "try again later"
    assert result.status == "ok"


def test_rethrow_is_the_default_and_preserves_identity():
    boom = af.ModelAuthError("bad key", status=401)
    agent = agent_with(
        [fail(boom)], on_llm_error=lambda exc, attempt: af.LlmErrorDecision.rethrow()
    )
    with pytest.raises(af.ModelAuthError) as caught:
        agent.run("x")
    assert caught.value is boom


def test_handler_is_never_called_for_budget_caps_or_cancellation():
    asked = []

    def handler(exc, attempt):
        asked.append(exc)
        return af.LlmErrorDecision.retry()

    @af.tool
    def noop() -> str:
        """Nothing."""
        return ""

    result = agent_with(
        [call_tool("noop")], tools=[noop], budget=af.Budget(max_turns=1), on_llm_error=handler
    ).run("x")
    assert result.status == "max_iterations"
    token = af.CancelToken()
    token.cancel()
    result = agent_with([], on_llm_error=handler).run("x", cancel=token)
    assert result.status == "cancelled"
    assert asked == []


def test_soft_failures_go_to_the_decision():
    asked = []

    def handler(exc, attempt):
        asked.append(type(exc).__name__)
        return af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=0)

    result = agent_with(
        [malformed.empty(), malformed.blocked(), say("fine")], on_llm_error=handler
    ).run("x")
    assert result.output == "fine"
    assert asked == ["MalformedResponseError", "MalformedResponseError"]
    assert [e.error.type for e in result.trace.of("llm.error")] == ["MalformedResponseError"] * 2


def test_script_exhaustion_is_never_retried_or_hidden():
    asked = []
    # strict=False: the fallback's step is there to be left alone, proving it never ran
    fallback = ScriptedModel([say("hidden")], strict=False)
    agent = agent_with(
        [say("only one")],
        on_llm_error=lambda exc, attempt: asked.append(exc) or af.LlmErrorDecision.retry(),
        resilience=af.ResilienceConfig(fallback_model=fallback),
    )
    agent.run("x")
    with pytest.raises(AssertionError):
        agent.run("again")
    assert asked == []
    assert fallback.calls == 0


def test_bad_decisions_are_refused():
    with pytest.raises(af.UsageError, match="counts the original call"):
        af.LlmErrorDecision.retry(max_attempts=0)
    with pytest.raises(af.UsageError, match="initial_backoff"):
        af.LlmErrorDecision.retry(initial_backoff=-1)


# ----------------------------------------------------------------------- fallback


def test_fallback_model_answers_once_when_the_primary_keeps_failing():
    fallback = ScriptedModel([say("from the fallback")])
    agent = agent_with([fail.http(503)], resilience=af.ResilienceConfig(fallback_model=fallback))
    result = agent.run("question")
    assert result.output == "from the fallback"
    assert [m.content for m in fallback.requests[0].messages] == ["question"]
    (event,) = result.trace.of("fallback")
    assert event.error.type == "ModelServerError"


def test_fallback_after_on_llm_error_retries_are_spent():
    fallback = ScriptedModel([say("fallback")])
    agent = agent_with(
        [fail.http(503), fail.http(503)],
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=2),
        resilience=af.ResilienceConfig(fallback_model=fallback),
    )
    assert agent.run("x").output == "fallback"


def test_when_the_fallback_fails_too_the_primary_error_propagates():
    primary = af.ModelServerError("primary", status=503)
    agent = agent_with(
        [fail(primary)],
        resilience=af.ResilienceConfig(fallback_model=ScriptedModel([fail.http(500)])),
    )
    with pytest.raises(af.ModelServerError) as caught:
        agent.run("x")
    assert caught.value is primary


# ----------------------------------------------------------------------- structured output


class Answer(BaseModel):
    count: int
    unit: str


def test_structured_output_is_parsed_and_validated():
    agent = agent_with([say('```json\n{"count": 3, "unit": "keys"}\n```')], output_type=Answer)
    result = agent.run("x")
    assert result.output == Answer(count=3, unit="keys")
    assert agent.model.requests[0].output_schema["title"] == "Answer"


def test_plain_types_work_as_output_type():
    assert agent_with([say("3")], output_type=int).run("x").output == 3


def test_each_validation_failure_sends_one_correction_message():
    model = ScriptedModel([say("three"), say('{"count": "x"}'), say('{"count": 3, "unit": "k"}')])
    result = agent_with(model, output_type=Answer).run("x")
    assert result.output == Answer(count=3, unit="k")
    corrections = [r.messages[-1] for r in model.requests[1:]]
    assert all(m.role == "user" for m in corrections)
    assert "does not match output_type Answer" in corrections[0].content
    assert "count" in corrections[1].content
    assert result.trace.count("llm.retry") == 2


def test_max_retries_correction_rounds_then_fallback_then_exhaustion():
    model = ScriptedModel([say("bad")], on_exhausted="repeat_last")
    fallback = ScriptedModel([say("also bad")])
    config = af.ResilienceConfig(max_retries=2, fallback_model=fallback)
    result = agent_with(model, output_type=Answer, resilience=config).run("x")
    assert len(model.requests) == 3  # max_retries + 1 primary calls
    assert len(fallback.requests) == 1
    # the fallback sees the whole correction history, and is told why the last answer failed
    sent = fallback.requests[0].messages
    assert sum(m.role == "user" for m in sent) == 4
    assert sent[-1].role == "user"
    assert "does not match output_type Answer" in sent[-1].content
    assert result.status == "max_iterations"
    assert result.output is None


def test_the_fallback_can_rescue_structured_output():
    config = af.ResilienceConfig(
        max_retries=0, fallback_model=ScriptedModel([say('{"count": 1, "unit": "u"}')])
    )
    result = agent_with([say("nope")], output_type=Answer, resilience=config).run("x")
    assert result.output == Answer(count=1, unit="u")


def test_structured_output_exhaustion_can_raise():
    config = af.ResilienceConfig(max_retries=1, on_exhaustion="raise")
    agent = agent_with([say("bad"), say("worse")], output_type=Answer, resilience=config)
    with pytest.raises(af.MalformedResponseError, match="output_type Answer"):
        agent.run("x")


def test_an_unvalidatable_output_type_is_a_usage_error():
    with pytest.raises(af.UsageError, match="output_type"):
        af.Agent("bot", output_type=object())


# ----------------------------------------------------------------------- combinators


def test_first_of_fails_over_in_order_and_records_fallback_events():
    a = ScriptedModel([fail.http(503)], name="a")
    b = ScriptedModel([fail.connection()], name="b")
    c = ScriptedModel([say("from c")], name="c")
    result = agent_with(af.first_of(a, b, c)).run("x")
    assert result.output == "from c"
    assert [e.detail for e in result.trace.of("fallback")] == ["a -> b", "b -> c"]


def test_first_of_raises_the_first_error_when_all_fail():
    first = af.ModelServerError("a down", status=503)
    model = af.first_of(ScriptedModel([fail(first)]), ScriptedModel([fail.http(500)]))
    with pytest.raises(af.ModelServerError) as caught:
        agent_with(model).run("x")
    assert caught.value is first


def test_first_of_async():
    model = af.first_of(ScriptedModel([fail.http(503)]), ScriptedModel([say("b")]))
    assert asyncio.run(agent_with(model).arun("x")).output == "b"


def test_speculative_keeps_the_first_valid_sample():
    # strict=False: the fourth sample must never be asked for, and stays unused
    model = ScriptedModel(
        [malformed.empty(), fail.http(500), say("good"), say("unused")], strict=False
    )
    result = agent_with(af.speculative(model, 4)).run("x")
    assert result.output == "good"
    assert len(model.requests) == 3


def test_speculative_async_samples_concurrently():
    model = ScriptedModel([malformed.blocked(), say("good"), say("also good")])
    result = asyncio.run(agent_with(af.speculative(model, 3)).arun("x"))
    assert result.output in {"good", "also good"}


def test_speculative_checks_json_for_structured_output():
    model = ScriptedModel([say("not json"), say('{"count": 2, "unit": "u"}')])
    result = agent_with(af.speculative(model, 2), output_type=Answer).run("x")
    assert result.output.count == 2


def test_combinator_arguments_are_checked():
    with pytest.raises(af.UsageError, match="at least one model"):
        af.first_of()
    with pytest.raises(af.UsageError, match="n must be"):
        af.speculative(ScriptedModel([]), 0)


def test_loop_until_continues_the_conversation_until_the_predicate_holds():
    model = ScriptedModel([say("draft"), say("better"), say("DONE")])
    result = agent_with(model).loop_until(lambda r: "DONE" in r.output, max_iterations=5).run("x")
    assert result.output == "DONE"
    assert result.status == "ok"
    assert [m.content for m in result.messages if m.role == "user"][1:] == [
        "That is not finished yet. Keep going."
    ] * 2
    assert result.trace.count("run.start") == 3
    assert result.usage.llm_calls == 3


def test_loop_until_gives_up_after_max_iterations():
    model = ScriptedModel([say("meh")], on_exhausted="repeat_last")
    loop = agent_with(model).loop_until(lambda r: False, max_iterations=2)
    result = loop.run("x")
    assert result.status == "max_iterations"
    assert len(model.requests) == 2
    assert asyncio.run(agent_with(ScriptedModel([say("ok")])).loop_until(bool).arun("x")).ok


def test_loop_until_checks_its_arguments():
    with pytest.raises(af.UsageError, match="max_iterations"):
        agent_with([]).loop_until(bool, max_iterations=0)


def test_cancel_during_a_model_retrys_wait_stops_before_the_model_is_asked_again():
    token = af.CancelToken()
    model = ScriptedModel([fail.http(503), say("too late")], strict=False)

    def stop_on_retry(event):
        if event.type == "llm.retry":
            token.cancel("stop")

    agent = agent_with(
        model,
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=3),
        observer=stop_on_retry,
    )
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert len(model.requests) == 1  # the wait ended the run: no second model call
    assert result.trace.of("run.cancelled")[0].reason == "stop"
