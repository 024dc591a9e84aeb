"""fix(agent, retries): function and LLM fixers, escalation, hard failures, nesting."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, malformed, say


def counting_tool(on_error):
    seen: list[str] = []

    @af.tool(on_error=on_error)
    def count_keys(json: str) -> int:
        """Count the keys of a JSON object."""
        import json as _json

        seen.append(json)
        return len(_json.loads(json))

    return count_keys, seen


def run(steps, tools, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    model = ScriptedModel(steps)
    agent = af.Agent("analyst", model=model, tools=tools, **kwargs)
    return agent.run("how many keys?"), model


def tool_results(result):
    return [m.content for m in result.messages if m.role == "tool"]


# ----------------------------------------------------------------------- function fixers


def test_function_fixer_on_invalid_args_gets_the_raw_string_and_its_output_is_validated():
    received = []

    def fixer(raw: str) -> str:
        received.append(raw)
        return '{"json": "{\\"a\\": 1, \\"b\\": 2}"}'

    tool, seen = counting_tool(af.OnError(invalid_args=af.fix(af.Agent.from_function("f", fixer))))
    result, _model = run([malformed.tool_args("{json: nope", tool="count_keys"), say("2")], [tool])
    assert received == ["{json: nope"]
    assert seen == ['{"a": 1, "b": 2}']
    assert tool_results(result) == ["2"]
    assert result.usage.fixer_calls == 1
    assert result.usage.llm_calls == 2  # a function fixer makes zero LLM calls
    result.trace.assert_sequence(
        "tool.error:count_keys",
        "fixer.call:count_keys",
        "fixer.result:count_keys",
        "tool.call:count_keys",
        "tool.result:count_keys",
    )


def test_function_fixer_on_execution_error_gets_the_failing_input_not_an_empty_string():
    received = []

    def fixer(raw: str) -> dict:
        received.append(raw)
        return {"json": '{"name": "world"}'}

    tool, seen = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    result, _ = run([call_tool("count_keys", json="{name: world}"), say("1")], [tool])
    assert received == ['{"json": "{name: world}"}']
    assert seen == ["{name: world}", '{"name": "world"}']
    assert tool_results(result) == ["1"]


def test_a_fixer_may_return_a_pydantic_model_of_the_arguments():
    class Arguments(BaseModel):
        text: str = Field(alias="json")  # a field may not be called json: the alias is used

    fixer = af.Agent.from_function("f", lambda raw: Arguments(json='{"a": 1}'))
    tool, seen = counting_tool(af.OnError(invalid_args=af.fix(fixer)))
    result, _ = run([malformed.tool_args("{bad", tool="count_keys"), say("1")], [tool])
    assert seen == ['{"a": 1}']
    assert result.trace.of("fixer.result")[0].status == "fixed"


def test_the_tool_reruns_on_fixed_arguments_rather_than_returning_the_fixer_output():
    tool, seen = counting_tool(
        af.OnError(execution=af.fix(af.Agent.from_function("f", lambda raw: '{"json": "[1,2,3]"}')))
    )
    result, _ = run([call_tool("count_keys", json="oops"), say("3")], [tool])
    assert tool_results(result) == ["3"]  # the tool's result, not the fixer's JSON
    assert len(seen) == 2


def test_repaired_arguments_are_validated_again():
    fixer = af.Agent.from_function("f", lambda raw: '{"jsn": "{}"}')  # still wrong
    tool, seen = counting_tool(af.OnError(invalid_args=af.fix(fixer, retries=1)))
    result, _ = run([malformed.tool_args("{bad", tool="count_keys"), say("x")], [tool])
    assert seen == []
    assert result.trace.count("tool.error", tool="count_keys") == 2
    payload = json.loads(tool_results(result)[0])
    assert payload["error_type"] == "validation"


def test_rounds_end_after_retries():
    calls = []

    def fixer(raw: str) -> str:
        calls.append(raw)
        return json.dumps({"json": f"not json {len(calls)}"})

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer), 3)))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    assert len(calls) == 3
    assert result.usage.fixer_calls == 3
    assert json.loads(tool_results(result)[0])["attempts"] == 4


def test_a_fixer_returning_the_same_arguments_ends_the_rounds():
    calls = []

    def same(raw: str) -> str:
        calls.append(raw)
        return raw

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", same), 5)))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    assert len(calls) == 1
    assert result.trace.of("fixer.result")[0].status == "unchanged"


@pytest.mark.parametrize("echo", [str.strip, lambda raw: f"```json\n{raw}\n```"])
def test_a_fixer_returning_the_same_arguments_trimmed_or_fenced_has_not_changed_them(echo):
    # Found by the invariant suite: the tool reads arguments stripped and unfenced, so these
    # are the same arguments, and another round would repeat the same failure.
    calls = []

    def same(raw: str) -> str:
        calls.append(raw)
        return echo(raw)

    tool, _ = counting_tool(af.OnError(invalid_args=af.fix(af.Agent.from_function("f", same), 5)))
    result, _ = run([malformed.tool_args('{"json": ', tool="count_keys"), say("x")], [tool])
    assert len(calls) == 1
    assert result.trace.of("fixer.result")[0].status == "unchanged"
    assert json.loads(tool_results(result)[0])["error_type"] == "validation"


@pytest.mark.parametrize("produced", ["not json at all", 42, None])
def test_a_fixer_returning_garbage_is_bounded_and_fed_back(produced):
    fixer = af.Agent.from_function("f", lambda raw: produced)
    tool, seen = counting_tool(af.OnError(invalid_args=af.fix(fixer, retries=2)))
    result, _ = run([malformed.tool_args("{bad", tool="count_keys"), say("x")], [tool])
    assert seen == []
    assert json.loads(tool_results(result)[0])["ok"] is False
    assert result.usage.fixer_calls <= 2


def test_a_fixer_that_itself_fails_is_recorded_and_the_policy_decides():
    def broken(raw: str) -> str:
        raise RuntimeError("fixer crashed")

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", broken))))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    (fixer_result,) = result.trace.of("fixer.result")
    assert fixer_result.status == "error"
    assert fixer_result.error.message == "fixer crashed"
    assert json.loads(tool_results(result)[0])["error"].startswith("JSONDecodeError")


@pytest.mark.parametrize(
    "mistake",
    [AssertionError("script exhausted"), af.UsageError("bad config")],
    ids=["assertion", "usage"],
)
def test_a_fixer_raising_a_test_or_developer_mistake_is_never_swallowed(mistake):
    def broken(raw: str) -> str:
        raise mistake

    tool, seen = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", broken))))
    with pytest.raises(type(mistake)) as caught:
        run([call_tool("count_keys", json="x")], [tool])
    assert caught.value is mistake
    assert seen == ["x"]


def test_a_failing_fixer_with_on_exhaustion_raise_raises():
    def broken(raw: str) -> str:
        raise RuntimeError("fixer crashed")

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", broken))))
    with pytest.raises(af.ToolExecutionError) as caught:
        run(
            [call_tool("count_keys", json="x")],
            [tool],
            resilience=af.ResilienceConfig(on_exhaustion="raise"),
        )
    assert isinstance(caught.value.__cause__, ValueError)


def test_fix_works_for_timeouts_too():
    clock = af.VirtualClock()
    slow_inputs = []

    @af.tool(
        on_error=af.OnError(
            timeout=af.fix(af.Agent.from_function("smaller", lambda raw: '{"rows": 10}'))
        )
    )
    def query(rows: int) -> str:
        """Query rows."""
        slow_inputs.append(rows)
        clock.advance(rows / 100)  # big queries are slow
        return f"{rows} rows"

    result, _ = run(
        [call_tool("query", rows=100_000), say("ok")],
        [query],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=30),
    )
    assert slow_inputs == [100_000, 10]
    assert tool_results(result) == ["10 rows"]


# ----------------------------------------------------------------------- escalation


def test_function_fixer_raising_escalation_feeds_the_plain_error_string_back():
    def fixer(raw: str) -> str:
        raise af.EscalationError("input is not JSON, send an object", af.Severity.HIGH)

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    result, model = run([call_tool("count_keys", json="x"), say("x")], [tool])
    expected = "ERROR: Tool 'count_keys' failed: input is not JSON, send an object"
    assert tool_results(result) == [expected]
    assert model.requests[1].messages[-1].content == expected
    (event,) = result.trace.escalations("count_keys")
    assert event.severity == "HIGH"
    assert event.reason == "input is not JSON, send an object"


def test_function_fixer_raising_tool_execution_error_is_a_hard_failure():
    def fixer(raw: str) -> str:
        raise af.ToolExecutionError("data is corrupt")

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    model = ScriptedModel([call_tool("count_keys", json="x")])
    agent = af.Agent("a", model=model, tools=[tool], clock=af.VirtualClock())
    with pytest.raises(af.ToolExecutionError, match="data is corrupt"):
        agent.run("x")
    assert len(model.requests) == 1  # no further model call


# ----------------------------------------------------------------------- LLM fixers


def test_llm_fixer_gets_one_user_message_naming_tool_error_and_raw_arguments():
    fixer_model = ScriptedModel([say('```json\n{"json": "{\\"k\\": 1}"}\n```')])
    fixer = af.Agent("json-fixer", model=fixer_model)
    tool, seen = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run([call_tool("count_keys", json="{k: 1}"), say("1")], [tool])
    (request,) = fixer_model.requests
    (message,) = request.messages
    assert message.role == "user"
    assert "'count_keys'" in message.content
    assert "JSONDecodeError" in message.content
    assert '{"json": "{k: 1}"}' in message.content
    assert seen == ["{k: 1}", '{"k": 1}']
    assert result.usage.fixer_calls == 1
    assert result.usage.llm_calls == 3  # parent 2 + fixer 1


def test_llm_fixer_events_are_nested_with_parent_run_id():
    fixer = af.Agent("json-fixer", model=ScriptedModel([say('{"json": "{}"}')]))
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run([call_tool("count_keys", json="x"), say("0")], [tool])
    nested = [e for e in result.trace if e.parent_run_id is not None]
    assert nested, "the fixer's run is recorded inside the parent trace"
    assert {e.parent_run_id for e in nested} == {result.run_id}
    assert {e.agent for e in nested} == {"json-fixer"}
    assert [e.seq for e in result.trace] == list(range(len(result.trace)))
    result.trace.assert_sequence("fixer.call", "run.start", "run.end", "fixer.result")


def test_llm_fixer_calling_builtin_escalate_makes_a_soft_failure():
    fixer = af.Agent(
        "json-fixer",
        model=ScriptedModel([call_tool("escalate", reason="use double quotes", severity="low")]),
        builtin_tools=("escalate",),
    )
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    assert tool_results(result) == ["ERROR: Tool 'count_keys' failed: use double quotes"]
    (escalation,) = result.trace.escalations()
    assert escalation.severity == "LOW"
    assert escalation.agent == "analyst"


@pytest.mark.parametrize("said", ["HIGH", "High", " high "])
def test_builtin_escalate_takes_a_severity_in_any_case(said):
    # as EscalationError(reason, "HIGH") does, and as the trace names it: an escalation
    # the model made is never lost to an invalid-arguments error over the case of a word
    fixer = af.Agent(
        "json-fixer",
        model=ScriptedModel([call_tool("escalate", reason="ask a human", severity=said)]),
        builtin_tools=("escalate",),
    )
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    assert tool_results(result) == ["ERROR: Tool 'count_keys' failed: ask a human"]
    (escalation,) = result.trace.escalations()
    assert escalation.severity == "HIGH"


def test_builtin_escalate_still_refuses_an_unknown_severity_and_shows_the_four():
    from pytest_agentfaults.runtime._components import BUILTIN_TOOLS

    escalate = BUILTIN_TOOLS["escalate"]
    schema = escalate.parameters
    assert schema["properties"]["severity"] == {"$ref": "#/$defs/Severity", "default": "medium"}
    assert schema["$defs"]["Severity"]["enum"] == ["low", "medium", "high", "critical"]
    with pytest.raises(af.InvalidArgsError, match="severity"):
        escalate.validate({"reason": "x", "severity": "urgent"})


def test_llm_fixer_calling_throw_exception_propagates_out_of_run():
    fixer = af.Agent(
        "json-fixer",
        model=ScriptedModel([call_tool("throw_exception", reason="unrecoverable")]),
        builtin_tools=("throw_exception",),
    )
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    with pytest.raises(af.ToolExecutionError, match="unrecoverable"):
        run([call_tool("count_keys", json="x")], [tool])


def test_llm_fixer_whose_model_fails_is_bounded():
    fixer = af.Agent("json-fixer", model=ScriptedModel([fail.http(500)]))
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    assert result.trace.of("fixer.result")[0].status == "error"
    assert json.loads(tool_results(result)[0])["ok"] is False


def test_fix_needs_an_agent():
    with pytest.raises(af.UsageError, match="needs an af.Agent"):
        af.fix(lambda raw: raw)  # type: ignore[arg-type]
    with pytest.raises(af.UsageError, match="retries"):
        af.fix(af.Agent.from_function("f", str), retries=0)


def test_fixer_round_costs_are_counted_per_call():
    fixer = af.Agent.from_function("f", lambda raw: '{"json": "{}"}')
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    result, _ = run(
        [call_tool("count_keys", json="x"), call_tool("count_keys", json="y"), say("x")], [tool]
    )
    assert len(result.trace.fixer_calls("count_keys")) == 2
    assert result.usage.fixer_calls == 2


def test_an_llm_fixer_s_tokens_add_to_the_run_s_usage():
    fixed = say('{"json": "{}"}', usage={"input_tokens": 40, "output_tokens": 7})
    fixer = af.Agent("json-fixer", model=ScriptedModel([fixed]))
    tool, _ = counting_tool(af.OnError(execution=af.fix(fixer)))
    steps = [
        call_tool("count_keys", json="{k: 1}").with_usage(input_tokens=100, output_tokens=10),
        say("0", usage={"input_tokens": 150, "output_tokens": 5}),
    ]
    result, _ = run(steps, [tool])
    assert (result.usage.input_tokens, result.usage.output_tokens) == (290, 22)
    assert result.usage.llm_calls == 3


def test_invoke_raises_the_escalation_a_fixer_made():
    def fixer(raw: str) -> str:
        raise af.EscalationError("needs a human", af.Severity.HIGH)

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    with pytest.raises(af.EscalationError, match="needs a human"):
        tool.invoke({"json": "x"}, clock=af.VirtualClock())


def test_an_escalation_event_carries_the_call_id_of_the_call_it_ended():
    def fixer(raw: str) -> str:
        raise af.EscalationError("input is not JSON", af.Severity.LOW)

    tool, _ = counting_tool(af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    result, _ = run([call_tool("count_keys", json="x"), say("x")], [tool])
    (call,) = result.trace.of("tool.call", tool="count_keys")[:1]
    (event,) = result.trace.escalations("count_keys")
    assert event.call_id is not None
    assert event.call_id == call.call_id
