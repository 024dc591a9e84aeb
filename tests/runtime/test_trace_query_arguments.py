"""Trace questions refuse what they cannot answer, instead of answering 0 or [] (tester's
report A): an unknown event type or field, no labels, and a tool given as its `af.Tool`."""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.events import Event, Trace


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


@pytest.fixture
def trace() -> Trace:
    """One retried call of `fetch` (the first attempt fails)."""
    plan = af.FaultPlan(seed=1)
    plan.tool("fetch").raises(ConnectionError("reset"))
    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="u"), say("done")]),
        tools=[fetch],
        clock=af.VirtualClock(),
    )
    with plan.active():
        return agent.run("go").trace


def test_a_tool_object_is_taken_as_its_name_everywhere(trace):
    assert trace.retries(fetch) == trace.retries("fetch") == 1
    assert trace.tool_attempts(fetch) == 2
    assert trace.delays(fetch) == trace.delays("fetch") != []
    assert trace.errors(fetch) == trace.errors("fetch") != []
    assert trace.fixer_calls(fetch) == []
    assert trace.escalations(fetch) == []
    assert trace.of("tool.retry", tool=fetch) == trace.of("tool.retry", tool="fetch") != []
    assert trace.count("tool.call", tool=fetch) == 2


@pytest.mark.parametrize(
    "ask",
    [
        lambda t: t.retries(3),
        lambda t: t.tool_attempts(["fetch"]),
        lambda t: t.delays(object()),
        lambda t: t.errors(b"fetch"),
    ],
)
def test_a_tool_that_is_neither_a_name_nor_a_tool_is_refused(trace, ask):
    with pytest.raises(UsageError, match="a tool name .* or an @af.tool"):
        ask(trace)


def test_an_unknown_event_type_is_refused_with_the_closest_known_one(trace):
    with pytest.raises(UsageError, match=r"'tool\.retyr'.*did you mean 'tool\.retry'"):
        trace.count("tool.retyr")
    with pytest.raises(UsageError, match=r"'tool\.erorr'.*tool\.error"):
        trace.of("tool.erorr")


def test_an_unknown_type_without_a_close_one_lists_the_known_types(trace):
    with pytest.raises(UsageError, match=r"the event types are run\.start, llm\.request"):
        trace.count("nonsense")


def test_a_glob_that_matches_no_known_type_is_refused(trace):
    assert trace.of("tool.*") != []
    with pytest.raises(UsageError, match=r"'tol\.\*' matches no event type"):
        trace.of("tol.*")


def test_a_type_present_in_the_trace_is_known_even_if_not_the_kit_s(trace):
    own = Trace([Event(type="app.checkpoint")])
    assert own.count("app.checkpoint") == 1
    assert own.of("app.*") == own.events


def test_an_unknown_field_is_refused_listing_the_fields(trace):
    with pytest.raises(UsageError, match=r"tol='fetch'.*did you mean tool=.*the fields are"):
        trace.of("tool.retry", tol="fetch")
    with pytest.raises(UsageError, match="atempt="):
        trace.count("tool.call", atempt=2)


def test_extra_fields_the_kit_records_and_fields_in_the_trace_are_known(trace):
    assert trace.of("http.request", client="openai") == []  # a kit extra, none recorded here
    assert trace.of("tool.error", ambiguous=True) == []
    mine = Trace([Event(type="tool.call", tool="t", shard=3)])
    assert mine.count("tool.call", shard=3) == 1


def test_assert_sequence_without_labels_is_refused(trace):
    with pytest.raises(UsageError, match="no labels"):
        trace.assert_sequence()
    with pytest.raises(UsageError, match="no labels"):
        trace.assert_sequence([])


def test_assert_sequence_refuses_an_unknown_type_in_a_label(trace):
    with pytest.raises(UsageError, match=r"'tool\.retyr:fetch'.*did you mean 'tool\.retry'"):
        trace.assert_sequence("tool.fault:fetch", "tool.retyr:fetch")


def test_assert_sequence_names_the_tools_when_a_label_s_tool_never_appears(trace):
    with pytest.raises(
        AssertionError, match=r"no event of tool 'fetchh'.*tools in the trace: fetch"
    ):
        trace.assert_sequence("tool.fault:fetch", "tool.retry:fetchh")


def test_the_usual_questions_still_answer(trace):
    assert trace.count("tool.retry") == 1
    assert trace.count(None) == len(trace)
    trace.assert_sequence("tool.fault:fetch", "tool.retry:fetch", "tool.result:fetch")
    trace.assert_sequence(["tool.error", "tool.retry"])


# ------------------------------------------------------------ a tool name no agent had


@af.tool
def search(query: str) -> str:
    """Search."""
    return "found"


def _two_tools_one_called() -> Trace:
    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="u"), say("done")]),
        tools=[fetch, search],
    )
    return agent.run("go").trace


@pytest.mark.parametrize(
    ("question", "where"),
    [
        (lambda t: t.retries("fethc"), "retries"),
        (lambda t: t.tool_attempts("fethc"), "tool_attempts"),
        (lambda t: t.fixer_calls("fethc"), "fixer_calls"),
        (lambda t: t.escalations("fethc"), "escalations"),
        (lambda t: t.delays("fethc"), "delays"),
        (lambda t: t.errors("fethc"), "errors"),
        (lambda t: t.count("tool.retry", tool="fethc"), "count"),
        (lambda t: t.of("tool.call", tool="fethc"), "of"),
    ],
)
def test_a_tool_name_no_agent_of_the_trace_had_is_refused(question, where):
    with pytest.raises(UsageError) as raised:
        question(_two_tools_one_called())
    assert str(raised.value) == (
        f"trace.{where}(tool='fethc'): no agent of this trace has a tool 'fethc'; "
        "did you mean 'fetch'? (their tools: fetch, search)"
    )


def test_a_tool_the_agent_has_but_never_called_counts_zero():
    trace = _two_tools_one_called()
    assert trace.retries("search") == 0
    assert trace.tool_attempts("search") == 0
    assert trace.count("tool.call", tool="search") == 0
    assert trace.tool_attempts("fetch") == 1


def test_a_trace_that_knows_no_agent_answers_any_name():
    # a trace read back from JSON or built by hand: the agents' tools are not in it
    assert Trace.from_json(_two_tools_one_called().to_json()).retries("anything") == 0
    assert Trace().retries("fethc") == 0
