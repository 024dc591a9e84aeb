"""A tool result JSON cannot hold (bytes that are not UTF-8, a cycle, an object whose repr
breaks) still reaches the model, as a JSON string of its repr; the run goes on.

The tool has run, and its side effects happened: failing the run with a serialiser's error
that names neither the tool nor the fix (as it did) helps nobody. ``tool.invoke`` and
``tool.ainvoke`` return the value itself, whichever path they take.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


class NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


def cyclic() -> dict[str, object]:
    loop: dict[str, object] = {"name": "loop"}
    loop["self"] = loop
    return loop


VALUES = {
    "bytes that are not UTF-8": lambda: b"\xff\xfe",
    "bytes inside a dict": lambda: {"blob": b"\x89PNG\xff"},
    "a cycle": cyclic,
}


def run_returning(value: object) -> af.RunResult[str]:
    @af.tool
    def produce(x: int) -> object:
        """Produce a value."""
        return value

    model = ScriptedModel([call_tool("produce", x=1), say("done")])
    return af.Agent("bot", model=model, tools=[produce], clock=af.VirtualClock()).run("go")


@pytest.mark.parametrize("make", VALUES.values(), ids=VALUES.keys())
def test_the_model_gets_the_repr_as_a_json_string_and_the_run_goes_on(make):
    value = make()
    result = run_returning(value)
    assert (result.status, result.output) == ("ok", "done")
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    assert json.loads(content) == repr(value)
    (event,) = result.trace.of("tool.result", tool="produce")
    assert event.detail


def test_an_object_whose_repr_breaks_is_named_by_its_class():
    result = run_returning(NoRepr())
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    shown = json.loads(content)
    assert shown.startswith("<")
    assert "NoRepr object at" in shown


def test_what_json_holds_is_rendered_as_before():
    result = run_returning({"n": 1, "items": (1, 2), "tags": {"a"}, "obj": af})
    (content,) = [m.content for m in result.messages if m.role == "tool"]
    assert json.loads(content) == {"n": 1, "items": [1, 2], "tags": ["a"], "obj": repr(af)}


@af.tool
def blob(x: int) -> bytes:
    """Return raw bytes."""
    return b"\xff\xfe"


@af.tool
async def ablob(x: int) -> bytes:
    """Return raw bytes, asynchronously."""
    return b"\xff\xfe"


def test_invoke_returns_the_value_with_or_without_a_trace_collector():
    assert blob.invoke({"x": 1}) == b"\xff\xfe"  # the plain path
    with af.fault_scope() as scope:  # the pipeline, with events
        assert blob.invoke({"x": 1}) == b"\xff\xfe"
    assert scope.trace.count("tool.result", tool="blob") == 1


def test_ainvoke_returns_the_value():
    assert asyncio.run(ablob.ainvoke({"x": 1})) == b"\xff\xfe"
