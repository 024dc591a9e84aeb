"""A tool that returns `af.ToolFailure` failed softly: the model is told, nothing is retried.

The payload names the tool and counts the attempt; the trace's ``tool.error`` carries the
failure's text and the attempt it ended.
"""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def test_a_returned_tool_failure_reaches_the_model_and_the_trace():
    calls: list[str] = []

    @af.tool
    def read(path: str) -> str | af.ToolFailure:
        """Read a file."""
        calls.append(path)
        return af.ToolFailure(error="File not found", recommendations=["list the folder"])

    model = ScriptedModel([call_tool("read", path="a.txt"), say("no such file")])
    result = af.Agent("bot", model=model, tools=[read], clock=af.VirtualClock()).run("go")
    assert calls == ["a.txt"]  # not retried
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert (payload["tool"], payload["attempts"], payload["error"]) == ("read", 1, "File not found")
    [error] = result.trace.of("tool.error", tool="read")
    assert error.attempt == 1
    assert error.error is not None
    assert (error.error.type, error.error.message) == ("ToolFailure", "File not found")
