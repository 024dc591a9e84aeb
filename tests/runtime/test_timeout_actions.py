"""An action for timeouts applies to timeouts only: other failures get their own policy."""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _run(failure: Exception) -> af.RunResult:
    @af.tool(on_error=af.OnError(timeout=af.respond_with("cached page")))
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise failure

    model = ScriptedModel([call_tool("fetch", url="https://a.test"), say("ok")])
    agent = af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=0),
    )
    return agent.run("go")


def _tool_message(result: af.RunResult) -> str:
    return next(m.content for m in result.messages if m.role == "tool")


def test_a_timeout_gets_the_timeout_action():
    timeout = af.ToolTimeoutError("tool 'fetch' did not finish within 5s", tool="fetch", timeout=5)
    assert _tool_message(_run(timeout)) == "cached page"


def test_another_failure_does_not_get_the_timeout_action():
    payload = json.loads(_tool_message(_run(ConnectionError("reset"))))
    assert payload["error"] == "ConnectionError: reset"
    assert payload["attempts"] == 1
