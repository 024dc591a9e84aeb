"""A test that may use the kit but does not say so gets its state on its first use.

Once the runtime is loaded (or its module imports the kit), an unmarked test may build an
agent, which then gets the test's virtual clock, seed and trace. The plugin builds those
when the test first uses the runtime, not at every such test's setup
(`pytest_agentfaults.runtime._pending`): these tests pin what the test gets all the same.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

AGENT = '''
import asyncio
import time

import pytest
import pytest_agentfaults as af

calls = []


@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    calls.append(url)
    if len(calls) % 3:  # two failures, then the page
        raise ConnectionError("reset")
    return "page"


def agent():
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
    return af.Agent("bot", model=model, tools=[fetch])
'''

SEEN = """
import pytest
from pytest_agentfaults._plugin_state import STATE

SEEN = []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    SEEN.append(("setup", item.name, STATE in item.stash))
    try:
        return (yield)
    finally:
        state = item.stash.get(STATE, None)
        runs = sorted({e.run_id for e in state.trace.events}) if state else None
        SEEN.append(("call", item.name, runs))


def pytest_unconfigure(config):
    for row in SEEN:
        print("SEEN", *row)
"""


def run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makeconftest(SEEN)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_first_use=AGENT + body)
    return pytester.runpytest_subprocess("-p", "no:randomly", "-s")


def test_an_unmarked_test_gets_its_state_at_its_first_agent_run(pytester):
    result = run(
        pytester,
        """
def test_idle():
    pass


def test_runs():
    start = time.perf_counter()
    assert agent().run("go").output == "ok"
    # its two backoff waits (about 1 s and 2 s) were virtual: on the test's clock, and
    # far from 2.25 s of real time (a bound a loaded machine cannot reach)
    from pytest_agentfaults.runtime.clock import default_clock

    assert default_clock().now() >= 1.5
    assert time.perf_counter() - start < 2.0


def test_fails_after_a_run():
    agent().run("go")
    raise AssertionError("see its recovery trace")
""",
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "SEEN setup test_idle False",
            "SEEN call test_idle None",  # never used the runtime: never any state
            "SEEN setup test_runs False",
            "SEEN call test_runs ['run-1']",
            "SEEN setup test_fails_after_a_run False",
            "SEEN call test_fails_after_a_run ['run-1']",  # its own numbering
        ]
    )
    # the failing test's report shows its run, as a test that says it uses the kit does
    result.stdout.fnmatch_lines(["*recovery trace*", "*tool.retry*fetch*"])
    result.stdout.fnmatch_lines(["agentfaults: 0 faults injected, 4 retries, *"])


def test_runs_started_in_copies_of_the_tests_context_share_its_state(pytester):
    # Both tasks copy the test's context before either run starts, so each switches the
    # test on in its own context: the same trace, clock and run numbering for both.
    result = run(
        pytester,
        """
async def build_and_run():
    return await agent().arun("go")


@pytest.mark.asyncio
async def test_gathered():
    # nothing of the kit is used before both tasks exist: each switches the test on
    start = time.perf_counter()
    first, second = await asyncio.gather(build_and_run(), build_and_run())
    assert first.output == second.output == "ok"
    assert time.perf_counter() - start < 2.0  # the backoff waits (>= 2.25 s) were virtual


@pytest.mark.asyncio
async def test_in_a_thread():
    result = await asyncio.to_thread(agent().run, "go")
    assert result.output == "ok"


def test_nothing_of_them_is_left():
    # read raw, not through the runtime (which would switch this test on)
    from pytest_agentfaults.runtime import _recorder, clock, hooks

    assert clock._default.get() is None
    assert hooks.active_interceptors() == ()
    assert _recorder._collecting.get() == ((), None)
""",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "SEEN call test_gathered ['run-1', 'run-2']",
            "SEEN call test_in_a_thread ['run-1']",
            "SEEN call test_nothing_of_them_is_left None",
        ]
    )


def test_a_block_the_test_enters_before_its_first_run_keeps_its_settings(pytester):
    # The test is switched on before the block changes its context, so the block's clock
    # and trace win inside it, and the test's trace still gets the run.
    result = run(
        pytester,
        """
def test_block():
    from pytest_agentfaults.runtime.clock import use_default_clock
    from pytest_agentfaults.runtime._recorder import collecting

    mine = af.VirtualClock()
    with use_default_clock(mine), collecting(af.Trace()) as kept:
        assert agent().run("go").output == "ok"
    assert mine.now() > 0  # the backoff waited on the block's clock
    assert kept.count("tool.retry") == 2
""",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["SEEN call test_block ['run-1']"])


def test_a_kit_fixture_asked_for_late_switches_the_test_on_once(pytester):
    # The late fixture switches the pending test on; its first run must not switch it on
    # a second time in the same context (its plan would then intercept twice).
    result = run(
        pytester,
        """
seen = []


@af.tool
def lookup(key: str) -> str:
    \"\"\"Look up a key.\"\"\"
    seen.append(key)
    return "value"


def test_late(request):
    from pytest_agentfaults.runtime import hooks

    faults = request.getfixturevalue("faults")
    faults.tool("lookup").raises(ConnectionError("injected")).times(1)
    model = af.ScriptedModel([af.call_tool("lookup", key="k"), af.say("ok")])
    assert af.Agent("bot", model=model, tools=[lookup]).run("go").output == "ok"
    assert len(faults.fired) == 1
    assert seen == ["k"]
    assert len(hooks.active_interceptors()) == 1  # the test's plan, switched on once
""",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["SEEN call test_late ['run-1']"])


def test_tool_invoke_as_the_first_use_waits_on_the_tests_clock(pytester):
    # `Tool.invoke` switches a pending test on before it reads the default clock: its
    # backoff waits on the test's virtual clock, and its attempts reach the test's trace.
    result = run(
        pytester,
        """
def test_invoke_first():
    from pytest_agentfaults.runtime.clock import default_clock

    start = time.perf_counter()
    assert fetch.invoke({"url": "x"}) == "page"  # two failures, then the page
    assert time.perf_counter() - start < 2.0  # its two backoff waits (>= 2.25 s) were virtual
    assert default_clock().now() >= 1.0  # on the test's clock
""",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["SEEN call test_invoke_first ['run-1']"])
