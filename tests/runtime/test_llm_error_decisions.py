"""`LlmErrorDecision`: a capped backoff, the server's Retry-After, and a checked substitute."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, fail, say


class Answer(BaseModel):
    count: int


def agent_with(steps, clock, handler, **kwargs):
    return af.Agent("bot", model=ScriptedModel(steps), on_llm_error=handler, clock=clock, **kwargs)


# ----------------------------------------------------------------------- backoff cap


def test_the_backoff_is_capped_at_60_seconds_by_default():
    decision = af.LlmErrorDecision.retry(max_attempts=20, initial_backoff=0.5)
    waits = [decision.backoff(k) for k in range(1, 20)]
    assert waits[:8] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0]
    assert max(waits) == 60.0
    # the docs' old example summed to a 36-hour wait; capped, it is minutes
    assert sum(waits) < 20 * 60


def test_max_backoff_is_tunable_and_checked():
    decision = af.LlmErrorDecision.retry(max_attempts=5, initial_backoff=1, max_backoff=3)
    assert [decision.backoff(k) for k in range(1, 5)] == [1.0, 2.0, 3.0, 3.0]
    with pytest.raises(af.UsageError, match="max_backoff"):
        af.LlmErrorDecision.retry(max_backoff=-1)
    with pytest.raises(af.UsageError, match="max_retry_after"):
        af.LlmErrorDecision.retry(max_retry_after=-1)


def test_the_runtime_waits_the_capped_backoff():
    clock = af.VirtualClock()
    steps = [fail.http(503)] * 9 + [say("ok")]
    handler = lambda exc, n: af.LlmErrorDecision.retry(max_attempts=10, initial_backoff=1)  # noqa: E731
    assert agent_with(steps, clock, handler).run("x").output == "ok"
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0]


# ----------------------------------------------------------------------- Retry-After


def test_retry_waits_at_least_the_servers_retry_after():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=0.5)  # noqa: E731
    agent = agent_with(
        [fail.rate_limit(retry_after=120), fail.http(503), say("ok")], clock, handler
    )
    result = agent.run("x")
    assert result.output == "ok"
    assert clock.sleeps == [120.0, 1.0]  # Retry-After, then the plain backoff
    assert [e.delay for e in result.trace.of("llm.retry")] == [120.0, 1.0]


def test_a_retry_after_below_the_backoff_does_not_shorten_it():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry(initial_backoff=5)  # noqa: E731
    agent_with([fail.rate_limit(retry_after=1), say("ok")], clock, handler).run("x")
    assert clock.sleeps == [5.0]


def test_respect_retry_after_false_opts_out():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry(respect_retry_after=False)  # noqa: E731
    agent_with([fail.rate_limit(retry_after=120), say("ok")], clock, handler).run("x")
    assert clock.sleeps == [0.5]


def test_a_retry_after_above_max_retry_after_is_not_waited_out():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry(max_retry_after=100)  # noqa: E731
    agent = agent_with([fail.rate_limit(retry_after=120)], clock, handler)
    with pytest.raises(af.RateLimitError):
        agent.run("x")
    assert clock.sleeps == []


def test_a_long_retry_after_goes_to_the_fallback_when_not_waited_out():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry(max_retry_after=100)  # noqa: E731
    agent = agent_with(
        [fail.rate_limit(retry_after=3600)],
        clock,
        handler,
        resilience=af.ResilienceConfig(fallback_model=ScriptedModel([say("from the fallback")])),
    )
    assert agent.run("x").output == "from the fallback"
    assert clock.sleeps == []


# ----------------------------------------------------------------------- respond_with


def test_respond_with_of_the_wrong_type_is_a_usage_error_at_once():
    model = ScriptedModel([fail.http(503)])  # a second call would run out of script
    agent = af.Agent(
        "bot",
        model=model,
        output_type=Answer,
        on_llm_error=lambda exc, n: af.LlmErrorDecision.respond_with({"count": "many"}),
        clock=af.VirtualClock(),
    )
    with pytest.raises(af.UsageError) as caught:
        agent.run("x")
    message = str(caught.value)
    assert "on_llm_error" in message
    assert "respond_with" in message
    assert "Answer" in message
    assert len(model.requests) == 1  # no further model call


@pytest.mark.parametrize(
    "value", [Answer(count=2), {"count": 2}, '{"count": 2}'], ids=["model", "dict", "json"]
)
def test_respond_with_of_the_right_type_is_the_output(value):
    model = ScriptedModel([fail.http(503)])
    agent = af.Agent(
        "bot",
        model=model,
        output_type=Answer,
        on_llm_error=lambda exc, n: af.LlmErrorDecision.respond_with(value),
        clock=af.VirtualClock(),
    )
    result = agent.run("x")
    assert result.output == Answer(count=2)
    assert len(model.requests) == 1


def test_respond_with_a_non_text_value_for_a_text_agent_is_a_usage_error():
    model = ScriptedModel([fail.http(503)])
    agent = af.Agent(
        "bot",
        model=model,
        on_llm_error=lambda exc, n: af.LlmErrorDecision.respond_with({"sorry": True}),
        clock=af.VirtualClock(),
    )
    with pytest.raises(af.UsageError, match="output_type str"):
        agent.run("x")


def test_a_retry_after_header_on_a_5xx_is_honoured_too():
    clock = af.VirtualClock()
    handler = lambda exc, n: af.LlmErrorDecision.retry()  # noqa: E731
    agent_with([fail.http(503, retry_after=30), say("ok")], clock, handler).run("x")
    assert clock.sleeps == [30.0]


def test_each_decision_says_its_action():
    assert af.LlmErrorDecision.rethrow().action == "rethrow"
    assert af.LlmErrorDecision.retry().action == "retry"
    assert af.LlmErrorDecision.respond_with("x").action == "respond_with"


def test_a_wait_asked_for_of_exactly_max_retry_after_is_waited_out():
    decision = af.LlmErrorDecision.retry(3, 0.0, max_retry_after=10)
    assert decision.delay(1, af.RateLimitError("429", retry_after=10.0)) == 10.0
    assert decision.delay(1, af.RateLimitError("429", retry_after=10.5)) is None


def test_retry_counts_the_original_call_so_one_attempt_is_the_least():
    assert af.LlmErrorDecision.retry(1).max_attempts == 1
    for bad in (0, True, 2.0):
        with pytest.raises(af.UsageError) as caught:
            af.LlmErrorDecision.retry(bad)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"LlmErrorDecision.retry(max_attempts={bad!r}): give an int >= 1 "
            "(it counts the original call)"
        )


def test_retry_refuses_bad_seconds_naming_the_argument():
    for name in ("initial_backoff", "max_backoff", "max_retry_after"):
        for bad in (True, -1, float("nan"), "1"):
            with pytest.raises(af.UsageError) as caught:
                af.LlmErrorDecision.retry(3, **{name: bad})
            assert str(caught.value) == (
                f"LlmErrorDecision.retry({name}={bad!r}): must be a finite number of seconds >= 0"
            )


def test_retry_without_a_retry_after_limit_waits_any_ask():
    decision = af.LlmErrorDecision.retry(3, 0.0, max_retry_after=None)
    assert decision.max_retry_after is None
    assert decision.delay(1, af.RateLimitError("429", retry_after=9000.0)) == 9000.0


def test_a_broken_on_llm_error_is_logged_and_the_original_error_raised(caplog):
    primary = af.ModelServerError("down", status=503)

    def broken(exc, attempt):
        raise RuntimeError("handler bug")

    agent = af.Agent(
        "bot", model=ScriptedModel([fail(primary)]), on_llm_error=broken, clock=af.VirtualClock()
    )
    with pytest.raises(af.ModelServerError) as caught:
        agent.run("x")
    assert caught.value is primary
    assert "on_llm_error raised; the original error is re-raised" in caplog.text


def test_an_on_llm_error_returning_no_decision_is_logged_and_treated_as_rethrow(caplog):
    primary = af.ModelServerError("down", status=503)
    agent = af.Agent(
        "bot",
        model=ScriptedModel([fail(primary)]),
        on_llm_error=lambda exc, attempt: "retry please",
        clock=af.VirtualClock(),
    )
    with pytest.raises(af.ModelServerError):
        agent.run("x")
    assert (
        "on_llm_error returned 'retry please', not an af.LlmErrorDecision; treating it as "
        "rethrow" in caplog.text
    )
