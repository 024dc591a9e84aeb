"""Trace: questions, assert_sequence, render, JSON round trip, redaction."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime._recorder import Recorder, collecting
from pytest_agentfaults.runtime.events import EVENT_TYPES, Trace


@pytest.fixture
def result():
    attempts = []

    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        attempts.append(url)
        if len(attempts) < 3:
            raise ConnectionError("reset")
        return "page"

    @af.tool
    def parse(text: str) -> int:
        """Parse."""
        return len(text)

    agent = af.Agent(
        "bot",
        model=ScriptedModel(
            [call_tool("fetch", url="u"), call_tool("parse", text="page"), say("4")]
        ),
        tools=[fetch, parse],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(strategy="linear", base_delay=2),
    )
    return agent.run("go")


def test_of_count_retries_and_delays(result):
    trace = result.trace
    assert trace.count("tool.call") == 4
    assert trace.count("tool.call", tool="fetch") == 3
    assert [e.attempt for e in trace.of("tool.call", tool="fetch")] == [1, 2, 3]
    assert len(trace.of("tool.*")) == trace.count("tool.call") + 2 + 2 + 2
    assert trace.retries("fetch") == 2
    assert trace.retries("parse") == 0
    assert trace.retries() == 2
    assert trace.delays("fetch") == [2.0, 4.0]
    assert trace.delays() == [2.0, 4.0]
    assert trace.fixer_calls() == []
    assert trace.escalations() == []
    assert len(trace.errors("fetch")) == 2


def test_assert_sequence_matches_an_ordered_subsequence(result):
    result.trace.assert_sequence(
        "tool.call:fetch",
        "tool.error:fetch",
        "tool.retry:fetch",
        "tool.result:fetch",
        "tool.call:parse",
        "run.end",
    )


def test_assert_sequence_failure_shows_expected_and_actual(result):
    with pytest.raises(AssertionError) as caught:
        result.trace.assert_sequence("tool.result:parse", "tool.retry:fetch")
    message = str(caught.value)
    assert "expected (in order):" in message
    assert "ok tool.result:parse" in message
    assert "-> tool.retry:fetch" in message
    assert "first missing: 'tool.retry:fetch' (after 1 matched)" in message
    assert "actual timeline:" in message
    assert "tool.call:fetch" in message


def test_seq_is_contiguous_and_at_never_goes_backwards(result):
    events = result.trace.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert all(a.at <= b.at for a, b in itertools.pairwise(events))
    assert {e.run_id for e in events} == {result.run_id}
    assert {e.type for e in events} <= set(EVENT_TYPES)


def test_render_has_one_line_per_event_starting_with_its_type(result):
    lines = result.trace.render().splitlines()
    assert len(lines) == len(result.trace)
    for line, event in zip(lines, result.trace, strict=True):
        assert line.startswith(event.type)
    assert "ConnectionError: reset" in result.trace.render()


def test_json_round_trip(result):
    text = result.trace.to_json()
    again = af.Trace.from_json(text)
    assert again == result.trace
    assert json.loads(text)["events"][0]["type"] == "run.start"


def test_collecting_copies_every_event_with_its_own_numbering():
    test_trace = af.Trace()
    with collecting(test_trace):
        for _ in range(2):
            af.Agent("bot", model=ScriptedModel([say("hi")])).run("x")
    assert [e.seq for e in test_trace] == list(range(len(test_trace)))
    assert test_trace.count("run.start") == 2
    assert len({e.run_id for e in test_trace}) == 2


def test_secrets_are_redacted_when_recorded():
    recorder = Recorder(agent="bot", clock=af.VirtualClock())
    event = recorder.emit(
        "tool.error",
        detail="Authorization: Bearer sk-abcdefghijklmnopqrstuvwx",
        error=af.ErrorRecord.from_exception(RuntimeError("key sk-proj-AAAAAAAAAAAAAAAAAAAA bad")),
    )
    text = recorder.trace.to_json()
    assert "sk-abcdefghij" not in text
    assert "sk-proj-AAAA" not in text
    assert "[REDACTED]" in event.detail
    assert "[REDACTED]" in event.error.message


def test_api_key_in_a_tool_error_never_reaches_the_model_or_trace():
    @af.tool
    def call_api(q: str) -> str:
        """Call."""
        raise ValueError("request failed: api_key=sk-live-1234567890abcdefgh")

    result = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("call_api", q="x"), say("ok")]),
        tools=[call_api],
        clock=af.VirtualClock(),
    ).run("x")
    assert "1234567890abcdef" not in result.trace.to_json()
    assert all("1234567890abcdef" not in m.content for m in result.messages)


def test_secrets_never_reach_the_log(caplog):
    import logging

    def leaky(event):
        raise RuntimeError("observer failed with api_key=sk-live-abcdefghijklmnop1234")

    with caplog.at_level(logging.ERROR, logger="pytest_agentfaults"):
        af.Agent("bot", model=ScriptedModel([say("ok")]), observer=leaky).run("x")
    assert "observer failed" in caplog.text
    assert "abcdefghijklmnop1234" not in caplog.text
    assert "[REDACTED]" in caplog.text


def test_recorded_events_behave_like_validated_ones():
    recorder = Recorder(agent="bot", clock=af.VirtualClock())
    event = recorder.emit("tool.call", tool="fetch", custom=1)
    assert event.model_dump(exclude_unset=True) == {
        "type": "tool.call",
        "seq": 0,
        "at": 0.0,
        "run_id": recorder.run_id,
        "agent": "bot",
        "parent_run_id": None,
        "tool": "fetch",
        "custom": 1,
    }
    event.detail = "changed"
    assert "detail" in event.model_fields_set
    assert event == af.Event.model_validate(event.model_dump())


def test_judging_a_trace_loads_nothing_of_the_test_kit(tmp_path):
    # Trace.verdict(), assert_resilient() and assert_matches_snapshot() are runtime code:
    # the verdict and the snapshot form live in runtime/, so none of them loads `testing`.
    golden = tmp_path / "golden.json"
    code = (
        "import sys\n"
        "from pytest_agentfaults.runtime._recorder import Recorder\n"
        "from pytest_agentfaults.runtime.events import Trace\n"
        "from pytest_agentfaults.runtime.clock import VirtualClock\n"
        "from pytest_agentfaults.runtime.events import ErrorRecord\n"
        "trace = Trace()\n"
        "recorder = Recorder(agent='bot', clock=VirtualClock(), trace=trace)\n"
        "recorder.emit('run.start')\n"
        # a failure, so that the verdict has something to judge (an empty one fails)
        "error = ErrorRecord.from_exception(ConnectionError('reset'))\n"
        "recorder.emit('tool.error', tool='fetch', error=error)\n"
        "assert trace.verdict().passed\n"
        "trace.assert_resilient()\n"
        "from pytest_agentfaults.runtime.snapshot import SnapshotSettings, use_snapshots\n"
        "with use_snapshots(SnapshotSettings(update=True)):\n"
        f"    trace.assert_matches_snapshot({str(golden)!r})\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('pytest_agentfaults.testing'))\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
    assert golden.exists()


def test_a_mistyped_event_field_is_refused_where_it_is_recorded():
    # Events are built through pydantic's validator (not by writing its private slots), so
    # a field of the wrong type fails at emit time instead of breaking Trace.from_json later.
    recorder = Recorder(agent="bot", clock=af.VirtualClock())
    with pytest.raises(ValidationError, match="attempt"):
        recorder.emit("tool.retry", tool="fetch", attempt="twice")
    event = recorder.emit("tool.retry", tool="fetch", attempt=2, delay=1)
    assert event.delay == 1.0
    assert isinstance(event.delay, float)
    assert af.Trace.from_json(recorder.trace.to_json()) == recorder.trace


def test_the_runtime_writes_no_pydantic_private_slot():
    runtime = Path(af.__file__).parent / "runtime"
    private = ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
    offenders = [
        f"{path.relative_to(runtime)}: {name}"
        for path in sorted(runtime.rglob("*.py"))
        for name in private
        if name in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_renumbering_an_event_keeps_what_was_set():
    first, second = Trace(), Trace()
    Recorder(agent="a", clock=af.VirtualClock(), trace=first).emit("run.start", custom=1)
    stored = second.add(af.Event(type="run.start"))
    moved = second.add(first[0])
    assert (stored.seq, moved.seq, first[0].seq) == (0, 1, 0)
    assert moved.model_fields_set == first[0].model_fields_set
    assert moved.model_extra == {"custom": 1}
