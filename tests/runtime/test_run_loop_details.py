"""The run loop's recovery as its trace and its result show it: output corrections, the
fallback model, LLM fixers. A user reads these events (and tests assert on them)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


class Answer(BaseModel):
    count: int
    unit: str


def agent_with(model, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=model, **kwargs)


def test_a_corrected_structured_answer_ends_the_run_ok_with_each_correction_traced():
    model = ScriptedModel([say("three"), say('{"count": "x"}'), say('{"count": 3, "unit": "k"}')])
    result = agent_with(model, output_type=Answer).run("x")
    assert result.status == "ok"
    assert result.ok
    assert result.trace.of("run.end")[-1].status == "ok"
    errors = result.trace.of("llm.error")
    assert [e.detail for e in errors] == ["output_type", "output_type"]
    assert [e.error.type for e in errors] == ["MalformedResponseError"] * 2
    retries = result.trace.of("llm.retry")
    assert [(e.attempt, e.max_attempts) for e in retries] == [(2, 4), (3, 4)]
    assert {e.detail for e in retries} == {"output correction"}
    assert [e.error.type for e in retries] == ["MalformedResponseError"] * 2


def test_the_output_corrections_count_against_max_retries():
    model = ScriptedModel([say("bad")], on_exhausted="repeat_last")
    config = af.ResilienceConfig(max_retries=1)
    result = agent_with(model, output_type=Answer, resilience=config).run("x")
    assert result.status == "max_iterations"
    (retry,) = result.trace.of("llm.retry")
    assert (retry.attempt, retry.max_attempts) == (2, 2)


def test_the_fallback_event_names_the_fallback_and_the_primary_error():
    fallback = ScriptedModel([say('{"count": 1, "unit": "u"}')], name="backup")
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback)
    result = agent_with(ScriptedModel([say("nope")]), output_type=Answer, resilience=config).run(
        "x"
    )
    assert result.status == "ok"
    (event,) = result.trace.of("fallback")
    assert event.detail == "backup"
    assert event.error.type == "MalformedResponseError"
    # the fallback's call is its first attempt
    assert [e.attempt for e in result.trace.of("llm.request")][-1] == 1


def test_a_fallback_answer_that_fails_the_schema_too_is_traced_as_an_output_error():
    fallback = ScriptedModel([say("also bad")], name="backup")
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback)
    result = agent_with(ScriptedModel([say("nope")]), output_type=Answer, resilience=config).run(
        "x"
    )
    assert result.status == "max_iterations"
    assert [e.detail for e in result.trace.of("llm.error")] == ["output_type", "output_type"]


def test_an_llm_fixer_is_shown_the_tool_schema_and_asked_for_json_only():
    fixer_model = ScriptedModel([say('{"json": "{}"}')])
    fixer = af.Agent("json-fixer", model=fixer_model)

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def parse(json: str) -> int:
        """Parse."""
        import json as _json

        return len(_json.loads(json))

    model = ScriptedModel([call_tool("parse", json="{k: 1}"), say("0")])
    result = agent_with(model, tools=[parse]).run("x")
    assert result.ok
    (message,) = fixer_model.requests[0].messages
    assert json.dumps(parse.parameters) in message.content
    assert message.content.endswith("Reply with only the corrected arguments as one JSON object.")


def test_an_llm_fixer_s_own_observer_sees_its_events():
    seen = []
    fixer = af.Agent(
        "json-fixer", model=ScriptedModel([say('{"json": "{}"}')]), observer=seen.append
    )

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def parse(json: str) -> int:
        """Parse."""
        import json as _json

        return len(_json.loads(json))

    agent_with(ScriptedModel([call_tool("parse", json="{k: 1}"), say("0")]), tools=[parse]).run("x")
    assert "llm.request" in [e.type for e in seen]
    assert {e.agent for e in seen} == {"json-fixer"}


def test_a_fixer_without_a_model_is_a_usage_error_naming_it():
    fixer = af.Agent("no-brain")

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def parse(json: str) -> int:
        """Parse."""
        raise ValueError("bad")

    agent = agent_with(ScriptedModel([call_tool("parse", json="x")]), tools=[parse])
    with pytest.raises(af.UsageError, match="fixer agent 'no-brain' has no model and no function"):
        agent.run("x")


def test_the_fallback_s_answer_is_the_last_message_of_the_run():
    fallback = ScriptedModel([say('{"count": 1, "unit": "u"}')], name="backup")
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback)
    result = agent_with(ScriptedModel([say("nope")]), output_type=Answer, resilience=config).run(
        "x"
    )
    assert result.messages[-1].role == "assistant"
    assert result.messages[-1].content == '{"count": 1, "unit": "u"}'


def test_a_fallback_answer_failing_the_schema_is_the_error_raised_on_exhaustion():
    fallback = ScriptedModel([say("also bad")], name="backup")
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback, on_exhaustion="raise")
    agent = agent_with(ScriptedModel([say("nope")]), output_type=Answer, resilience=config)
    with pytest.raises(af.MalformedResponseError) as caught:
        agent.run("x")
    assert "also bad" in caught.value.body or "output_type Answer" in str(caught.value)


def test_the_llm_call_budget_is_checked_before_calling_the_fallback():
    fallback = ScriptedModel([say('{"count": 1, "unit": "u"}')], strict=False)
    config = af.ResilienceConfig(max_retries=0, fallback_model=fallback)
    agent = agent_with(
        ScriptedModel([say("nope")]),
        output_type=Answer,
        resilience=config,
        budget=af.Budget(max_llm_calls=1),
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert [e.status for e in result.trace.of("budget.exceeded")] == ["max_llm_calls"]
    assert fallback.requests == []


def test_invoke_runs_an_llm_fixer_too():
    # Tool.invoke has no run around it (no cancel token): the fixer's run makes its own
    fixer = af.Agent("json-fixer", model=ScriptedModel([say('{"json": "{}"}')]))

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def parse(json: str) -> int:
        """Parse."""
        import json as _json

        return len(_json.loads(json))

    assert parse.invoke({"json": "{k: 1}"}, clock=af.VirtualClock()) == 0


def failing_tool(on_error, fails: int = 99):
    calls: list[str] = []

    @af.tool(on_error=on_error)
    def fetch(url: str) -> str:
        """Fetch."""
        calls.append(url)
        if len(calls) <= fails:
            raise ConnectionError("reset")
        return "page"

    return fetch, calls


def test_respond_with_records_the_substitute_as_the_call_s_result():
    fetch, _ = failing_tool(af.OnError(execution=af.respond_with({"cached": True})))
    model = ScriptedModel([call_tool("fetch", url="u"), say("ok")])
    result = agent_with(model, tools=[fetch]).run("x")
    (call,) = result.trace.of("tool.call", tool="fetch")
    (event,) = result.trace.of("tool.result", tool="fetch")
    assert event.detail == 'respond_with: {"cached":true}'
    assert event.call_id == call.call_id
    assert event.attempt == 1
    assert [m.content for m in result.messages if m.role == "tool"] == ['{"cached":true}']


def test_an_exhausted_retry_tells_the_model_the_tool_and_the_attempts():
    fetch, calls = failing_tool(af.OnError(execution=af.retry(2, strategy="fixed")))
    model = ScriptedModel([call_tool("fetch", url="u"), say("ok")])
    result = agent_with(model, tools=[fetch]).run("x")
    assert calls == ["u", "u"]
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert (payload["tool"], payload["attempts"]) == ("fetch", 2)


def test_an_exhausted_retry_raises_naming_the_tool_and_the_attempts():
    fetch, _ = failing_tool(af.OnError(execution=af.retry(2, strategy="fixed")))
    model = ScriptedModel([call_tool("fetch", url="u")])
    config = af.ResilienceConfig(on_exhaustion="raise")
    with pytest.raises(af.ToolExecutionError) as caught:
        agent_with(model, tools=[fetch], resilience=config).run("x")
    assert str(caught.value) == "tool 'fetch' failed after 2 attempt(s): ConnectionError: reset"


def test_fix_rounds_used_up_end_the_call_naming_the_tool():
    fetch, _ = failing_tool(
        af.OnError(execution=af.fix(af.Agent.from_function("f", lambda raw: '{"url": "v"}')))
    )
    model = ScriptedModel([call_tool("fetch", url="u")])
    config = af.ResilienceConfig(on_exhaustion="raise")
    with pytest.raises(af.ToolExecutionError) as caught:
        agent_with(model, tools=[fetch], resilience=config).run("x")
    assert str(caught.value).startswith("tool 'fetch' failed after 2 attempt(s): ")


def test_a_non_idempotent_tool_not_rerun_reports_its_one_attempt():
    clock = af.VirtualClock()

    @af.tool(idempotent=False)
    def charge(amount: int) -> str:
        """Charge."""
        raise TimeoutError("gateway timed out")

    model = ScriptedModel([call_tool("charge", amount=3), say("ok")])
    result = agent_with(model, tools=[charge], clock=clock).run("x")
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert (payload["tool"], payload["attempts"]) == ("charge", 1)
    config = af.ResilienceConfig(on_exhaustion="raise")
    model = ScriptedModel([call_tool("charge", amount=3)])
    with pytest.raises(af.ToolExecutionError, match=r"^tool 'charge' failed after 1 attempt"):
        agent_with(model, tools=[charge], clock=clock, resilience=config).run("x")
