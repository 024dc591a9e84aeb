"""An injected exception instance is raised afresh: its traceback never grows, its notes neither.

A marker's ``raises=ConnectionError("reset")`` is one object, shared by every test the
marker applies to. Raising the same instance again prepends the new frames to its old
traceback, so each test kept every earlier test's frames (runs, traces, agents) alive: the
heap, and the garbage collector's work per test, grew with the session.
"""

from __future__ import annotations

import pytest

import pytest_agentfaults as af

SUITE = '''
import sys

import pytest
import pytest_agentfaults as af

ERROR = ConnectionError("reset")
DEPTHS = []


@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    return "page"


def depth(tb):
    n = 0
    while tb is not None:
        n, tb = n + 1, tb.tb_next
    return n


@pytest.mark.parametrize("n", range(4))
@pytest.mark.inject_fault(tool="fetch", raises=ERROR, times=2)
def test_faulted(n, trace):
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
    agent = af.Agent("bot", model=model, tools=[fetch])
    assert agent.run("go").output == "ok"
    assert trace.count("tool.retry") == 2
    DEPTHS.append(depth(ERROR.__traceback__))


def test_the_traceback_did_not_grow():
    assert len(DEPTHS) == 4
    assert len(set(DEPTHS)) == 1, DEPTHS
'''


def test_a_shared_injected_error_keeps_only_its_last_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_shared_error=SUITE)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=5)


def test_what_a_run_added_to_a_shared_injected_error_is_not_in_the_next_runs() -> None:
    # The same instance again: a note the app added to the error it caught in one run
    # (or one test under the marker) must not show in the next one's, and the error is
    # still the very instance the test declared.
    error = ConnectionError("reset")

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return "page"

    notes = []
    with af.fault_scope() as scope:
        scope.faults.tool("fetch").raises(error).times(2)
        for run in ("first", "second"):
            model = af.ScriptedModel([af.call_tool("fetch", url="u")])
            agent = af.Agent(
                "bot",
                model=model,
                tools=[fetch],
                tool_defaults=af.OnError(execution=af.raise_error()),
            )
            with pytest.raises(ConnectionError) as caught:
                agent.run("x")
            assert caught.value is error
            caught.value.add_note(f"the {run} run")
            notes.append(list(caught.value.__notes__))
    assert notes == [["the first run"], ["the second run"]]
