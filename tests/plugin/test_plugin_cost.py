"""What keeps the plugin's per-test cost low keeps its behaviour too (issue 15, item 7).

One walk finds our markers; the network policy is set once a session and switched per
test; a test's plan, clock and trace are freed when the test drops them, without waiting
for the garbage collector.
"""

from __future__ import annotations

import gc
import weakref

MARKS_AGREE = """
import pytest

pytestmark = pytest.mark.allow_network

def pytest_collection_modifyitems(items):
    pass

@pytest.mark.inject_fault(tool="t", raises=ValueError("x"), strict=False)
def test_function_marked():
    pass

@pytest.mark.real_time
class TestClass:
    def test_in_class(self):
        pass

    @pytest.mark.inject_fault(tool="t", raises=ValueError("x"), strict=False)
    def test_both(self):
        pass

@pytest.mark.parametrize("n", [1, pytest.param(2, marks=pytest.mark.real_time)])
def test_param(n):
    pass

def test_added_later():
    pass
"""

MARKS_CONFTEST = """
import pytest
from pytest_agentfaults._plugin_state import kit_marks

NAMES = ("inject_fault", "real_time", "allow_network")

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "test_added_later":
            item.add_marker(pytest.mark.real_time)
    for item in items:
        expected = {n for n in NAMES if item.get_closest_marker(n) is not None}
        assert kit_marks(item) == expected, (item.nodeid, kit_marks(item), expected)
        print("MARKS", item.name, sorted(expected))
"""


def test_one_walk_finds_the_same_markers_as_get_closest_marker(pytester):
    pytester.makeconftest(MARKS_CONFTEST)
    pytester.makepyfile(test_marks=MARKS_AGREE)
    result = pytester.runpytest("-p", "no:randomly", "-s", "--co", "-q")
    assert [line for line in result.stdout.lines if line.startswith("MARKS")] == [
        "MARKS test_function_marked ['allow_network', 'inject_fault']",
        "MARKS test_in_class ['allow_network', 'real_time']",
        "MARKS test_both ['allow_network', 'inject_fault', 'real_time']",
        "MARKS test_param[1] ['allow_network']",
        "MARKS test_param[2] ['allow_network', 'real_time']",
        "MARKS test_added_later ['allow_network', 'real_time']",
    ]
    assert result.ret == 0


POLICY_CONFTEST = """
import sys
import pytest

def policy():
    return sys.modules["pytest_agentfaults._network_policy"].CURRENT.get()

SEEN = []

def pytest_sessionfinish():
    SEEN.append(("between tests", policy().guarded))

def pytest_unconfigure(config):
    print("POLICY", SEEN, "after the session:", policy())
"""

POLICY_TESTS = """
import pytest
from conftest import policy, SEEN

def test_a():
    current = policy()
    assert current.test.endswith("::test_a") and not current.guarded
    SEEN.append("a")

@pytest.mark.allow_network
def test_b():
    assert policy().guarded  # stands aside: the test may reach the network
    SEEN.append("b")

def test_c():
    current = policy()
    assert current.test.endswith("::test_c") and not current.guarded
    SEEN.append("c")
"""


def test_the_network_policy_names_each_test_and_stands_aside_between_them(pytester):
    pytester.makeconftest(POLICY_CONFTEST)
    pytester.makepyfile(test_policy=POLICY_TESTS)
    # a process of its own: in this one the runtime is loaded, and every test uses the kit
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=3)
    assert (
        "POLICY ['a', 'b', 'c', ('between tests', True)] after the session: None"
        in result.stdout.lines
    )


def test_a_plan_is_freed_without_the_garbage_collector():
    from pytest_agentfaults.testing.faults import FaultPlan

    gc.disable()
    try:
        plan = FaultPlan(seed=1)
        plan.llm.rate_limit().times(1)  # the fluent API still works
        assert [f.kind for f in plan.faults] == ["rate_limit"]
        freed = weakref.ref(plan)
        del plan
        assert freed() is None
    finally:
        gc.enable()


def test_a_tests_state_is_freed_without_the_garbage_collector():
    from pytest_agentfaults.testing.faults import parse_marker
    from pytest_agentfaults.testing.session import TestState

    fault = parse_marker((), {"tool": "fetch", "raises": ValueError("x")}, label="inject_fault")
    gc.disable()
    try:
        state = TestState("t", seed=1, real_time=False)
        state.add_faults([fault.fresh()])
        state.start()
        state.use_virtual_time()
        assert state.stop() == []
        freed = [weakref.ref(x) for x in (state, state.plan)]
        del state
        assert [ref() for ref in freed] == [None, None]
    finally:
        gc.enable()


