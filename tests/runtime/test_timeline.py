"""trace.render(format="svg"): a well-formed picture holding every event."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, say

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def trace():
    calls = []

    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        calls.append(url)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return "ok"

    def fixer(raw):
        raise af.EscalationError("give up")

    @af.tool(on_error=af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    def parse(text: str) -> int:
        """Parse."""
        raise ValueError("bad")

    agent = af.Agent(
        "bot",
        model=ScriptedModel(
            [fail.http(503), call_tool("fetch", url="u"), call_tool("parse", text="x"), say("ok")]
        ),
        tools=[fetch, parse],
        clock=af.VirtualClock(),
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(),
    )
    return agent.run("go").trace


def test_svg_is_well_formed_and_shows_every_event(trace):
    svg = trace.render(format="svg", title="a <run> & more")
    root = ET.fromstring(svg)
    seqs = sorted(int(el.get("data-seq")) for el in root.iter() if el.get("data-seq") is not None)
    assert seqs == [e.seq for e in trace]
    labels = [el.text for el in root.iter(f"{SVG}text")]
    assert "a <run> & more" in labels
    assert {"model (bot)", "tool fetch", "tool parse"} <= set(labels)


def test_waits_and_failures_are_drawn(trace):
    root = ET.fromstring(trace.render(format="svg"))
    kinds = [el.get("data-type") for el in root.iter() if el.get("data-type")]
    assert kinds.count("tool.retry") == 2
    assert kinds.count("llm.retry") == 1
    assert "escalation" in kinds
    assert "tool.error" in kinds


def test_an_empty_trace_still_renders():
    ET.fromstring(af.Trace().render(format="svg"))


def test_unknown_format_is_a_usage_error(trace):
    with pytest.raises(af.UsageError, match="'text' or 'svg'"):
        trace.render(format="png")  # type: ignore[arg-type]
