"""`af.fault_scope()`: a fresh plan, trace and virtual clock per block (per example)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_agentfaults as af
from pytest_agentfaults.runtime.backoff import active_seed
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.testing import FaultScope, fault_scope

CALLS: list[str] = []


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    CALLS.append(url)
    return "page"


def make(calls: int = 1) -> af.Agent:
    """An agent on the default clock (clock=None) that calls fetch ``calls`` times."""
    steps = [af.call_tool("fetch", url=f"u{i}") for i in range(calls)]
    return af.Agent("bot", model=af.ScriptedModel([*steps, af.say("done")]), tools=[fetch])


@settings(
    max_examples=25,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(calls=st.integers(min_value=1, max_value=4))
def test_every_example_gets_a_fresh_kit(calls, faults, trace, virtual_clock):
    with af.fault_scope() as scope:
        scope.faults.tool("fetch").raises(ConnectionError("reset")).times(1)
        result = make(calls).run("go")
        assert result.output == "done"
        # Only this example's fault and events: a leaked plan would have fired (or held)
        # the faults of earlier examples, a leaked trace would hold their events.
        assert [(f.name, f.occurrence) for f in scope.faults.fired] == [("fetch", 1)]
        assert len(scope.trace) == len(result.trace) > 0
        assert scope.trace.count("tool.fault") == 1
        assert scope.trace.count("tool.call") == calls + 1  # one call retried
        assert scope.clock.sleeps == result.trace.delays() != []
    # The enclosing test saw none of it.
    assert (len(trace), faults.fired, virtual_clock.now()) == (0, [], 0.0)


class Boom(Exception):
    pass


def _run_in_a_scope(raises: bool, faults, trace, virtual_clock) -> af.FaultScope:
    with af.fault_scope() as scope:
        assert default_clock() is scope.clock is not virtual_clock
        assert make().run("go").output == "done"
        # The outer plan is suspended inside: its fault neither fires nor counts.
        assert scope.trace.count("tool.fault") == 0
        assert (len(trace), faults.fired, virtual_clock.now()) == (0, [], 0.0)
        if raises:
            raise Boom(scope)
    return scope


@pytest.mark.parametrize("raises", [False, True], ids=["block-ends", "block-raises"])
def test_the_enclosing_tests_plan_trace_and_clock_are_back_after_the_block(
    raises, faults, trace, virtual_clock
):
    faults.tool("fetch").raises(ConnectionError("outer")).times(1)
    assert default_clock() is virtual_clock
    if raises:
        with pytest.raises(Boom) as caught:
            _run_in_a_scope(raises, faults, trace, virtual_clock)
        scope = caught.value.args[0]
    else:
        scope = _run_in_a_scope(raises, faults, trace, virtual_clock)
    assert default_clock() is virtual_clock
    result = make().run("go")
    assert [f.name for f in faults.fired] == ["fetch"]  # fires now, on its first occurrence
    assert trace.count("tool.fault") == 1
    assert len(trace) == len(result.trace)
    assert virtual_clock.now() == sum(result.trace.delays()) > 0
    assert len(scope.trace) == 8  # the scope's trace kept its own run only


def test_a_plan_activated_inside_the_block_still_injects():
    outside = af.FaultPlan()
    outside.tool("fetch").raises(ConnectionError("drawn before")).times(1)
    with af.fault_scope() as scope, outside.active():
        make().run("go")
    assert [f.name for f in outside.fired] == ["fetch"]
    assert scope.trace.count("tool.fault") == 1


def test_scopes_nest_and_each_restores_the_one_around_it():
    with af.fault_scope() as outer:
        outer.faults.tool("fetch").raises(ConnectionError("outer")).times(1).strict(False)
        with af.fault_scope() as inner:
            make().run("go")
            assert default_clock() is inner.clock
        assert (outer.faults.fired, len(outer.trace)) == ([], 0)
        make().run("go")
        assert default_clock() is outer.clock
    assert [f.name for f in outer.faults.fired] == ["fetch"]


def test_the_seed_is_the_enclosing_tests_seed_or_the_one_given():
    tests_seed = active_seed()  # the plugin seeds every test's jitter
    assert tests_seed is not None
    with af.fault_scope() as first, af.fault_scope() as second:
        pass
    assert first.seed == second.seed == first.faults.seed == tests_seed
    with af.fault_scope(seed=42) as scope:
        assert scope.seed == scope.faults.seed == 42
        config = af.ResilienceConfig(max_retries=3)
        assert config.schedule() == config.schedule(seed=42)  # jitter drawn from the seed
    with pytest.raises(af.UsageError, match=r"fault_scope\(seed='x'\)"):
        af.fault_scope(seed="x")  # type: ignore[arg-type]


def _unfired_fault_in_a_scope(then_raise: bool) -> None:
    with af.fault_scope() as scope:
        scope.faults.tool("other").raises(ConnectionError())
        if then_raise:
            raise Boom


def test_a_strict_fault_that_never_fired_fails_the_block_but_never_hides_its_error(
    virtual_clock,
):
    with pytest.raises(AssertionError, match=r"af.fault_scope\(\): fault on tool 'other'"):
        _unfired_fault_in_a_scope(then_raise=False)
    with pytest.raises(Boom):
        _unfired_fault_in_a_scope(then_raise=True)
    assert default_clock() is virtual_clock  # and the scope is off again after both


def test_an_unfired_faults_message_gives_the_strict_advice_once(virtual_clock):
    with pytest.raises(AssertionError) as failed:
        _unfired_fault_in_a_scope(then_raise=False)
    message = str(failed.value)
    assert message.count(".strict(False)") == 1  # the plan's fix says it; the scope adds none
    assert message.count("strict") == 1


def test_the_scope_is_exported_where_the_api_says():
    assert af.fault_scope is fault_scope
    assert "fault_scope" in af.__all__
    with fault_scope() as scope:
        assert isinstance(scope, FaultScope)
        assert isinstance(scope.faults, af.FaultPlan)
        assert isinstance(scope.trace, af.Trace)
        assert isinstance(scope.clock, af.VirtualClock)


def test_it_works_outside_pytest():
    script = textwrap.dedent(
        """
        import json, sys
        import pytest_agentfaults as af

        @af.tool
        def fetch(url: str) -> str:
            '''Fetch.'''
            return "page"

        model = af.ScriptedModel([af.call_tool("fetch", url="u"), af.say("done")])
        agent = af.Agent("bot", model=model, tools=[fetch])
        with af.fault_scope() as scope:
            scope.faults.tool("fetch").raises(ConnectionError("reset")).times(1)
            result = agent.run("go")
        print(json.dumps({
            "seed": scope.seed,
            "fired": len(scope.faults.fired),
            "events": len(scope.trace),
            "slept": scope.clock.sleeps == result.trace.delays() != [],
            "pytest": "pytest" in sys.modules,
        }))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == {
        "seed": 0,
        "fired": 1,
        "events": 12,
        "slept": True,
        "pytest": False,
    }


def test_http_faults_in_the_block_are_the_scopes_and_the_tests_come_back(
    faults, http_faults, trace
):
    api = "https://api.example.com/v1/things"
    http_faults.get(api).respond(200, json={"ok": True})
    faults.http(url=api).status(500)
    with af.fault_scope() as scope:
        scope.faults.http(url=api).status(503)
        with httpx.Client() as client:
            statuses = [client.get(api).status_code for _ in range(2)]
    assert statuses == [503, 200]  # the scope's fault, then the test's route; not its 500
    assert [f.kind for f in scope.faults.fired] == ["503"]
    assert scope.trace.count("http.request") == 2
    assert len(trace) == 0
    with httpx.Client() as client:
        assert client.get(api).status_code == 500  # the test's own fault, after the block
    assert [f.kind for f in faults.fired] == ["500"]