def test_a_finished_run_is_freed_without_the_garbage_collector():
    # A run with retries (its jitter stream in use) and its agent: what a fault-injected
    # test leaves behind is freed at once, not by the collector's passes, although the
    # injected exception (a marker's: one instance for every test it marks) lives on.
    import pytest_agentfaults as af
    from pytest_agentfaults.testing.faults import FaultPlan

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return "page"

    injected = ConnectionError("reset")
    gc.disable()
    try:
        plan = FaultPlan(seed=1)
        plan.tool("fetch").raises(injected).times(2)
        model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
        agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
        with plan.active():
            result = agent.run("go")
        assert result.usage.retries == 2
        assert len(plan.fired) == 2
        freed = weakref.ref(agent)  # every run holds its agent
        del agent, model, result
        assert freed() is None
    finally:
        gc.enable()


FIXTURES_IN_THREADS = """
import contextvars
import threading

import pytest

FIXTURES = ("faults", "trace", "virtual_clock", "http_faults")


def in_thread(work):
    done = []
    thread = threading.Thread(target=lambda: done.append(work()))
    thread.start()
    thread.join()
    return done[0]


@pytest.mark.parametrize("name", FIXTURES)
def test_asked_for_in_the_tests_context_from_a_thread(request, name):
    context = contextvars.copy_context()
    value = in_thread(lambda: context.run(request.getfixturevalue, name))
    assert value is request.getfixturevalue(name)


@pytest.mark.parametrize("name", FIXTURES)
def test_asked_for_from_a_thread_without_the_tests_context(request, name):
    def ask():
        try:
            value = request.getfixturevalue(name)
            if name == "trace":  # a session-wide view: it finds its test on each read
                len(value)
        except Exception as error:
            return error
        return None

    error = in_thread(ask)
    assert type(error).__name__ == "UsageError"
    assert f"the {name!r} fixture was used outside the test's context" in str(error)
    assert "contextvars.copy_context().run(...)" in str(error)
"""


def test_the_kits_fixtures_find_their_test_in_its_context(pytester):
    # They read the running test from a ContextVar, not from ``request`` (cheaper): the
    # test's own context reaches them, from a thread too; a thread without it gets an
    # error that says so and how to pass the context along.
    pytester.makepyfile(test_threads=FIXTURES_IN_THREADS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=8)


def test_the_running_test_is_named_for_its_protocol_only(pytester):
    pytester.makeconftest(
        """
from pytest_agentfaults._plugin_state import ITEM

SEEN = []

def pytest_sessionfinish():
    SEEN.append(ITEM.get())

def pytest_unconfigure(config):
    print("AFTER", SEEN)
"""
    )
    pytester.makepyfile(
        test_two="""
from conftest import ITEM, SEEN

def test_a(trace):
    SEEN.append(ITEM.get().name)

def test_b():
    SEEN.append(ITEM.get().name)
"""
    )
    # a process of its own: in this one, the outer test is the one running
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=2)
    assert "AFTER ['test_a', 'test_b', None]" in result.stdout.lines


TRACE_VIEW = '''
import pytest
import pytest_agentfaults as af

KEPT = []


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return "page"


def run():
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
    return af.Agent("bot", model=model, tools=[fetch]).run("go")


def test_first(trace):
    run()
    KEPT.append(trace)
    assert trace.count("run.end") == 1


def test_second(trace):
    assert trace is KEPT[0]  # one view a session...
    assert len(trace) == 0  # ...reading this test's events, not the first test's
    run()
    run()
    assert trace.count("run.end") == 2
    assert isinstance(trace, af.Trace)


def test_asked_for_late(request):
    run()
    trace = request.getfixturevalue("trace")
    assert trace.count("run.end") == 1
    run()
    assert trace.count("run.end") == 2


def test_read_after_the_test_ended_says_so():
    from conftest import AFTER_END

    assert len(AFTER_END) == 3  # one read after each earlier test's end
    assert all(type(error).__name__ == "UsageError" for error in AFTER_END)
    assert "the 'trace' fixture was read after" in str(AFTER_END[0])
    assert "test_first ended" in str(AFTER_END[0])
'''

READ_AFTER_END = """
import sys

AFTER_END = []


def pytest_runtest_logfinish(nodeid):
    # still inside the test's protocol, after its teardown
    kept = getattr(sys.modules.get("test_view"), "KEPT", [])
    if kept:
        try:
            len(kept[0])
        except Exception as error:
            AFTER_END.append(error)
"""


def test_the_trace_fixture_reads_the_running_tests_events(pytester):
    # Session-scoped (a function fixture's set-up costs each test ~150 Python calls): one
    # view, whose every read goes to the test running now, asked for late too; read after its test ended, it says so rather than switch the kit on again.
    pytester.makeconftest(READ_AFTER_END)
    pytester.makepyfile(test_view=TRACE_VIEW)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)


