"""A model calling a tool the agent does not have is told which tools there are.

Nothing ran, so the payload counts no attempt; the trace's ``tool.error`` carries the
`UnknownToolError`, and the list of tools includes the agent's built-ins.
"""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return "page"


@pytest.mark.parametrize(
    ("tools", "builtins", "available"),
    [
        pytest.param([fetch], ("escalate",), "fetch, escalate", id="tools-and-builtins"),
        pytest.param([], (), "(none)", id="no-tools"),
    ],
)
def test_the_model_is_told_the_tools_it_can_call(tools, builtins, available):
    model = ScriptedModel([call_tool("fetch_page", url="x"), say("ok")])
    agent = af.Agent(
        "bot", model=model, tools=tools, builtin_tools=builtins, clock=af.VirtualClock()
    )
    result = agent.run("go")
    message = f"unknown tool 'fetch_page'; available: {available}"
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert payload["tool"] == "fetch_page"
    assert payload["error"] == f"UnknownToolError: {message}"
    assert payload["attempts"] == 0
    assert payload["recommendations"] == [
        f"There is no tool named 'fetch_page'. Call one of: {available}."
    ]
    [error] = result.trace.of("tool.error", tool="fetch_page")
    assert error.attempt is None
    assert error.error is not None
    assert (error.error.type, error.error.message) == ("UnknownToolError", message)
