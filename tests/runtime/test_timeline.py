"""trace.render(format="svg"): a well-formed picture holding every event."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, fail, say
from pytest_agentfaults.runtime.timeline import nice_ticks

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
    assert {"model scripted (bot)", "tool fetch", "tool parse"} <= set(labels)


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


# ---------------------------------------------------------------- issue 21, item 5


def _x_of(element) -> float:
    """Where an event's element sits on the x axis (each kind of mark keeps it elsewhere)."""
    if element.get("x") is not None:
        return float(element.get("x"))
    if element.get("x1") is not None:
        return float(element.get("x1"))
    if element.get("d") is not None:
        return float(element.get("d")[1:].split(",")[0])
    return _x_of(next(iter(element)))  # a flag: its line


def _marks(svg: str) -> dict[int, float]:
    root = ET.fromstring(svg)
    return {int(el.get("data-seq")): _x_of(el) for el in root.iter() if el.get("data-seq")}


def _zero_time_trace():
    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return "page"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="u"), say("ok")]),
        tools=[fetch],
        clock=af.VirtualClock(),
    )
    return agent.run("go").trace


def test_a_run_that_took_no_time_gets_one_column_per_event():
    trace = _zero_time_trace()
    assert {e.at for e in trace} == {0.0}
    svg = trace.render(format="svg")
    root = ET.fromstring(svg)
    (axis,) = [el for el in root.iter() if el.get("class") == "axis"]
    assert axis.get("data-axis") == "ordinal"
    # the tick marks (attempt starts) and flags sit in their own column, in event order
    marks = _marks(svg)
    starts = [marks[e.seq] for e in trace if e.type in ("run.start", "llm.request", "tool.call")]
    assert starts == sorted(starts)
    assert len(set(starts)) == len(starts)
    captions = [el.text for el in root.iter(f"{SVG}text") if el.get("class") == "caption"]
    assert captions == ["events in order (the run took no time: one column per event)"]


def test_title_legend_and_time_ticks_in_1_2_5_steps(trace):
    svg = trace.render(format="svg", title="fetch recovers")
    root = ET.fromstring(svg)
    texts = {el.get("class"): [] for el in root.iter(f"{SVG}text")}
    for el in root.iter(f"{SVG}text"):
        texts[el.get("class")].append(el.text)
    assert texts["title"] == ["fetch recovers"]
    (legend,) = [el for el in root.iter(f"{SVG}g") if el.get("class") == "legend"]
    assert [t.text for t in legend.iter(f"{SVG}text")] == [
        "attempt starts",
        "attempt worked",
        "attempt failed",
        "injected fault",
        "backoff wait",
        "fixer, escalation, run start/end",
    ]
    ticks = [float(t.removesuffix("s")) for t in texts["tick"]]
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 9) in (1.0, 2.0, 5.0)
    assert ticks[-1] >= max(e.at + (e.delay or 0) for e in trace)
    assert ticks == [round(i * step, 9) for i in range(len(ticks))]


@pytest.mark.parametrize(
    ("end", "expected"),
    [
        (7.3, (8.0, [0.0, 2.0, 4.0, 6.0, 8.0])),
        (0.37, (0.4, [0.0, 0.1, 0.2, 0.3, 0.4])),
        (10.0, (10.0, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])),
        (23.0, (25.0, [0.0, 5.0, 10.0, 15.0, 20.0, 25.0])),
        (0.0, (1.0, [0.0, 1.0])),
    ],
)
def test_nice_ticks(end, expected):
    assert nice_ticks(end) == expected


def test_one_row_per_http_host_tool_and_model():
    from pytest_agentfaults.runtime.events import Event

    events = [
        Event(type="run.start", seq=0, agent="bot"),
        Event(type="http.request", seq=1, at=0.5, url="https://a.test/v1/x", status=503),
        Event(type="http.request", seq=2, at=1.0, url="https://b.test/v1/y", status=200),
        Event(type="tool.call", seq=3, at=1.5, agent="bot", tool="fetch"),
        Event(type="tool.result", seq=4, at=2.0, agent="bot", tool="fetch"),
    ]
    root = ET.fromstring(af.Trace(events).render(format="svg"))
    rows = [el.text for el in root.iter(f"{SVG}text") if el.get("class") == "row"]
    assert rows == ["model (bot)", "tool fetch", "HTTP a.test", "HTTP b.test"]


def test_an_http_row_is_named_by_host_without_user_info_and_never_fails_on_a_url():
    from pytest_agentfaults.runtime.events import Event

    events = [  # recorded URLs are redacted: a password becomes "[REDACTED]"
        Event(type="http.request", seq=0, url="https://bob:[REDACTED]@a.test/v1/x", status=503),
        Event(type="http.request", seq=1, url="https://a.test/v1/x", status=200),
        Event(type="http.request", seq=2, url="http://[::1]:8080/v1", status=200),
        Event(type="http.request", seq=3, url="http://[not an ip/", status=200),
    ]
    root = ET.fromstring(af.Trace(events).render(format="svg"))
    rows = [el.text for el in root.iter(f"{SVG}text") if el.get("class") == "row"]
    assert rows == ["HTTP a.test", "HTTP [::1]:8080", "HTTP [not an ip"]


def test_a_fallback_model_gets_a_row_of_its_own():
    agent = af.Agent(
        "bot",
        model=ScriptedModel([fail.http(503)], name="primary", on_exhausted="repeat_last"),
        resilience=af.ResilienceConfig(fallback_model=ScriptedModel([say("ok")], name="backup")),
        on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry(max_attempts=2),
        clock=af.VirtualClock(),
    )
    trace = agent.run("go").trace
    root = ET.fromstring(trace.render(format="svg"))
    rows = [el.text for el in root.iter(f"{SVG}text") if el.get("class") == "row"]
    assert rows == ["model primary (bot)", "model backup (bot)"]
