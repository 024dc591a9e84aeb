"""What a model turn records, and what it counts: the events and `Usage` a user reads.

Each model call is an ``llm.request`` (its attempt, the model's name) and an
``llm.response`` (the finish reason, the tools called or the answer's start) or an
``llm.error``. Retries, substitutes and fallback answers are counted where a budget or a
report reads them.
"""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, call_tools, fail, malformed, say
from pytest_agentfaults.runtime.backoff import jitter_rng, seeded_jitter
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ModelResponse


@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    return f"<html>{url}</html>"


@af.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 21C"


class Answer(BaseModel):
    count: int


def agent_with(model, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=model, tools=[fetch, lookup], **kwargs)


def retry(max_attempts=3):
    return lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=max_attempts)


def test_a_tool_call_response_is_traced_with_the_tools_it_asks_for():
    model = ScriptedModel(
        [call_tools([call_tool("fetch", url="a"), call_tool("lookup", city="b")]), say("done")]
    )
    result = agent_with(model).run("x")
    first, last = result.trace.of("llm.response")
    assert (first.attempt, first.status, first.detail) == (
        1,
        "tool_calls",
        "tool calls: fetch, lookup",
    )
    assert (last.attempt, last.status, last.detail) == (1, "stop", "done")


def test_each_retried_model_call_is_traced_with_its_attempt():
    model = ScriptedModel([fail.http(503), fail.http(503), say("ok")])
    result = agent_with(model, on_llm_error=retry()).run("x")
    assert [e.attempt for e in result.trace.of("llm.request")] == [1, 2, 3]
    assert [e.detail for e in result.trace.of("llm.request")] == ["scripted"] * 3
    assert [e.attempt for e in result.trace.of("llm.error")] == [1, 2]
    retries = result.trace.of("llm.retry")
    assert [(e.attempt, e.max_attempts) for e in retries] == [(2, 3), (3, 3)]
    assert result.usage.retries == 2
    assert result.usage.llm_calls == 3


def test_model_retries_add_up_over_the_turns_of_a_run():
    model = ScriptedModel([fail.http(503), call_tool("fetch", url="a"), fail.http(503), say("ok")])
    result = agent_with(model, on_llm_error=retry()).run("x")
    assert result.output == "ok"
    assert result.usage.retries == 2


def test_an_empty_answer_is_an_error_naming_the_model():
    model = ScriptedModel([say("")], name="primary")
    with pytest.raises(af.MalformedResponseError, match="model 'primary' returned an empty answer"):
        agent_with(model).run("x")


def test_an_answer_landing_exactly_on_the_token_cap_is_kept():
    model = ScriptedModel([say("one two", usage={"input_tokens": 1, "output_tokens": 2})])
    result = agent_with(model, budget=af.Budget(max_output_tokens=2)).run("x")
    assert result.status == "ok"
    assert result.output == "one two"


def test_a_substituted_answer_is_traced_as_the_turn_s_response():
    handler = lambda exc, attempt: af.LlmErrorDecision.respond_with("sorry, try later")  # noqa: E731
    result = agent_with(ScriptedModel([fail.http(503)]), on_llm_error=handler).run("x")
    assert result.output == "sorry, try later"
    (response,) = result.trace.of("llm.response")
    assert (response.attempt, response.detail) == (1, "respond_with: substituted")


def test_a_substitute_that_does_not_fit_names_the_agent_and_the_model_error():
    handler = lambda exc, attempt: af.LlmErrorDecision.respond_with({"count": "many"})  # noqa: E731
    agent = af.Agent(
        "counter",
        model=ScriptedModel([fail.http(503)]),
        output_type=Answer,
        on_llm_error=handler,
        clock=af.VirtualClock(),
    )
    with pytest.raises(
        af.UsageError, match=r"agent 'counter': on_llm_error answered ModelServerError"
    ):
        agent.run("x")


def test_turns_answered_by_the_fallback_count_against_max_turns():
    fallback = ScriptedModel(
        [call_tool("fetch", url=str(n)) for n in range(5)], name="backup", strict=False
    )
    config = af.ResilienceConfig(fallback_model=fallback)
    primary = ScriptedModel([fail.http(503)], on_exhausted="repeat_last")
    result = agent_with(primary, resilience=config, budget=af.Budget(max_turns=2)).run("x")
    assert result.status == "max_iterations"
    assert result.usage.tool_calls == 2
    assert [e.detail for e in result.trace.of("fallback")] == ["backup", "backup"]


