"""What the model reads when a tool fails for good: advice that names the tool it called."""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def test_the_advice_the_model_reads_names_the_tool_that_failed():
    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        raise ConnectionError("reset")

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="https://a.test"), say("sorry")]),
        tools=[fetch],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=0),
    )
    result = agent.run("x")
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    payload = json.loads(content)
    assert payload["tool"] == "fetch"
    assert payload["recommendations"][0] == (
        "The failure of 'fetch' looks transient; calling it again may succeed."
    )
