"""Defects seen in other agent frameworks, which this one must never have."""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, call_tools, malformed, say


def test_fixer_on_an_execution_error_receives_the_failing_input_not_an_empty_string():
    received: list[str] = []

    def fixer(raw: str) -> str:
        received.append(raw)
        return '{"n": 2}'

    @af.tool(on_error=af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    def half(n: int) -> int:
        """Halve an even number."""
        if n % 2:
            raise ValueError("odd")
        return n // 2

    af.Agent("a", model=ScriptedModel([call_tool("half", n=3), say("1")]), tools=[half]).run("x")
    assert received == ['{"n": 3}']


def test_a_fixers_output_reruns_the_tool_instead_of_becoming_the_result():
    @af.tool(
        on_error=af.OnError(execution=af.fix(af.Agent.from_function("f", lambda raw: '{"n": 4}')))
    )
    def half(n: int) -> int:
        """Halve an even number."""
        if n % 2:
            raise ValueError("odd")
        return n // 2

    result = af.Agent(
        "a", model=ScriptedModel([call_tool("half", n=3), say("2")]), tools=[half]
    ).run("x")
    assert [m.content for m in result.messages if m.role == "tool"] == ["2"]


def test_repaired_arguments_are_validated_again_before_the_tool_reruns():
    ran: list[int] = []

    @af.tool(
        on_error=af.OnError(
            invalid_args=af.fix(af.Agent.from_function("f", lambda raw: '{"n": "two"}'))
        )
    )
    def half(n: int) -> int:
        """Halve."""
        ran.append(n)
        return n // 2

    result = af.Agent(
        "a",
        model=ScriptedModel([malformed.tool_args("{n: 2", tool="half"), say("x")]),
        tools=[half],
    ).run("x")
    assert ran == []
    assert result.trace.count("tool.error", tool="half") == 2


def test_a_tool_error_handler_cannot_swallow_a_budget_cap():
    @af.tool(on_error=af.OnError(execution=af.respond_with("ignored")))
    def boom() -> str:
        """Always fails."""
        raise RuntimeError("x")

    result = af.Agent(
        "a",
        model=ScriptedModel([call_tools([call_tool("boom"), call_tool("boom")])]),
        tools=[boom],
        budget=af.Budget(max_tool_calls=1),
    ).run("x")
    assert result.status == "max_iterations"
    assert result.trace.count("budget.exceeded") == 1


def test_an_invented_tool_name_is_fed_back_instead_of_ending_the_run():
    @af.tool
    def search(q: str) -> str:
        """Search."""
        return "hit"

    model = ScriptedModel(
        [malformed.unknown_tool("web_search"), call_tool("search", q="x"), say("hit")]
    )
    result = af.Agent("a", model=model, tools=[search]).run("x")
    assert result.status == "ok"
    assert result.output == "hit"
    payload = json.loads(model.requests[1].messages[-1].content)
    assert payload["tool"] == "web_search"
    assert "search" in payload["recommendations"][0]
