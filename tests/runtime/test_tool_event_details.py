"""What a tool's events show, for the trace, the verdict and reports.

``tool.call`` shows the arguments the model sent, ``tool.result`` the attempt that
succeeded and what it returned; a ``tool.error`` of a tool that must not run twice says
so, with its attempt and whether the failure leaves it unknown if the tool took effect.
"""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _run(tool: af.Tool, **arguments: object) -> af.RunResult:
    model = ScriptedModel([call_tool(tool.name, **arguments), say("ok")])
    return af.Agent("bot", model=model, tools=[tool], clock=af.VirtualClock()).run("go")


def _flaky_fetch() -> af.Tool:
    calls: list[str] = []

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=2, strategy="fixed")))
    def fetch(url: str) -> dict[str, str]:
        """Fetch a page."""
        calls.append(url)
        if len(calls) == 1:
            raise ConnectionError("reset")
        return {"title": "Home"}

    return fetch


def test_a_tool_call_event_shows_the_arguments_of_each_attempt():
    result = _run(_flaky_fetch(), url="https://x.test/a")
    events = result.trace.of("tool.call", tool="fetch")
    assert [(e.attempt, e.detail) for e in events] == [
        (1, '{"url": "https://x.test/a"}'),
        (2, '{"url": "https://x.test/a"}'),
    ]


def test_a_tool_result_event_shows_the_attempt_that_succeeded_and_what_it_returned():
    result = _run(_flaky_fetch(), url="https://x.test/a")
    [event] = result.trace.of("tool.result", tool="fetch")
    assert (event.attempt, event.detail, event.framework) == (
        2,
        '{"title":"Home"}',
        "agentfaults",
    )


def test_a_non_idempotent_tools_error_event_says_so_with_its_attempt():
    @af.tool(idempotent=False)
    def charge(amount: int) -> str:
        """Charge a card."""
        raise ConnectionResetError("reset after sending")

    result = _run(charge, amount=5)
    [error] = result.trace.of("tool.error", tool="charge")
    assert error.attempt == 1
    assert error.field("idempotent") is False
    assert error.field("ambiguous") is True
    assert error.error is not None
    assert error.error.type == "ConnectionResetError"