def test_a_decision_other_than_retry_is_never_retried_whatever_max_attempts_it_carries():
    # A handler that turns its retry decision into a rethrow (dataclasses.replace) leaves
    # the retry's max_attempts on it: only the action says whether to retry.
    give_up = dataclasses.replace(af.LlmErrorDecision.retry(max_attempts=5), action="rethrow")

    def handler(exc, attempt):
        if attempt == 1:
            return af.LlmErrorDecision.retry(max_attempts=5)
        return give_up

    model = ScriptedModel([fail.http(503)], on_exhausted="repeat_last")
    agent = agent_with(model, on_llm_error=handler, observer=(events := []).append)
    with pytest.raises(af.ModelHTTPError):
        agent.run("x")
    assert [e.type for e in events].count("llm.request") == 2
    assert [e for e in events if e.type == "llm.exhausted"] == []

    first = lambda exc, attempt: give_up  # noqa: E731
    with pytest.raises(af.ModelHTTPError):
        agent_with(
            ScriptedModel([fail.http(503), say("ok")], strict=False), on_llm_error=first
        ).run("x")


def test_a_retry_of_one_attempt_is_not_recorded_as_retries_exhausted():
    model = ScriptedModel([fail.http(503)])
    agent = agent_with(model, on_llm_error=retry(max_attempts=1), observer=(events := []).append)
    with pytest.raises(af.ModelHTTPError):
        agent.run("x")
    assert [e for e in events if e.type == "llm.exhausted"] == []


class JitterReader:
    """A model client that draws its transport jitter from the request, as ours do."""

    name = "reader"

    def __init__(self) -> None:
        self.draws: list[float] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        assert request.jitter is not None
        self.draws.append(request.jitter())
        if len(self.draws) == 1:
            return ModelResponse(message=Message.assistant("", []), finish_reason="stop")
        return ModelResponse(message=Message.assistant("ok"), finish_reason="stop")

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        return self.request(request)


def test_a_model_client_s_jitter_continues_the_run_s_seeded_stream():
    with seeded_jitter(7):
        stream = jitter_rng()
        expected = [stream.random(), stream.random()]
        model = JitterReader()
        result = agent_with(model, on_llm_error=retry()).run("x")
    assert result.output == "ok"
    assert model.draws == expected


def test_a_fallback_answer_failing_the_schema_is_traced_with_its_own_error():
    fallback = ScriptedModel([say('{"count": "many"}')], name="backup")
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback)
    result = agent_with(ScriptedModel([say("nope")]), output_type=Answer, resilience=config).run(
        "x"
    )
    assert result.status == "max_iterations"
    primary, second = result.trace.of("llm.error")
    assert second.detail == "output_type"
    assert second.error is not None
    assert second.error.type == "MalformedResponseError"
    assert "count" in second.error.message
    assert second.error.message != primary.error.message


@pytest.mark.parametrize(
    "refused",
    [
        malformed.empty().with_usage(input_tokens=40, output_tokens=0),
        malformed.blocked().with_usage(input_tokens=40, output_tokens=3),
    ],
    ids=["empty", "blocked"],
)
def test_an_empty_or_blocked_answer_still_counts_its_tokens(refused):
    model = ScriptedModel([refused, say("ok", usage={"input_tokens": 45, "output_tokens": 1})])
    result = agent_with(model, on_llm_error=retry()).run("x")
    assert result.output == "ok"
    assert result.usage.llm_calls == 2
    assert result.usage.input_tokens == 85
    assert result.usage.output_tokens == refused.usage["output_tokens"] + 1


def test_a_refused_answer_s_tokens_count_against_the_token_cap():
    refused = malformed.blocked().with_usage(input_tokens=40, output_tokens=3)
    model = ScriptedModel([refused, say("ok")], strict=False)
    result = agent_with(model, on_llm_error=retry(), budget=af.Budget(max_input_tokens=40)).run("x")
    assert result.status == "budget_exceeded"
    assert result.usage.input_tokens == 40
