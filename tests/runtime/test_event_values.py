"""`Event` and `ErrorRecord` are plain classes with pydantic's API at the edges.

What users rely on from the former ``BaseModel``s keeps working: validation where they
construct one, dumps, JSON, copies, equality, and use as a field type of a pydantic model.
"""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import pytest_agentfaults as af
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace

BOOM = ErrorRecord(type="ConnectionError", message="reset", kind="runtime", retryable=True)


def test_constructing_an_event_validates_its_fields():
    with pytest.raises(ValidationError, match="attempt"):
        Event(type="tool.call", attempt="twice")
    with pytest.raises(ValidationError, match="type"):
        Event(tool="fetch")
    event = Event(type="tool.retry", delay=1, seq="3", error=BOOM.model_dump())
    assert (event.delay, event.seq) == (1.0, 3)
    assert isinstance(event.delay, float)
    assert event.error == BOOM


def test_unset_fields_read_their_defaults_and_extras_are_kept():
    event = Event(type="http.request", url="https://a.test/", retry_after=2.5)
    assert (event.seq, event.at, event.run_id, event.tool, event.error) == (0, 0.0, "", None, None)
    assert (event.url, event.retry_after) == ("https://a.test/", 2.5)
    assert event.model_extra == {"url": "https://a.test/", "retry_after": 2.5}
    assert event.model_fields_set == {"type"}
    assert event.field("url") == "https://a.test/"
    assert event.field("attempt") is None
    assert event.field("nothing") is None
    assert event.field("describe") is None  # a method is not a field


def test_model_dump_lists_every_field_in_order_then_the_extras():
    event = Event(type="tool.retry", tool="fetch", delay=0.5, error=BOOM, idempotent=False)
    dumped = event.model_dump()
    names = list(dumped)
    assert names[:4] == ["type", "seq", "at", "run_id"]
    assert names[-2:] == ["retry_count", "idempotent"]
    assert dumped["error"] == {
        "type": "ConnectionError",
        "message": "reset",
        "kind": "runtime",
        "retryable": True,
    }
    assert event.model_dump(exclude_none=True) == {
        "type": "tool.retry",
        "seq": 0,
        "at": 0.0,
        "run_id": "",
        "agent": "",
        "tool": "fetch",
        "delay": 0.5,
        "error": dumped["error"],
        "idempotent": False,
    }
    assert event.model_dump(exclude_defaults=True) == {
        "type": "tool.retry",
        "tool": "fetch",
        "delay": 0.5,
        "error": dumped["error"],
        "idempotent": False,
    }
    assert list(event.model_dump(exclude_unset=True)) == [
        "type",
        "tool",
        "delay",
        "error",
        "idempotent",
    ]
    assert event.model_dump(include={"type", "tool"}) == {"type": "tool.retry", "tool": "fetch"}
    assert json.loads(event.model_dump_json()) == event.model_dump(mode="json")
    assert dict(event) == {**dumped, "error": BOOM}  # as pydantic: values, not dumps


def test_an_event_survives_json_pickle_and_copies():
    event = Event(type="tool.error", tool="fetch", error=BOOM, url="https://a.test/")
    assert Event.model_validate_json(event.model_dump_json()) == event
    assert Event.model_validate(event.model_dump()) == event
    assert Event.model_validate(event) is event
    assert pickle.loads(pickle.dumps(event)) == event
    assert copy.deepcopy(event) == event
    moved = event.model_copy(update={"seq": 4})
    assert (moved.seq, event.seq, moved.url) == (4, 0, "https://a.test/")
    assert event.model_copy(deep=True) == event
    assert Event.model_json_schema()["required"] == ["type"]


def test_equality_ignores_which_fields_were_given():
    assert Event(type="run.start") == Event(type="run.start", seq=0, tool=None)
    assert Event(type="run.start") != Event(type="run.start", seq=1)
    assert Event(type="run.start") != Event(type="run.start", extra=1)
    assert Event(type="run.start") != "run.start"
    with pytest.raises(TypeError):
        hash(Event(type="run.start"))
    assert repr(Event(type="run.start", x=1)).startswith("Event(type='run.start', seq=0,")


def test_an_error_record_is_a_frozen_validated_value():
    with pytest.raises(ValidationError, match="retryable"):
        ErrorRecord(type="E", message="m", kind="runtime", retryable="perhaps")
    with pytest.raises(AttributeError, match="frozen"):
        BOOM.message = "changed"  # type: ignore[misc]
    same = ErrorRecord.model_validate(BOOM.model_dump())
    assert same == BOOM
    assert hash(same) == hash(BOOM)
    assert ErrorRecord.model_validate(BOOM) is BOOM
    assert pickle.loads(pickle.dumps(BOOM)) == BOOM
    assert copy.deepcopy(BOOM) == BOOM
    assert json.loads(BOOM.model_dump_json())["kind"] == "runtime"
    assert str(BOOM) == "ConnectionError: reset"
    assert repr(BOOM).startswith("ErrorRecord(type='ConnectionError'")
    assert BOOM != ("ConnectionError", "reset", "runtime", True)


def test_events_and_records_are_field_types_of_pydantic_models():
    class Saved(BaseModel):
        events: list[Event]
        first_error: ErrorRecord | None = None

    event = Event(type="tool.error", tool="fetch", error=BOOM, url="https://a.test/")
    saved = Saved(events=[event, {"type": "run.end", "status": "ok"}], first_error=BOOM)
    assert saved.events[0] is event
    assert saved.events[1] == Event(type="run.end", status="ok")
    dumped = saved.model_dump()
    assert dumped["events"][0] == event.model_dump()
    assert dumped["first_error"] == BOOM.model_dump()
    again = Saved.model_validate_json(saved.model_dump_json())
    assert again == saved
    with pytest.raises(ValidationError):
        Saved(events=[{"type": "x", "attempt": "twice"}])
    assert TypeAdapter(list[Event]).validate_python([{"type": "x"}]) == [Event(type="x")]


def test_the_recorder_keeps_typed_values_and_validates_the_others():
    recorder = Recorder(agent="bot", clock=af.VirtualClock())
    typed = recorder.emit("tool.retry", tool="fetch", attempt=2, delay=0.5, error=BOOM)
    assert typed.error is BOOM
    coerced = recorder.emit("tool.retry", attempt=True, delay=1, status=503)
    expected = Event(type="tool.retry", attempt=True, delay=1, status=503)
    assert (coerced.attempt, coerced.delay, coerced.status) == (
        expected.attempt,
        expected.delay,
        expected.status,
    )
    assert coerced.attempt.__class__ is expected.attempt.__class__
    assert isinstance(coerced.delay, float)
    with pytest.raises(ValidationError, match="error"):
        recorder.emit("tool.error", error="not a record")
    assert Trace.from_json(recorder.trace.to_json()) == recorder.trace
