"""Every model call a combinator makes is the run's: counted, within the budget, traced.

`first_of` and `speculative` answer one model turn with several calls; each one counts in
``usage.llm_calls`` and its answer's tokens in the token counts (an unused or invalid
sample's too), the budget caps hold across them, and each failed model has its own
``llm.error`` naming it.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, fail, malformed, say


class Answer(BaseModel):
    count: int


def agent_with(model, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=model, observer=kwargs.pop("observer", None), **kwargs)


def tokens(input_tokens, output_tokens):
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


def test_first_of_counts_each_model_it_asks_and_traces_each_failure_by_name():
    a = ScriptedModel([fail.http(503)], name="a")
    b = ScriptedModel([fail.connection()], name="b")
    c = ScriptedModel([say("from c", usage=tokens(3, 2))], name="c")
    result = agent_with(af.first_of(a, b, c)).run("x")
    assert result.output == "from c"
    assert result.usage.llm_calls == 3
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 2)
    errors = result.trace.of("llm.error")
    assert [(e.model, e.error.type) for e in errors] == [
        ("a", "ModelServerError"),
        ("b", "ModelTransportError"),
    ]


def test_first_of_stops_at_the_call_cap():
    a = ScriptedModel([fail.http(503)], name="a")
    b = ScriptedModel([fail.http(503)], name="b")
    c = ScriptedModel([say("never asked")], name="c", strict=False)
    result = agent_with(af.first_of(a, b, c), budget=af.Budget(max_llm_calls=2)).run("x")
    assert result.status == "max_iterations"  # what a call cap ends a run with
    assert result.usage.llm_calls == 2
    assert c.requests == []


def test_speculative_counts_every_sample_and_the_tokens_of_the_invalid_ones():
    model = ScriptedModel(
        [
            say("not json", usage=tokens(5, 7)),
            malformed.empty().with_usage(input_tokens=2, output_tokens=0),
            say('{"count": 2}', usage=tokens(5, 3)),
        ],
        name="m",
    )
    result = agent_with(af.speculative(model, 3), output_type=Answer).run("x")
    assert result.output.count == 2
    assert result.usage.llm_calls == 3
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 10)
    assert [e.model for e in result.trace.of("llm.error")] == ["m", "m"]


def test_speculative_tokens_count_against_the_token_cap():
    model = ScriptedModel(
        [say("not json", usage=tokens(5, 50)), say('{"count": 2}', usage=tokens(5, 3))],
        name="m",
        strict=False,
    )
    budget = af.Budget(max_output_tokens=20)
    result = agent_with(af.speculative(model, 2), output_type=Answer, budget=budget).run("x")
    assert result.status == "budget_exceeded"
    assert result.usage.output_tokens >= 50


def test_async_speculative_counts_the_unused_samples_too():
    model = ScriptedModel(
        [say("a", usage=tokens(1, 1)), say("b", usage=tokens(1, 1)), say("c", usage=tokens(1, 1))]
    )
    result = asyncio.run(agent_with(af.speculative(model, 3)).arun("x"))
    assert result.usage.llm_calls == 3
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 3)


def test_async_speculative_starts_no_more_samples_than_the_call_cap_allows():
    model = ScriptedModel([say("a"), say("b"), say("c")], strict=False)
    result = asyncio.run(
        agent_with(af.speculative(model, 3), budget=af.Budget(max_llm_calls=2)).arun("x")
    )
    assert result.usage.llm_calls <= 2
    assert len(model.requests) == 2


def test_async_first_of_counts_each_model_it_asks():
    a = ScriptedModel([fail.http(503)], name="a")
    b = ScriptedModel([say("b")], name="b")
    result = asyncio.run(agent_with(af.first_of(a, b)).arun("x"))
    assert result.usage.llm_calls == 2
    assert [e.model for e in result.trace.of("llm.error")] == ["a"]


def failed_trace(model, *, sync=True):
    trace = af.Trace()
    agent = af.Agent("bot", model=model, clock=af.VirtualClock(), observer=trace.add)
    try:
        agent.run("x") if sync else asyncio.run(agent.arun("x"))
    except af.RateLimitError as exc:
        return trace, exc
    raise AssertionError("the run did not fail")


def test_a_combinator_whose_models_all_fail_records_each_failure_once():
    # One llm.error per failed model request: the run's call failing is not a further
    # failure (it was recorded once as `first_of(a, b)`'s first error, then again).
    for sync in (True, False):
        a = ScriptedModel([fail.rate_limit()], name="a")
        b = ScriptedModel([fail.rate_limit()], name="b")
        trace, raised = failed_trace(af.first_of(a, b), sync=sync)
        assert [e.field("model") for e in trace.of("llm.error")] == ["a", "b"]
        assert trace.of("run.end")[0].error.type == type(raised).__name__


def test_a_combinator_of_one_failing_model_records_one_llm_error():
    for model in (
        af.first_of(ScriptedModel([fail.rate_limit()], name="a")),
        af.speculative(ScriptedModel([fail.rate_limit()], name="a"), 1),
    ):
        trace, _ = failed_trace(model)
        assert [e.field("model") for e in trace.of("llm.error")] == ["a"]


def test_speculative_samples_that_all_fail_each_record_one_llm_error():
    model = ScriptedModel([fail.rate_limit(), fail.rate_limit()], name="a")
    trace, _ = failed_trace(af.speculative(model, 2))
    assert [e.field("model") for e in trace.of("llm.error")] == ["a", "a"]


def test_nested_combinators_record_each_failed_model_once():
    a = ScriptedModel([fail.rate_limit()], name="a")
    b = ScriptedModel([fail.rate_limit()], name="b")
    trace, _ = failed_trace(af.first_of(af.first_of(a), af.speculative(b, 1)))
    assert [e.field("model") for e in trace.of("llm.error")] == ["a", "b"]
