"""Each recovery action of a tool call counts its own attempts.

A tool with one retry for timeouts and another for other failures gets each of them: a
timeout spends the first, a connection error the second, and neither uses up the other.
The same action for two kinds of failure is one budget.
"""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _agent(failures: list[Exception], on_error: af.OnError) -> af.Agent:
    @af.tool(on_error=on_error)
    def fetch(url: str) -> str:
        """Fetch a page."""
        if failures:
            raise failures.pop(0)
        return "page"

    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="https://a.test"), say("ok")]),
        tools=[fetch],
        clock=af.VirtualClock(),
    )


def _timeout() -> af.ToolTimeoutError:
    return af.ToolTimeoutError("tool 'fetch' did not finish within 5s", tool="fetch", timeout=5)


def test_a_timeout_and_a_connection_error_each_get_their_own_retry():
    on_error = af.OnError(
        timeout=af.retry(max_attempts=2, strategy="fixed"),
        execution=af.retry(max_attempts=2, strategy="fixed"),
    )
    result = _agent([_timeout(), ConnectionError("reset")], on_error).run("go")
    assert result.trace.retries("fetch") == 2
    assert result.trace.count("tool.exhausted") == 0
    assert next(m.content for m in result.messages if m.role == "tool") == "page"


def test_one_retry_action_for_both_kinds_is_one_budget():
    shared = af.retry(max_attempts=2, strategy="fixed")
    on_error = af.OnError(timeout=shared, execution=shared)
    result = _agent([_timeout(), ConnectionError("reset")], on_error).run("go")
    assert result.trace.retries("fetch") == 1
    [exhausted] = result.trace.of("tool.exhausted", tool="fetch")
    assert (exhausted.attempt, exhausted.max_attempts) == (2, 2)
    assert exhausted.error is not None
    assert exhausted.error.type == "ConnectionError"
