"""Seed scenario: the tool cascade (docs/howto/tool-cascade.md).

max_retries=0 and three search tools: when one fails, the model sees the failure at once
and moves on to the next, until one answers.
"""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def build():
    calls: list[str] = []

    @af.tool
    def search_primary(query: str) -> str:
        """The main index."""
        calls.append("primary")
        raise ConnectionError("primary index unreachable")

    @af.tool
    def search_mirror(query: str) -> str:
        """A mirror of the index."""
        calls.append("mirror")
        raise TimeoutError("mirror timed out")

    @af.tool
    def search_archive(query: str) -> str:
        """The slow but dependable archive."""
        calls.append("archive")
        return f"archive: 2 results for {query!r}"

    model = ScriptedModel(
        [
            call_tool("search_primary", query="retry budgets"),
            call_tool("search_mirror", query="retry budgets"),
            call_tool("search_archive", query="retry budgets"),
            say("Found 2 results in the archive."),
        ]
    )
    agent = af.Agent(
        "researcher",
        model=model,
        tools=[search_primary, search_mirror, search_archive],
        resilience=af.ResilienceConfig(max_retries=0),
        clock=af.VirtualClock(),
    )
    return agent, model, calls


def test_the_model_moves_on_to_the_next_tool_when_one_fails():
    agent, model, calls = build()
    result = agent.run("Find material on retry budgets.")

    assert result.output == "Found 2 results in the archive."
    assert calls == ["primary", "mirror", "archive"]  # no retries: each tool ran once
    assert result.trace.retries() == 0
    assert agent.clock.sleeps == []
    first, second = (json.loads(model.requests[i].messages[-1].content) for i in (1, 2))
    assert first["tool"] == "search_primary"
    assert first["retryable"] is True
    assert first["attempts"] == 1
    assert second["error"] == "TimeoutError: mirror timed out"
    result.trace.assert_sequence(
        "tool.error:search_primary",
        "tool.error:search_mirror",
        "tool.result:search_archive",
        "run.end",
    )
