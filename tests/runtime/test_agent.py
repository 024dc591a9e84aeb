"""The agent loop, through the public API with ScriptedModel and VirtualClock."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, call_tools, fail, malformed, say
from pytest_agentfaults.runtime.backoff import seeded_jitter


def flaky(failures: int, exc: BaseException | None = None):
    """A fetch tool that fails `failures` times, then answers."""
    calls: list[str] = []

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        calls.append(url)
        if len(calls) <= failures:
            raise exc or ConnectionError("reset")
        return f"<html>{url}</html>"

    return fetch, calls


def make(model_steps, tools=(), **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=ScriptedModel(model_steps), tools=tools, **kwargs)


def tool_messages(result):
    return [m.content for m in result.messages if m.role == "tool"]


# ----------------------------------------------------------------------- the loop


def test_one_tool_call_round_trip():
    fetch, calls = flaky(0)
    agent = make([call_tool("fetch", url="https://a.test"), say("done")], [fetch])
    result = agent.run("summarise")
    assert result.output == "done"
    assert result.status == "ok"
    assert calls == ["https://a.test"]
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert tool_messages(result) == ["<html>https://a.test</html>"]
    assert result.usage.llm_calls == 2
    assert result.usage.tool_calls == 1
    assert result.usage.retries == 0
    result.trace.assert_sequence(
        "run.start",
        "llm.request",
        "llm.response",
        "tool.call:fetch",
        "tool.result:fetch",
        "llm.request",
        "llm.response",
        "run.end",
    )


def test_instructions_become_the_system_message():
    agent = make([say("hi")], instructions="Be brief.")
    result = agent.run("hello")
    assert result.messages[0].role == "system"
    assert result.messages[0].content == "Be brief."
    assert agent.model.requests[0].messages[0].content == "Be brief."


def test_call_shorthand_returns_the_output():
    assert make([say("42")])("what is six times seven") == "42"


def test_model_sees_tool_specs():
    fetch, _ = flaky(0)
    agent = make([say("ok")], [fetch])
    agent.run("x")
    specs = agent.model.requests[0].tools
    assert [s.name for s in specs] == ["fetch"]
    assert specs[0].parameters["required"] == ["url"]


def test_non_string_results_are_fed_back_as_json():
    @af.tool
    def stats(n: int) -> dict:
        """Stats."""
        return {"n": n, "ok": True}

    result = make([call_tool("stats", n=2), say("ok")], [stats]).run("x")
    assert tool_messages(result) == ['{"n":2,"ok":true}']


def test_several_tool_calls_in_one_turn_run_in_order():
    fetch, calls = flaky(0)
    agent = make(
        [call_tools([call_tool("fetch", url="a"), call_tool("fetch", url="b")]), say("both")],
        [fetch],
    )
    result = agent.run("x")
    assert calls == ["a", "b"]
    assert tool_messages(result) == ["<html>a</html>", "<html>b</html>"]
    ids = [m.tool_call_id for m in result.messages if m.role == "tool"]
    assert len(set(ids)) == 2
    assert result.usage.tool_calls == 2


def test_plain_callables_are_accepted_as_tools():
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result = make([call_tool("add", a=1, b=2), say("3")], [add]).run("x")
    assert tool_messages(result) == ["3"]


def test_run_and_arun_have_identical_semantics():
    def scenario():
        fetch, _ = flaky(2)
        return make(
            [call_tool("fetch", url="u"), call_tool("nope"), say("done")],
            [fetch],
            resilience=af.ResilienceConfig(strategy="linear"),
        )

    sync = scenario().run("x")
    asyn = asyncio.run(scenario().arun("x"))
    strip = lambda r: [(e.type, e.tool, e.attempt, e.delay, e.at) for e in r.trace]  # noqa: E731
    assert strip(sync) == strip(asyn)
    assert sync.output == asyn.output == "done"
    assert [m.content for m in sync.messages] == [m.content for m in asyn.messages]


def test_async_tools_in_sync_and_async_runs():
    @af.tool
    async def aping(host: str) -> str:
        """Ping."""
        await asyncio.sleep(0)
        return "pong"

    assert make([call_tool("aping", host="h"), say("ok")], [aping]).run("x").output == "ok"
    result = asyncio.run(make([call_tool("aping", host="h"), say("ok")], [aping]).arun("x"))
    assert tool_messages(result) == ["pong"]


def test_continuing_a_conversation_from_messages():
    first = make([say("hello")]).run("hi")
    agent = make([say("again")])
    second = agent.run("and?", messages=first.messages)
    assert [m.content for m in second.messages] == ["hi", "hello", "and?", "again"]


# ----------------------------------------------------------------------- retries


def test_transient_tool_errors_are_retried_by_the_config_with_virtual_backoff():
    fetch, calls = flaky(2)
    clock = af.VirtualClock()
    agent = make(
        [call_tool("fetch", url="u"), say("done")],
        [fetch],
        clock=clock,
        resilience=af.ResilienceConfig(strategy="exponential", base_delay=1),
    )
    result = agent.run("x")
    assert result.output == "done"
    assert len(calls) == 3
    assert clock.sleeps == [1.0, 2.0]
    assert result.trace.retries("fetch") == 2
    assert result.trace.delays("fetch") == [1.0, 2.0]
    assert result.usage.retries == 2
    assert tool_messages(result) == ["<html>u</html>"]
    result.trace.assert_sequence(
        "tool.call:fetch",
        "tool.error:fetch",
        "tool.retry:fetch",
        "tool.call:fetch",
        "tool.error:fetch",
        "tool.retry:fetch",
        "tool.call:fetch",
        "tool.result:fetch",
    )
    retry = result.trace.of("tool.retry", tool="fetch")[0]
    assert retry.error.type == "ConnectionError"
    assert retry.error.retryable is True
    assert retry.attempt == 2
    assert retry.max_attempts == 4


def test_recorded_jitter_equals_the_seeded_schedule():
    fetch, _ = flaky(3)
    config = af.ResilienceConfig(max_retries=3)
    with seeded_jitter(11):
        result = make([call_tool("fetch", url="u"), say("ok")], [fetch], resilience=config).run("x")
    assert result.trace.delays("fetch") == config.schedule(seed=11)


def test_event_times_follow_the_virtual_clock():
    fetch, _ = flaky(1)
    result = make(
        [call_tool("fetch", url="u"), say("ok")],
        [fetch],
        resilience=af.ResilienceConfig(strategy="fixed", base_delay=5),
    ).run("x")
    calls = result.trace.of("tool.call")
    assert [e.at for e in calls] == [0.0, 5.0]
    assert [e.seq for e in result.trace] == list(range(len(result.trace)))


def test_exhausted_retries_feed_the_error_payload_to_the_model():
    fetch, calls = flaky(10)
    agent = make(
        [call_tool("fetch", url="u"), say("gave up")],
        [fetch],
        resilience=af.ResilienceConfig(max_retries=2, strategy="none"),
    )
    result = agent.run("x")
    assert len(calls) == 3
    payload = json.loads(tool_messages(result)[0])
    assert payload == {
        "ok": False,
        "tool": "fetch",
        "error": "ConnectionError: reset",
        "error_type": "runtime",
        "retryable": True,
        "attempts": 3,
        "recommendations": payload["recommendations"],
    }
    assert payload["recommendations"]
    assert agent.model.requests[1].messages[-1].content == tool_messages(result)[0]


def test_on_exhaustion_raise_raises_tool_execution_error_naming_the_tool_with_the_cause():
    fetch, _ = flaky(10)
    agent = make(
        [call_tool("fetch", url="u")],
        [fetch],
        resilience=af.ResilienceConfig(max_retries=1, strategy="none", on_exhaustion="raise"),
    )
    with pytest.raises(af.ToolExecutionError, match="after 2 attempt") as caught:
        agent.run("x")
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert caught.value.tool == "fetch"  # an `except ToolExecutionError` can tell which tool
    assert len(agent.model.requests) == 1


def test_non_retryable_errors_are_not_retried():
    fetch, calls = flaky(10, ValueError("bad url"))
    result = make([call_tool("fetch", url="u"), say("ok")], [fetch]).run("x")
    assert len(calls) == 1
    assert result.trace.retries() == 0
    payload = json.loads(tool_messages(result)[0])
    assert payload["retryable"] is False
    assert payload["error"] == "ValueError: bad url"


def test_tool_overrides_disable_retries_for_one_tool():
    fetch, calls = flaky(10)
    config = af.ResilienceConfig(tool_overrides={"fetch": {"max_retries": 0}})
    make([call_tool("fetch", url="u"), say("ok")], [fetch], resilience=config).run("x")
    assert len(calls) == 1


def test_tool_failure_is_fed_back_and_never_retried():
    calls = []

    @af.tool
    def search(q: str) -> str | af.ToolFailure:
        """Search."""
        calls.append(q)
        return af.ToolFailure(error="no results", recommendations=["broaden the query"])

    result = make([call_tool("search", q="x"), say("ok")], [search]).run("x")
    assert calls == ["x"]
    payload = json.loads(tool_messages(result)[0])
    assert payload["error"] == "no results"
    assert payload["error_type"] == "logical"
    assert payload["recommendations"] == ["broaden the query"]
    error = result.trace.of("tool.error", tool="search")[0]
    assert error.error.kind == "logical"


# ----------------------------------------------------------------------- policies


def test_resolution_priority_tool_over_agent_over_defaults_over_config():
    def build(**policy):
        fetch, calls = flaky(10)
        if "tool" in policy:
            fetch = af.tool(on_error=policy.pop("tool"))(fetch.function)
        agent = make(
            [call_tool("fetch", url="u"), say("ok")],
            [fetch],
            resilience=af.ResilienceConfig(max_retries=5, strategy="none"),
            **policy,
        )
        agent.run("x")
        return len(calls)

    two = af.OnError(execution=af.retry(max_attempts=2, strategy="none"))
    three = af.OnError(execution=af.retry(max_attempts=3, strategy="none"))
    four = af.OnError(execution=af.retry(max_attempts=4, strategy="none"))
    assert build() == 6
    assert build(tool_defaults=four) == 4
    assert build(tool_defaults=four, on_tool_error={"fetch": three}) == 3
    assert build(tool_defaults=four, on_tool_error={"fetch": three}, tool=two) == 2


def test_a_level_without_the_slot_defers_to_the_next():
    fetch, calls = flaky(10)
    agent = make(
        [call_tool("fetch", url="u"), say("ok")],
        [af.tool(on_error=af.OnError(invalid_args=af.feed_back()))(fetch.function)],
        tool_defaults=af.OnError(execution=af.retry(max_attempts=2, strategy="none")),
    )
    agent.run("x")
    assert len(calls) == 2


def test_retry_action_uses_its_own_strategy():
    fetch, _ = flaky(2)
    clock = af.VirtualClock()
    make(
        [call_tool("fetch", url="u"), say("ok")],
        [fetch],
        clock=clock,
        on_tool_error={"fetch": af.OnError(execution=af.retry(3, strategy="linear", base_delay=2))},
    ).run("x")
    assert clock.sleeps == [2.0, 4.0]


def test_retry_on_narrows_what_is_retried():
    fetch, calls = flaky(10, KeyError("k"))
    make(
        [call_tool("fetch", url="u"), say("ok")],
        [fetch],
        tool_defaults=af.OnError(execution=af.retry(3, strategy="none", retry_on=KeyError)),
    ).run("x")
    assert len(calls) == 3


def test_feed_back_action_gives_the_error_at_once():
    fetch, calls = flaky(10)
    result = make(
        [call_tool("fetch", url="u"), say("ok")],
        [fetch],
        tool_defaults=af.OnError(execution=af.feed_back()),
    ).run("x")
    assert len(calls) == 1
    assert json.loads(tool_messages(result)[0])["attempts"] == 1


def test_raise_error_action_propagates_the_original_exception():
    boom = ConnectionError("reset")
    fetch, _ = flaky(10, boom)
    agent = make(
        [call_tool("fetch", url="u")],
        [fetch],
        tool_defaults=af.OnError(execution=af.raise_error()),
    )
    with pytest.raises(ConnectionError) as caught:
        agent.run("x")
    assert caught.value is boom


def test_respond_with_substitutes_a_result():
    fetch, _ = flaky(10)
    result = make(
        [call_tool("fetch", url="u"), say("ok")],
        [fetch],
        tool_defaults=af.OnError(execution=af.respond_with({"cached": True})),
    ).run("x")
    assert tool_messages(result) == ['{"cached":true}']
    assert result.trace.count("tool.result", tool="fetch") == 1


def test_invalid_args_for_retry_is_refused_at_configuration():
    with pytest.raises(af.UsageError, match="use af.fix"):
        af.OnError(invalid_args=af.retry(3))


def test_bad_actions_are_refused():
    with pytest.raises(af.UsageError, match="af.retry"):
        af.OnError(execution="retry")  # type: ignore[arg-type]
    with pytest.raises(af.UsageError, match="counts the original call"):
        af.retry(max_attempts=0)
    with pytest.raises(af.UsageError, match="unknown strategy"):
        af.retry(strategy="sometimes")


# ----------------------------------------------------------------------- timeouts


def test_per_attempt_timeout_through_the_virtual_clock():
    clock = af.VirtualClock()
    runs = []

    @af.tool
    def report(day: str) -> str:
        """A slow report."""
        runs.append(clock.now())
        if len(runs) == 1:
            clock.sleep(90)  # the first attempt hangs
        return "report"

    result = make(
        [call_tool("report", day="mon"), say("ok")],
        [report],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=10, strategy="fixed", base_delay=1),
    ).run("x")
    assert tool_messages(result) == ["report"]
    error = result.trace.of("tool.error", tool="report")[0]
    assert error.error.type == "ToolTimeoutError"
    assert error.error.retryable is True
    # the hung attempt is cut at its deadline, then the 1 s backoff
    assert runs == [0.0, 11.0]


def test_timeout_action_applies_to_timeouts_only():
    clock = af.VirtualClock()

    @af.tool
    def slow() -> str:
        """Slow."""
        clock.advance(30)
        return "late"

    result = make(
        [call_tool("slow"), say("ok")],
        [slow],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=5),
        tool_defaults=af.OnError(timeout=af.respond_with("timed out, used cache")),
    ).run("x")
    assert tool_messages(result) == ["timed out, used cache"]


def test_async_tool_timeout_with_virtual_clock():
    clock = af.VirtualClock()

    @af.tool
    async def aslow() -> str:
        """Slow."""
        await clock.asleep(100)
        return "late"

    result = asyncio.run(
        make(
            [call_tool("aslow"), say("ok")],
            [aslow],
            clock=clock,
            resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
        ).arun("x")
    )
    payload = json.loads(tool_messages(result)[0])
    assert payload["error"].startswith("ToolTimeoutError")
    assert clock.now() == 5.0


# ----------------------------------------------------------------------- model mistakes


def test_unknown_tool_is_fed_back_not_a_crash():
    fetch, _ = flaky(0)
    agent = make([malformed.unknown_tool("serch"), say("sorry")], [fetch])
    result = agent.run("x")
    assert result.output == "sorry"
    payload = json.loads(tool_messages(result)[0])
    assert payload["tool"] == "serch"
    assert payload["error_type"] == "validation"
    assert "fetch" in payload["recommendations"][0]


def test_unparseable_arguments_are_fed_back():
    fetch, calls = flaky(0)
    result = make([malformed.tool_args("{url: x", tool="fetch"), say("sorry")], [fetch]).run("x")
    assert calls == []
    payload = json.loads(tool_messages(result)[0])
    assert payload["error"].startswith("InvalidArgsError")
    assert payload["attempts"] == 0
    assert result.trace.count("tool.error", tool="fetch") == 1


def test_schema_violations_are_fed_back_and_the_model_can_correct_them():
    fetch, calls = flaky(0)
    result = make(
        [call_tool("fetch", link="u"), call_tool("fetch", url="u"), say("ok")], [fetch]
    ).run("x")
    assert calls == ["u"]
    assert json.loads(tool_messages(result)[0])["error_type"] == "validation"
    assert tool_messages(result)[1] == "<html>u</html>"


# ----------------------------------------------------------------------- built-ins


def test_builtin_tools_are_inactive_unless_named():
    agent = make([call_tool("escalate", reason="help"), say("ok")])
    result = agent.run("x")
    assert json.loads(tool_messages(result)[0])["error"].startswith("UnknownToolError")
    assert [s.name for s in agent.model.requests[0].tools] == []


def test_active_builtins_are_offered_to_the_model():
    agent = make([say("ok")], builtin_tools=("escalate", "throw_exception"))
    agent.run("x")
    assert [s.name for s in agent.model.requests[0].tools] == ["escalate", "throw_exception"]


def test_throw_exception_is_a_hard_failure_leaving_run_at_once():
    agent = make(
        [call_tool("throw_exception", reason="disk on fire")],
        builtin_tools=("throw_exception",),
    )
    with pytest.raises(af.ToolExecutionError, match="disk on fire"):
        agent.run("x")
    assert len(agent.model.requests) == 1


def test_a_tool_raising_tool_execution_error_is_not_retried():
    fetch, calls = flaky(10, af.ToolExecutionError("corrupt"))
    agent = make([call_tool("fetch", url="u")], [fetch])
    with pytest.raises(af.ToolExecutionError, match="corrupt"):
        agent.run("x")
    assert len(calls) == 1


def test_a_tool_raising_escalation_error_is_a_soft_failure():
    fetch, _ = flaky(10, af.EscalationError("site blocks bots", "high"))
    result = make([call_tool("fetch", url="u"), say("ok")], [fetch]).run("x")
    assert tool_messages(result) == ["ERROR: Tool 'fetch' failed: site blocks bots"]
    (event,) = result.trace.escalations("fetch")
    assert event.reason == "site blocks bots"
    assert event.severity == "HIGH"


def test_builtin_escalate_in_a_top_level_agent_escalates_to_the_caller():
    agent = make([call_tool("escalate", reason="need a human")], builtin_tools=("escalate",))
    with pytest.raises(af.EscalationError, match="need a human"):
        agent.run("x")


# ----------------------------------------------------------------------- model errors


def test_model_errors_propagate_unchanged_by_default():
    boom = af.ModelServerError("503", status=503)
    agent = make([fail(boom)])
    with pytest.raises(af.ModelServerError) as caught:
        agent.run("x")
    assert caught.value is boom
    end = agent.model  # the trace is still reachable through the events of the run
    assert end.requests


@pytest.mark.parametrize("step", [malformed.empty(), malformed.blocked("content_filter")])
def test_soft_model_failures_become_malformed_response_errors(step):
    events = []
    agent = make([step], observer=events.append)
    with pytest.raises(af.MalformedResponseError):
        agent.run("x")
    assert [e.type for e in events if e.type == "llm.error"] == ["llm.error"]
    assert events[-1].type == "run.end"
    assert events[-1].status == "error"


# ----------------------------------------------------------------------- budgets


def test_max_turns_ends_the_run_with_max_iterations():
    fetch, _ = flaky(0)
    agent = make([call_tool("fetch", url="u")] * 2, [fetch], budget=af.Budget(max_turns=2))
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert len(agent.model.requests) == 2
    (event,) = result.trace.of("budget.exceeded")
    assert event.status == "max_turns"
    assert result.trace.events[-1].type == "run.end"


def test_max_tool_calls_stops_before_the_next_tool_call():
    fetch, calls = flaky(0)
    agent = make(
        [call_tools([call_tool("fetch", url=str(i)) for i in range(5)])],
        [fetch],
        budget=af.Budget(max_tool_calls=3),
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert calls == ["0", "1", "2"]


def test_max_llm_calls_counts_retries_of_the_model():
    agent = make(
        [fail.http(503)] * 2,  # a third call would find no step and fail the test
        budget=af.Budget(max_llm_calls=2),
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=10),
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert len(agent.model.requests) == 2


def test_a_tool_error_policy_cannot_swallow_a_budget_cap():
    fetch, calls = flaky(10)
    agent = make(
        [call_tools([call_tool("fetch", url="a"), call_tool("fetch", url="b")])],
        [fetch],
        budget=af.Budget(max_tool_calls=1),
        tool_defaults=af.OnError(execution=af.respond_with("fine")),
    )
    result = agent.run("x")
    assert result.status == "max_iterations"
    assert calls == ["a"]


def test_bad_budget_values_are_usage_errors():
    with pytest.raises(af.UsageError, match="max_turns"):
        af.Budget(max_turns=0)


@pytest.mark.parametrize("typo", ["max_cost", "max_time", "max_tools_calls"])
def test_an_unknown_budget_field_is_named_with_the_fields_there_are(typo):
    # not "give an int >= 1" for a float, nor pydantic's raw report
    with pytest.raises(af.UsageError) as caught:
        af.Budget(**{typo: 1.5})
    assert str(caught.value).startswith(f"Budget({typo}=1.5): unknown field; the caps are ")
    assert "max_turns, max_llm_calls, max_tool_calls, max_input_tokens" in str(caught.value)


# ----------------------------------------------------------------------- cancellation


def test_cancel_token_stops_the_run_with_status_cancelled():
    token = af.CancelToken()
    fetch, calls = flaky(0)

    def stop_after_first_tool(event):
        if event.type == "tool.result":
            token.cancel("user pressed stop")

    agent = make(
        [call_tool("fetch", url="a")],
        [fetch],
        observer=stop_after_first_tool,
    )
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert calls == ["a"]
    (event,) = result.trace.of("run.cancelled")
    assert event.reason == "user pressed stop"


def test_cancel_during_backoff_stops_before_the_retry():
    token = af.CancelToken()
    fetch, calls = flaky(10)

    def stop_on_retry(event):
        if event.type == "tool.retry":
            token.cancel()

    result = make([call_tool("fetch", url="a")], [fetch], observer=stop_on_retry).run(
        "x", cancel=token
    )
    assert result.status == "cancelled"
    assert len(calls) == 1


def test_task_cancellation_is_recorded_and_reraised():
    events = []

    @af.tool
    async def hang() -> str:
        """Hangs."""
        await asyncio.Event().wait()
        return "never"

    agent = make([call_tool("hang")], [hang], observer=events.append)

    async def main():
        task = asyncio.create_task(agent.arun("x"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert [e.type for e in events][-2:] == ["run.cancelled", "run.end"]


# ----------------------------------------------------------------------- observers


def test_an_observer_that_raises_never_breaks_a_run(caplog):
    def broken(event):
        raise RuntimeError("observer bug")

    with caplog.at_level(logging.ERROR, logger="pytest_agentfaults"):
        result = make([say("ok")], observer=broken).run("x")
    assert result.output == "ok"
    assert "observer bug" in caplog.text


def test_progress_observer_prints_one_line_per_step(capsys):
    fetch, _ = flaky(1)
    make(
        [call_tool("fetch", url="u"), say("done")],
        [fetch],
        observer="progress",
        resilience=af.ResilienceConfig(strategy="fixed"),
    ).run("x")
    out = capsys.readouterr().out.splitlines()
    assert "[bot] [tool-retry] fetch 1/3 ConnectionError: reset (waiting 1.0s)" in out
    assert out[-1] == "[bot] [run-end] ok -> done"
    assert not any("llm-request" in line for line in out)


def test_detailed_observer_prints_every_event(capsys):
    result = make([say("done")], observer="detailed").run("x")
    out = capsys.readouterr().out.splitlines()
    assert len(out) == len(result.trace)


def test_on_llm_error_handler_that_raises_is_treated_as_rethrow(caplog):
    boom = af.ModelServerError("x", status=500)

    def bad_handler(exc, attempt):
        raise RuntimeError("handler bug")

    agent = make([fail(boom)], on_llm_error=bad_handler)
    with (
        caplog.at_level(logging.ERROR, logger="pytest_agentfaults"),
        pytest.raises(af.ModelServerError) as caught,
    ):
        agent.run("x")
    assert caught.value is boom
    assert "handler bug" in caplog.text


# ----------------------------------------------------------------------- bad config


def test_two_tools_with_one_name_is_a_usage_error():
    fetch, _ = flaky(0)
    other, _ = flaky(0)
    with pytest.raises(
        af.UsageError, match=r"two tools are named 'fetch'.*@af.tool\(name=\.\.\.\)"
    ):
        af.Agent("bot", tools=[fetch, other])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"builtin_tools": ("panic",)}, "unknown built-in 'panic'"),
        ({"on_tool_error": {"nope": af.OnError()}}, "unknown tool"),
        ({"observer": 3}, "observer must be"),
        ({"model": object()}, "not an af.Model"),
        ({"resilience": {"max_retries": 2}}, "af.ResilienceConfig"),
        ({"tools": "fetch"}, "tools must be a list"),
        # refused here, not with an AttributeError when the run first reads the time
        ({"clock": 42}, r"clock=42 is not a clock: give af.RealClock\(\), af.VirtualClock\(\)"),
        ({"clock": __import__("time")}, "is not a clock: .* now, sleep and asleep"),
    ],
)
def test_bad_agent_configuration_is_a_usage_error(kwargs, message):
    with pytest.raises(af.UsageError, match=message):
        af.Agent("bot", **kwargs)


def test_running_without_a_model_is_a_usage_error():
    with pytest.raises(af.UsageError, match="has no model"):
        af.Agent("bot").run("x")


def test_running_without_a_prompt_is_a_usage_error():
    with pytest.raises(af.UsageError, match="needs a prompt"):
        make([]).run()


def test_a_broken_interceptor_is_an_assertion_error_never_a_tool_failure():
    from pytest_agentfaults.runtime.hooks import (
        Interceptor,
        InterceptorError,
        install_interceptor,
        remove_interceptor,
    )

    class Broken(Interceptor):
        def tool_attempt(self, attempt):
            raise AttributeError("no attribute 'next_fault'")

    fetch, calls = flaky(0)
    agent = make([call_tool("fetch", url="u")], [fetch])
    broken = Broken()
    install_interceptor(broken)
    try:
        with pytest.raises(InterceptorError, match="fault injection failed") as caught:
            agent.run("x")
    finally:
        remove_interceptor(broken)
    assert isinstance(caught.value, AssertionError)
    assert isinstance(caught.value.__cause__, AttributeError)
    assert calls == []
    assert len(agent.model.requests) == 1
