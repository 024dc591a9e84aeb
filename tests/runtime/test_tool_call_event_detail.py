"""A ``tool.call`` event shows the arguments the model sent, for the trace and reports."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def test_a_tool_call_event_shows_the_arguments_of_each_attempt():
    calls: list[str] = []

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=2, strategy="fixed")))
    def fetch(url: str) -> str:
        """Fetch a page."""
        calls.append(url)
        if len(calls) == 1:
            raise ConnectionError("reset")
        return "page"

    model = ScriptedModel([call_tool("fetch", url="https://x.test/a"), say("ok")])
    result = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock()).run("go")
    events = result.trace.of("tool.call", tool="fetch")
    assert [(e.attempt, e.detail) for e in events] == [
        (1, '{"url": "https://x.test/a"}'),
        (2, '{"url": "https://x.test/a"}'),
    ]
