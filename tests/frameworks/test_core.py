"""`run_attempt` / `arun_attempt`: one attempt of another framework's tool, through the plan.

The adapters (pydantic-ai, LangChain, ...) build on these two; here they are driven the way
an adapter drives them, inside `af.fault_scope()` (a plan, a trace and a virtual clock).
"""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing._frameworks._core import Site, arun_attempt, run_attempt


class Native(Exception):
    """What a framework raises for a failed tool (pydantic-ai's ModelRetry, say)."""


def native(failure: af.ToolFailure) -> Any:
    raise Native(failure.error)


def test_without_a_plan_the_call_just_runs_and_nothing_records() -> None:
    trace = af.Trace()
    assert run_attempt("demo", "search", {"q": 1}, lambda: "hit", native) == "hit"
    assert trace.events == []


def test_raises_counts_each_attempt_as_the_runtime_does() -> None:
    calls: list[int] = []

    def search() -> str:
        calls.append(1)
        return "found"

    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError("reset")).times(2)
        outcomes = []
        for _ in range(3):  # the framework's own retries
            try:
                outcomes.append(run_attempt("demo", "search", {"q": "x"}, search, native))
            except ConnectionError as exc:
                outcomes.append(str(exc))
        trace = scope.trace
    assert outcomes == ["reset", "reset", "found"]
    assert calls == [1]
    assert trace.tool_attempts("search") == 3
    trace.assert_sequence(["tool.fault", "tool.fault", "tool.result"])
    assert [e.attempt for e in trace.of("tool.call")] == [1, 2, 3]
    assert {e.framework for e in trace.of("tool.*")} == {"demo"}
    assert [str(e.error) for e in trace.of("tool.error")] == ["ConnectionError: reset"] * 2
    assert [f.occurrence for f in scope.faults.fired] == [1, 2]
    # the attempts after a failure are the framework's retries, numbered in the streak
    assert trace.retries("search") == 2
    assert [e.attempt for e in trace.of("tool.retry")] == [2, 3]
    assert [e.error.type for e in trace.of("tool.retry")] == ["ConnectionError"] * 2
    trace.assert_sequence("tool.error", "tool.retry", "tool.call", "tool.error", "tool.retry")


def test_at_and_a_tool_failure_go_through_the_adapters_failure_function() -> None:
    with af.fault_scope() as scope:
        scope.faults.tool("search").returns(af.ToolFailure(error="quota")).at(2)
        first = run_attempt("demo", "search", None, lambda: "one", native)
        with pytest.raises(Native, match="quota"):
            run_attempt("demo", "search", None, lambda: "two", native)
    assert first == "one"
    scope.trace.assert_sequence("tool.call", "tool.result", "tool.call", "tool.fault", "tool.error")
    assert scope.trace.errors("search")[0].error.type == "ToolFailure"


def test_returns_a_value_in_place_of_the_tool() -> None:
    with af.fault_scope() as scope:
        scope.faults.tool("search").returns({"cached": True})
        result = run_attempt("demo", "search", None, lambda: pytest.fail("ran"), native)
    assert result == {"cached": True}
    assert scope.trace.of("tool.result")[0].detail == '{"cached": true}'


def test_delay_moves_the_virtual_clock_then_the_tool_runs() -> None:
    with af.fault_scope() as scope:
        scope.faults.tool("search").delay(30)
        assert run_attempt("demo", "search", None, lambda: "late", native) == "late"
        assert scope.clock.now() == 30
    assert [e.type for e in scope.trace] == ["tool.call", "tool.fault", "tool.result"]


def test_an_error_of_the_tool_itself_is_recorded_and_raised() -> None:
    def broken() -> str:
        raise ValueError("bad input")

    with af.fault_scope() as scope, pytest.raises(ValueError, match="bad input"):
        run_attempt("demo", "search", None, broken, native)
    assert scope.trace.errors("search")[0].error.type == "ValueError"


def test_another_tool_name_is_not_hit_and_the_strict_fault_names_what_was_watched() -> None:
    with pytest.raises(AssertionError) as caught, af.fault_scope() as scope:  # noqa: PT012
        scope.faults.tool("search").raises(ConnectionError())
        assert run_attempt("demo", "other", None, lambda: 1, native) == 1
    assert "fault on tool 'search' never fired" in str(caught.value)
    assert "the fault watches the tools of: af.Agent" in str(caught.value)


def test_a_nested_attempt_at_the_same_tool_is_the_same_attempt() -> None:
    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError("reset"))
        inner = lambda: run_attempt("demo", "search", None, lambda: "x", native)  # noqa: E731
        with pytest.raises(ConnectionError):
            run_attempt("demo", "search", None, inner, native)
        assert run_attempt("demo", "search", None, inner, native) == "x"
    assert scope.trace.tool_attempts("search") == 2


def test_async_attempts_count_and_record_the_same_way() -> None:
    async def search() -> str:
        await asyncio.sleep(0)
        return "found"

    async def main() -> list[str]:
        seen = []
        for _ in range(2):
            try:
                seen.append(await arun_attempt("demo", "search", {}, search, native))
            except TimeoutError:
                seen.append("timeout")
        return seen

    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(TimeoutError)
        assert asyncio.run(main()) == ["timeout", "found"]
    assert scope.trace.tool_attempts("search") == 2
    assert scope.trace.of("tool.error")[0].framework == "demo"


