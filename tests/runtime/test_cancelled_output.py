"""A run stopped before the model answered has no output, never a tool's result."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool


def test_a_run_cancelled_after_a_tool_result_has_no_output():
    token = af.CancelToken()

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return "<html>secret page</html>"

    def stop_after_the_tool(event):
        if event.type == "tool.result":
            token.cancel("user pressed stop")

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="a")]),
        tools=[fetch],
        clock=af.VirtualClock(),
        observer=stop_after_the_tool,
    )
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert result.output is None
