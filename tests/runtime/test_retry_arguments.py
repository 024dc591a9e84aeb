"""A retry with the same arguments reuses their check only when no attempt can change them."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _run(tool: af.Tool, **arguments: object) -> af.RunResult:
    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool(tool.name, **arguments), say("ok")]),
        tools=[tool],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=2, strategy="none"),
    ).run("go")


def test_each_attempt_gets_fresh_arguments_a_tool_can_change():
    seen: list[list[int]] = []

    @af.tool
    def collect(items: list[int]) -> int:
        """Append to the list given, then fail twice."""
        items.append(99)
        seen.append(list(items))
        if len(seen) < 3:
            raise ConnectionError("reset")
        return len(items)

    result = _run(collect, items=[1])
    assert result.output == "ok"
    assert seen == [[1, 99], [1, 99], [1, 99]]
    assert result.trace.retries("collect") == 2


def test_scalar_arguments_reach_every_attempt_unchanged(monkeypatch):
    seen: list[tuple[int, str]] = []

    @af.tool
    def fetch(page: int, query: str = "x") -> str:
        """Fail twice."""
        seen.append((page, query))
        if len(seen) < 3:
            raise ConnectionError("reset")
        return "ok"

    checks: list[str] = []
    check = type(fetch).check_arguments

    def counted(self: af.Tool, arguments: object) -> object:
        checks.append(str(arguments))
        return check(self, arguments)

    monkeypatch.setattr(type(fetch), "check_arguments", counted)
    result = _run(fetch, page="2")  # coerced to 2 by the check, on every attempt
    assert seen == [(2, "x")] * 3
    assert len(checks) == 1  # checked once, reused by both retries
    assert [e.attempt for e in result.trace.of("tool.call")] == [1, 2, 3]
