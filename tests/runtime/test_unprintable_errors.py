"""An exception whose ``__str__`` (or ``__repr__``) raises is shown, never a crash."""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, say

SHOWN = "<Unprintable: str() raised RuntimeError>"


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("boom")

    def __repr__(self) -> str:
        raise RuntimeError("boom")


class UnprintableTransient(ConnectionError):
    def __str__(self) -> str:
        raise RuntimeError("boom")


def agent_with(model, *tools, **kwargs):
    kwargs.setdefault("clock", af.VirtualClock())
    return af.Agent("bot", model=model, tools=list(tools), **kwargs)


@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    raise Unprintable


def test_a_tool_error_that_cannot_be_printed_is_traced_and_fed_back():
    model = ScriptedModel([call_tool("fetch", url="u"), say("sorry")])
    agent = agent_with(model, fetch, resilience=af.ResilienceConfig(max_retries=0))
    result = agent.run("x")
    assert result.output == "sorry"
    (event,) = result.trace.errors("fetch")
    assert event.error.message == SHOWN
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    assert json.loads(content)["error"] == f"Unprintable: {SHOWN}"
    assert SHOWN in result.trace.render()
    assert SHOWN in result.trace.to_json()


def test_a_plain_transient_error_that_cannot_be_printed_is_classified():
    info = af.classify(UnprintableTransient())
    assert (info.kind, info.retryable) == ("runtime", True)
    assert af.ErrorRecord.from_exception(UnprintableTransient()).message == (
        "<UnprintableTransient: str() raised RuntimeError>"
    )


def test_a_tool_that_fails_for_good_with_it_raises_a_readable_error():
    model = ScriptedModel([call_tool("fetch", url="u")])
    agent = agent_with(
        model, fetch, resilience=af.ResilienceConfig(max_retries=0, on_exhaustion="raise")
    )
    with pytest.raises(af.ToolExecutionError) as caught:
        agent.run("x")
    assert SHOWN in str(caught.value)


def test_a_model_error_that_cannot_be_printed_is_traced_and_propagates():
    error = Unprintable()
    agent = agent_with(ScriptedModel([fail(error)]), observer=(events := []).append)
    with pytest.raises(Unprintable) as caught:
        agent.run("x")
    assert caught.value is error
    (event,) = [e for e in events if e.type == "llm.error"]
    assert event.error.message == SHOWN
    assert SHOWN in af.Trace(events).render()


def test_the_stand_ins_name_the_exception_and_what_its_method_raised():
    from pytest_agentfaults._exc_text import exception_repr, exception_text

    assert exception_text(Unprintable()) == SHOWN
    assert exception_repr(Unprintable()) == "<Unprintable: repr() raised RuntimeError>"
    assert exception_text(ValueError("plain")) == "plain"
