"""An explicit event when retries run out: ``tool.exhausted`` and ``llm.exhausted`` (issue 21)."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, say
from pytest_agentfaults.testing._trace_text import render_events


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    raise ConnectionError("reset")


def test_a_tool_whose_every_attempt_failed_records_tool_exhausted():
    model = ScriptedModel([call_tool("fetch", url="x"), say("gave up")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    trace = agent.run("go").trace
    [event] = trace.of("tool.exhausted", tool="fetch")
    assert event.attempt == 4
    assert event.max_attempts == 4
    assert event.error is not None
    assert event.error.type == "ConnectionError"
    trace.assert_sequence("tool.retry:fetch", "tool.error:fetch", "tool.exhausted:fetch")
    line = next(line for line in render_events(trace.events) if "tool.exhausted" in line)
    assert "retries exhausted: tool 'fetch' failed all 4 attempts: ConnectionError: reset" in line


def test_a_tool_that_recovers_records_no_exhausted_event():
    calls = []

    @af.tool(name="fetch")
    def flaky(url: str) -> str:
        """Fetch."""
        calls.append(url)
        if len(calls) < 2:
            raise ConnectionError("reset")
        return "page"

    model = ScriptedModel([call_tool("fetch", url="x"), say("ok")])
    trace = af.Agent("bot", model=model, tools=[flaky], clock=af.VirtualClock()).run("go").trace
    assert trace.count("tool.exhausted") == 0


def test_a_non_retryable_error_is_not_retries_exhausted():
    @af.tool(name="fetch")
    def broken(url: str) -> str:
        """Fetch."""
        raise ValueError("bad url")

    model = ScriptedModel([call_tool("fetch", url="x"), say("ok")])
    trace = af.Agent("bot", model=model, tools=[broken], clock=af.VirtualClock()).run("go").trace
    assert trace.count("tool.exhausted") == 0


def test_model_calls_whose_retries_ran_out_record_llm_exhausted():
    model = ScriptedModel([fail.http(503), fail.http(503), say("never")], strict=False)
    agent = af.Agent(
        "bot",
        model=model,
        on_llm_error=lambda error, context: af.LlmErrorDecision.retry(max_attempts=2),
    )
    with af.fault_scope() as scope:
        try:
            agent.run("go")
        except af.ModelServerError:
            pass
    [event] = scope.trace.of("llm.exhausted")
    assert (event.attempt, event.max_attempts) == (2, 2)
    assert event.error is not None
    assert event.error.type == "ModelServerError"


def test_the_text_trace_shows_the_event_once():
    model = ScriptedModel([call_tool("fetch", url="x"), say("gave up")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    lines = render_events(agent.run("go").trace.events)
    assert sum("retries exhausted" in line for line in lines) == 1
