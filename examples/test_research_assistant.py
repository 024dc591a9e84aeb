"""Does the research assistant survive failing tools and a failing model? Prove it."""

from __future__ import annotations

import json

import pytest
from research_assistant import build_agent, network

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, malformed, say

URL = "https://docs.example/retries"


def happy_script():
    return [
        call_tool("search", query="retries"),
        call_tool("fetch", url=URL),
        call_tool("summarise", text="Retries with backoff absorb transient failures."),
        say(f"Retries with backoff absorb transient failures. ({URL})"),
    ]


def test_happy_path(show):
    result = show(build_agent(ScriptedModel(happy_script()), clock=af.VirtualClock()).run("?"))
    assert result.status == "ok"
    assert URL in result.output
    assert result.trace.retries() == 0


def test_fetch_survives_two_connection_resets(show):
    network.failures[:] = [ConnectionError("reset"), ConnectionError("reset")]
    clock = af.VirtualClock()
    result = show(build_agent(ScriptedModel(happy_script()), clock=clock).run("?"))
    assert result.status == "ok"
    assert result.trace.retries("fetch") == 2
    assert clock.sleeps == [0.5, 1.0]  # exponential backoff, recorded, never slept
    result.trace.assert_sequence(
        "tool.error:fetch",
        "tool.retry:fetch",
        "tool.error:fetch",
        "tool.retry:fetch",
        "tool.result:fetch",
    )


def test_a_dead_page_is_fed_back_and_the_model_moves_on(show):
    network.failures[:] = [ConnectionError("reset")] * 3
    script = [
        call_tool("fetch", url=URL),
        call_tool("fetch", url="https://docs.example/timeouts"),
        say("Every attempt needs a deadline. (https://docs.example/timeouts)"),
    ]
    model = ScriptedModel(script)
    result = show(build_agent(model, clock=af.VirtualClock()).run("?"))
    payload = json.loads(model.requests[1].messages[-1].content)
    assert payload["ok"] is False
    assert payload["attempts"] == 3
    assert result.output.endswith("(https://docs.example/timeouts)")


def test_a_malformed_tool_call_is_fed_back_not_a_crash(show):
    script = [malformed.tool_args("{url: nope", tool="fetch"), *happy_script()]
    result = show(build_agent(ScriptedModel(script), clock=af.VirtualClock()).run("?"))
    assert result.status == "ok"
    assert result.trace.errors("fetch")[0].error.kind == "validation"


def test_a_rate_limited_model_is_retried_by_the_llm_error_policy(show):
    decisions = []

    def on_llm_error(exc, attempt):
        decisions.append((type(exc).__name__, attempt))
        return af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=1)

    clock = af.VirtualClock()
    model = ScriptedModel([fail.rate_limit(retry_after=2), fail.http(503), *happy_script()])
    result = show(build_agent(model, clock=clock, on_llm_error=on_llm_error).run("?"))
    assert result.status == "ok"
    assert decisions == [("RateLimitError", 1), ("ModelServerError", 2)]
    assert clock.sleeps[:2] == [1.0, 2.0]


def test_a_runaway_model_hits_the_budget(show):
    model = ScriptedModel([call_tool("search", query="retries")], on_exhausted="repeat_last")
    result = show(build_agent(model, clock=af.VirtualClock()).run("?"))
    assert result.status == "max_iterations"
    assert result.trace.count("budget.exceeded") == 1


@pytest.mark.parametrize("query", ["nothing matches this"])
def test_no_results_is_a_logical_failure_never_retried(show, query):
    script = [call_tool("search", query=query), say("I found nothing.")]
    result = show(build_agent(ScriptedModel(script), clock=af.VirtualClock()).run("?"))
    (error,) = result.trace.errors("search")
    assert error.error.kind == "logical"
    assert result.trace.retries("search") == 0
