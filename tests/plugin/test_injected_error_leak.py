"""An injected exception instance is raised afresh: its traceback never grows.

A marker's ``raises=ConnectionError("reset")`` is one object, shared by every test the
marker applies to. Raising the same instance again prepends the new frames to its old
traceback, so each test kept every earlier test's frames (runs, traces, agents) alive: the
heap, and the garbage collector's work per test, grew with the session.
"""

from __future__ import annotations

import pytest

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
