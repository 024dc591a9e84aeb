"""A `CancelToken` subclass that decides by itself whether it is cancelled stops runs too.

The runtime reads the token's flag inline at every step (a property read is a call); a
subclass that overrides ``cancelled`` (a deadline, an outside event) is asked instead.
"""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


class AfterOneToolCall(af.CancelToken):
    """Cancelled once a tool has run: the run stops before its next model turn."""

    def __init__(self) -> None:
        super().__init__()
        self.tool_calls = 0

    @property
    def cancelled(self) -> bool:
        return super().cancelled or self.tool_calls >= 1


def test_a_run_stops_when_the_tokens_own_rule_says_cancelled():
    token = AfterOneToolCall()

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        token.tool_calls += 1
        return "page"

    agent = af.Agent(
        "bot",
        # strict=False: the steps after the cancel are never asked for
        model=ScriptedModel(
            [call_tool("fetch", url="a"), call_tool("fetch", url="b"), say("ok")], strict=False
        ),
        tools=[fetch],
        clock=af.VirtualClock(),
    )
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert token.tool_calls == 1  # the second call never ran


def test_such_a_token_still_cancels_as_the_base_does():
    token = AfterOneToolCall()
    assert not token.cancelled
    token.cancel("stop")
    assert token.cancelled
    assert token.reason == "stop"
    model = ScriptedModel([say("ok")], strict=False)
    agent = af.Agent("bot", model=model, clock=af.VirtualClock())
    assert agent.run("x", cancel=token).status == "cancelled"


def test_the_base_token_is_read_as_before():
    token = af.CancelToken()
    assert not token.cancelled
    token.cancel()
    assert token.cancelled
