"""Does the research assistant survive failing tools and a failing model? Prove it.

Run with `--agentfaults-trace=always` to see every test's recovery trace.
"""

from __future__ import annotations

import json

import pytest
from research_assistant import build_agent

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

URL = "https://docs.example/retries"


def happy_script():
    return [
        call_tool("search", query="retries"),
        call_tool("fetch", url=URL),
        call_tool("summarise", text="Retries with backoff absorb transient failures."),
        say(f"Retries with backoff absorb transient failures. ({URL})"),
    ]


def test_happy_path(trace):
    result = build_agent(ScriptedModel(happy_script())).run("How do retries help?")
    assert result.status == "ok"
    assert URL in result.output
    assert trace.retries() == 0


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_fetch_survives_two_connection_resets(trace, virtual_clock):
    result = build_agent(ScriptedModel(happy_script())).run("How do retries help?")
    assert result.status == "ok"
    assert trace.retries("fetch") == 2
    assert virtual_clock.sleeps == [0.5, 1.0]  # exponential backoff: recorded, never slept
    trace.assert_sequence(
        "tool.fault:fetch",
        "tool.retry:fetch",
        "tool.fault:fetch",
        "tool.retry:fetch",
        "tool.result:fetch",
    )


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=3)
def test_a_dead_page_is_fed_back_and_the_model_moves_on():
    model = ScriptedModel(
        [
            call_tool("fetch", url=URL),
            call_tool("fetch", url="https://docs.example/timeouts"),
            say("Every attempt needs a deadline. (https://docs.example/timeouts)"),
        ]
    )
    result = build_agent(model).run("What about timeouts?")
    payload = json.loads(model.requests[1].messages[-1].content)
    assert payload["ok"] is False
    assert payload["attempts"] == 3
    assert result.output.endswith("(https://docs.example/timeouts)")


@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="index offline"))
def test_a_logical_failure_is_never_retried(trace):
    model = ScriptedModel([call_tool("search", query="retries"), say("The index is offline.")])
    result = build_agent(model).run("?")
    assert result.output == "The index is offline."
    assert trace.retries("search") == 0
    assert trace.errors("search")[0].error.kind == "logical"


def test_a_fixer_repairs_invalid_arguments(trace):
    script = [call_tool("summarise", text="Retries " * 200, max_words=500), *happy_script()[3:]]
    model = ScriptedModel(script)
    result = build_agent(model).run("Summarise this.")
    assert result.status == "ok"
    assert len(trace.fixer_calls("summarise")) == 1
    assert trace.errors("summarise")[0].error.type == "InvalidArgsError"
    assert model.requests[1].messages[-1].content == " ".join(["Retries"] * 50)


@pytest.mark.inject_fault(llm="malformed_tool_args", at=1)
def test_a_malformed_tool_call_is_fed_back_not_a_crash(trace):
    result = build_agent(ScriptedModel(happy_script())).run("?")
    assert result.status == "ok"
    assert trace.count("llm.fault") == 1
    assert trace.errors()[0].error.type == "InvalidArgsError"
    # the broken call came first: the script's search still ran, then the rest
    assert [trace.count("tool.result", tool=name) for name in ("search", "fetch")] == [1, 1]


@pytest.mark.inject_fault(llm="rate_limit", retry_after=2)
@pytest.mark.inject_fault(llm="server_error")
def test_a_failing_model_is_retried_by_the_llm_error_policy(trace, virtual_clock):
    def on_llm_error(exc, attempt):
        return af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=1)

    result = build_agent(ScriptedModel(happy_script()), on_llm_error=on_llm_error).run("?")
    assert result.status == "ok"
    assert [e.error.type for e in trace.of("llm.error")] == ["RateLimitError", "ModelServerError"]
    # the 429's Retry-After (2 s) outweighs the first backoff (1 s); the 503 then waits 2 s
    assert virtual_clock.sleeps[:2] == [2.0, 2.0]


def test_a_runaway_model_hits_the_budget(trace):
    model = ScriptedModel([call_tool("search", query="retries")], on_exhausted="repeat_last")
    result = build_agent(model).run("?")
    assert result.status == "max_iterations"
    assert trace.count("budget.exceeded") == 1