def test_the_trace_fixture_asked_for_late_switches_the_kit_on(pytester):
    # A module that never imports the kit, in a process where nothing loaded it: the test
    # gets no state until it reads the trace, which switches the kit on, virtual time too.
    pytester.makepyfile(
        test_late="""
import time


def test_late(request):
    trace = request.getfixturevalue("trace")
    assert len(trace) == 0
    start = time.perf_counter()
    time.sleep(5)  # virtual: were it real, the test would fail after 5 s, not hang
    assert time.perf_counter() - start < 2
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)


COUNTED_LATE = """
def test_unmarked_first():
    pass

def test_unmarked_second():
    pass

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_kit_after_them():
    assert make().run("go").output == "done"

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_kit_again():
    assert make().run("go").output == "done"

def test_unmarked_last():
    pass
"""

TOTALS_SEEN = """
from pytest_agentfaults._plugin_totals import Totals

SEEN = []

def pytest_runtest_logfinish(nodeid, location):
    plugins = pytest_runtest_logfinish.config.pluginmanager.get_plugins()
    SEEN.append((nodeid.rpartition("::")[2], sum(isinstance(p, Totals) for p in plugins)))

def pytest_configure(config):
    pytest_runtest_logfinish.config = config

def pytest_unconfigure(config):
    print("TOTALS", SEEN)
"""


def test_the_totals_count_every_kit_test_without_a_hook_on_every_report(suite):
    # No hook of ours sees the reports of a session without --agentfaults-html or xdist:
    # each test's counts are added as the plugin ships them, and every kit test counts.
    pytester = suite(COUNTED_LATE)
    pytester.makeconftest(TOTALS_SEEN)
    result = pytester.runpytest("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        ["agentfaults: 3 faults injected, 3 retries, 0 fixer calls, 0 escalations"]
    )
    assert (
        "TOTALS [('test_unmarked_first', 0), ('test_unmarked_second', 0), "
        "('test_kit_after_them', 0), ('test_kit_again', 0), ('test_unmarked_last', 0)]"
    ) in result.stdout.lines


def test_the_html_report_has_the_phases_of_tests_before_the_first_kit_test(suite, tmp_path):
    # the HTML report draws every test's phases: its totals see every report from the start
    pytester = suite(COUNTED_LATE)
    html = tmp_path / "report.html"
    result = pytester.runpytest("-p", "no:randomly", f"--agentfaults-html={html}")
    result.assert_outcomes(passed=5)
    text = html.read_text()
    for name in ("test_unmarked_first", "test_kit_after_them", "test_unmarked_last"):
        assert name in text
    result.stdout.fnmatch_lines(["agentfaults: 3 faults injected, *"])


def test_the_xdist_controller_counts_its_workers_tests(suite):
    # the controller makes no report of its own: its totals see the workers' from the start
    pytester = suite(COUNTED_LATE)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        ["agentfaults: 3 faults injected, 3 retries, 0 fixer calls, 0 escalations"]
    )


STATE_SEEN = """
import pytest
from pytest_agentfaults._plugin_state import PENDED, STATE

SEEN = []

@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):
    SEEN.append((item.name, STATE in item.stash, PENDED in item.stash))

def pytest_unconfigure(config):
    print("STATE", SEEN)
"""


def test_a_test_gets_state_when_its_module_holds_the_kit_asked_once_per_module(pytester):
    # A process of its own, where nothing loaded the runtime before: the first module's
    # unmarked tests get nothing; the second's, whose module imports the kit, get a switch
    # that builds their state on their first use of the runtime (each module's answer
    # found once, then reused for its second test). Neither builds state at setup.
    pytester.makeconftest(STATE_SEEN)
    pytester.makepyfile(
        test_a_plain="def test_a1():\n    pass\n\ndef test_a2():\n    pass\n",
        test_b_kit="import pytest_agentfaults as af\n\n"
        "def test_b1():\n    pass\n\ndef test_b2():\n    pass\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=4)
    assert (
        "STATE [('test_a1', False, False), ('test_a2', False, False), "
        "('test_b1', False, True), ('test_b2', False, True)]" in result.stdout.lines
    )


def test_a_tests_network_guard_is_freed_without_the_garbage_collector():
    # Every test that uses the kit starts one, socket.connect sealed: left to the collector,
    # each would wait for its passes, with the wrappers it patched in.
    from pytest_agentfaults.testing._network import NetworkGuard

    gc.disable()
    try:
        guard = NetworkGuard("t", sockets=True)
        guard.start()
        guard.stop()
        freed = weakref.ref(guard)
        del guard
        assert freed() is None
    finally:
        gc.enable()