def test_our_runtime_tags_its_tool_events_agentfaults() -> None:
    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return "page"

    model = af.ScriptedModel([af.call_tool("fetch", url="u"), af.say("done")])
    with af.fault_scope() as scope:
        scope.faults.tool("fetch").raises(ConnectionError("reset"))
        af.Agent("bot", model=model, tools=[fetch]).run("go")
    tool_events = scope.trace.of("tool.*")
    assert {e.framework for e in tool_events} == {"agentfaults"}
    assert {e.type for e in tool_events} >= {"tool.call", "tool.fault", "tool.error", "tool.retry"}
    assert scope.trace.tool_attempts("fetch") == 2


def test_events_sit_on_the_tests_time_axis() -> None:
    with af.fault_scope() as scope:
        scope.clock.advance(5)
        run_attempt("demo", "search", None, lambda: "x", native)
        scope.faults.tool("search").delay(2)
        run_attempt("demo", "search", None, lambda: "x", native)
    assert [e.at for e in scope.trace.of("tool.call")] == [5, 5]
    assert scope.trace.of("tool.result")[-1].at == 7


def test_assert_sequence_takes_one_list_as_the_issue_writes_it() -> None:
    with af.fault_scope() as scope:
        run_attempt("demo", "search", None, lambda: "x", native)
    scope.trace.assert_sequence(["tool.call", "tool.result"])
    scope.trace.assert_sequence("tool.call", "tool.result")
    with pytest.raises(AssertionError, match="first missing: 'tool.fault'"):
        scope.trace.assert_sequence(["tool.fault"])
    with pytest.raises(af.UsageError, match="give labels such as"):
        scope.trace.assert_sequence([3])  # type: ignore[list-item]


def test_a_misspelt_fault_names_the_framework_tools_that_were_called() -> None:
    with pytest.raises(AssertionError, match="never fired") as failed, af.fault_scope() as scope:  # noqa: PT012
        scope.faults.tool("serach").raises(ConnectionError())
        run_attempt("demo", "search", None, lambda: "x", native)
        run_attempt("demo", "fetch", None, lambda: "x", native)
    # not "the agent never called a tool": it called two
    assert "the tools called were fetch, search" in str(failed.value)


def test_an_exception_instance_raised_again_carries_only_its_own_attempts_traceback() -> None:
    # raises=ModelRetry("busy") is one instance, raised at every faulted attempt; Python
    # adds each raise's frames to the ones it already holds, so the traceback a user reads
    # at the last attempt would run through every attempt before it.
    lengths = []
    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError("reset")).times(3)
        for _ in range(3):
            with pytest.raises(ConnectionError) as caught:
                run_attempt("demo", "search", None, lambda: "x", native)
            lengths.append(len(traceback.extract_tb(caught.value.__traceback__)))
    assert lengths[0] == lengths[1] == lengths[2]


def test_an_exception_instance_raised_again_carries_only_what_its_own_attempt_added() -> None:
    # One raises= instance serves every attempt (and every test under its marker). What
    # the code around a tool adds to the error it caught (a note, LangGraph's "During
    # task ..."; the error it was handling) must not show in the next attempt's error.
    declared = ConnectionError("reset")
    declared.add_note("declared with the fault")
    seen = []
    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(declared).times(3)
        for query in ("a", "b", "c"):
            handling: dict[str, str] = {}
            try:
                try:
                    handling[query]  # a KeyError, which the attempt is raised while handling
                except KeyError:
                    run_attempt("demo", "search", {"q": query}, lambda: "x", native)
            except ConnectionError as caught:
                caught.add_note(f"while searching for {query}")
                caught.__cause__ = RuntimeError(query)
                seen.append((list(caught.__notes__), caught.__context__, caught.__cause__))
    assert [notes for notes, _, _ in seen] == [
        ["declared with the fault", f"while searching for {query}"] for query in "abc"
    ]
    assert [context.args for _, context, _ in seen] == [("a",), ("b",), ("c",)]
    assert [cause.args for _, _, cause in seen] == [("a",), ("b",), ("c",)]
    assert declared.__notes__[0] == "declared with the fault"


def test_with_nothing_known_of_the_call_its_arguments_tell_a_retry() -> None:
    # A framework that passes no Site: an attempt after a failure is its retry only when
    # it is the same call, told by the arguments; another call is attempt 1 of its own.
    def search() -> str:
        return "found"

    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError("reset")).at(1)
        for query in ("x", "y", "x"):
            try:
                run_attempt("demo", "search", {"q": query}, search, native)
            except ConnectionError:
                pass
        trace = scope.trace
    assert [e.attempt for e in trace.of("tool.call")] == [1, 1, 2]
    assert [e.detail for e in trace.of("tool.retry")] == [None]
    assert trace.retries("search") == 1


def test_a_known_call_id_or_turn_is_not_narrowed_by_arguments() -> None:
    # pydantic-ai and the Agents SDK pass the model turn: a later turn's call after a
    # failure is its retry even when the model changed the arguments (it fixed them)
    def search() -> str:
        return "found"

    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ValueError("bad query")).at(1)
        with pytest.raises(ValueError, match="bad query"):
            run_attempt("demo", "search", {"q": "x"}, search, native, Site("run", 1, "c1"))
        run_attempt("demo", "search", {"q": "fixed"}, search, native, Site("run", 2, "c2"))
        trace = scope.trace
    assert [e.attempt for e in trace.of("tool.call")] == [1, 2]
    assert trace.retries("search") == 1
