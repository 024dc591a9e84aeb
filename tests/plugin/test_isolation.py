"""Nothing the kit does in a test survives that test, whatever fails (pytester).

Each case runs an inner session of two tests: ``test_a`` switches on everything the kit
can patch (a tool fault, an HTTP fault, the ``http_faults`` router, ``llm_server``,
``virtual_clock.patch_sleep()``) and then fails in one way; ``test_z`` runs next, in the
same session, and proves that nothing of ``test_a`` is left: real sleeps, real sockets and
name lookups, unpatched httpx and httpx2 transports, no active respx router, no interceptor, no plan, no bound server.
"""

from __future__ import annotations

import pytest

# Loaded in the outer session: httpx2 caches httpcore2's exception classes on first use.
pytest.importorskip("httpcore2")
pytest.importorskip("httpx2")

SUITE = '''
import asyncio
import socket
import time

import anyio
import trio

import httpcore2
import httpx
import httpx2
import pytest
import respx.mocks

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

PATCHABLE = [
    (time, "sleep"),
    (asyncio, "sleep"),
    (anyio, "sleep"),
    (trio, "sleep"),
    (socket.socket, "connect"),
    *((socket.socket, name) for name in ("connect_ex", "sendto", "sendmsg")),
    *(
        (socket, name)
        for name in (
            "getaddrinfo",
            "gethostbyname",
            "gethostbyname_ex",
            "gethostbyaddr",
            "getnameinfo",
        )
    ),
    *((lib.HTTPTransport, "handle_request") for lib in (httpx, httpx2)),
    *((lib.AsyncHTTPTransport, "handle_async_request") for lib in (httpx, httpx2)),
    *((lib.Client, "_send_single_request") for lib in (httpx, httpx2)),
    *((lib.AsyncClient, "_send_single_request") for lib in (httpx, httpx2)),
]


def now():
    return {f"{owner!r}.{name}": getattr(owner, name) for owner, name in PATCHABLE}


REAL = now()
CALLS = []


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    CALLS.append(url)
    return "page"


def run_agent():
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    return af.Agent("bot", model=model, tools=[fetch]).run("go")


@pytest.fixture
def everything(request, llm_server, http_faults, virtual_clock, faults):
    """Switch on every patch the kit has."""
    virtual_clock.patch_sleep()
    http_faults.assert_all_called = False
    http_faults.get("https://api.example.com/x").respond(200)
    faults.http(url="https://api.example.com/x").status(503).times(9).strict(False)
    assert now() != REAL
    return llm_server


BODY


def test_z_nothing_leaked(_agentfaults_llm_server):
    leaked = [name for name, value in now().items() if value is not REAL[name]]
    assert leaked == []
    routers = {name: list(m.routers) for name, m in respx.mocks.Mocker.registry.items()}
    assert all(not r for r in routers.values()), routers
    CALLS.clear()
    result = run_agent()  # test_a's tool fault would hit this run if its plan had leaked
    assert (result.output, CALLS) == ("done", ["u"])
    assert _agentfaults_llm_server._binding.plan is None
    assert _agentfaults_llm_server.requests == []
'''

FAULT = '@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=9)'

# (case, body of test_a and its helpers, expected outcomes of the inner session)
CASES = {
    "the test passes": (
        f"""
{FAULT}
def test_a(everything):
    assert run_agent().status == "ok"
""",
        {"passed": 2},
    ),
    "the test raises": (
        f"""
{FAULT}
def test_a(everything):
    raise RuntimeError("the test failed")
""",
        {"passed": 1, "failed": 1},
    ),
    "setup raises": (
        f"""
@pytest.fixture
def broken(everything):
    raise RuntimeError("setup failed")

{FAULT}
def test_a(broken):
    pass
""",
        {"passed": 1, "errors": 1},
    ),
    "another fixture's teardown raises": (
        f"""
@pytest.fixture
def bad_teardown(everything):
    yield everything
    raise RuntimeError("teardown failed")

{FAULT}
def test_a(bad_teardown):
    run_agent()
""",
        {"passed": 2, "errors": 1},
    ),
    "the kit's own llm_server check raises": (
        f"""
{FAULT}
def test_a(everything):
    httpx.post(everything.base_url("openai") + "/chat/completions", json={{"messages": []}})
""",
        {"passed": 2, "errors": 1},
    ),
    "a strict fault never fired": (
        f"""
{FAULT}
@pytest.mark.inject_fault(tool="never_called", raises=ValueError("x"))
def test_a(everything):
    pass
""",
        {"passed": 2, "errors": 1},
    ),
    "pytest.skip in setup": (
        f"""
@pytest.fixture
def skipping(everything):
    pytest.skip("not today")

{FAULT}
def test_a(skipping):
    pass
""",
        {"passed": 1, "skipped": 1},
    ),
    "pytest.xfail in setup": (
        f"""
@pytest.fixture
def xfailing(everything):
    pytest.xfail("known")

{FAULT}
def test_a(xfailing):
    pass
""",
        {"passed": 1, "xfailed": 1},
    ),
    "the kit's check and a teardown both raise": (
        f"""
@pytest.fixture
def bad_teardown(everything):
    yield everything
    raise RuntimeError("teardown failed")

{FAULT}
@pytest.mark.inject_fault(tool="never_called", raises=ValueError("x"))
def test_a(bad_teardown):
    httpx.post(bad_teardown.base_url("openai") + "/chat/completions", json={{"messages": []}})
""",
        {"passed": 2, "errors": 1},
    ),
    "another fixture's teardown calls pytest.fail": (
        f"""
@pytest.fixture
def failing_teardown(everything):
    yield everything
    pytest.fail("teardown said no")

{FAULT}
def test_a(failing_teardown):
    run_agent()
""",
        {"passed": 2, "errors": 1},
    ),
    "the kit's unused-route report raises": (
        f"""
class BadRepr:
    def __eq__(self, other):
        return False

    def __hash__(self):
        return 0

    def __repr__(self):
        raise RuntimeError("repr failed")

{FAULT}
def test_a(everything, http_faults):
    http_faults.assert_all_called = True  # the report describes this unused route...
    http_faults.post("https://api.example.com/never", cookies={{"a": BadRepr()}})  # ...badly
""",
        {"passed": 2, "errors": 1},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_nothing_survives_the_test(pytester, case):
    body, outcomes = CASES[case]
    pytester.makepyfile(test_suite=SUITE.replace("BODY", body))
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    result.stdout.no_fnmatch_line("*test_z_nothing_leaked FAILED*")


def test_the_kits_check_and_a_teardown_error_are_both_reported(pytester):
    body, _ = CASES["the kit's check and a teardown both raise"]
    pytester.makepyfile(test_suite=SUITE.replace("BODY", body))
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*RuntimeError: teardown failed*"])
    result.stdout.fnmatch_lines(["*llm_server*has no step for call 1*"])
    result.stdout.fnmatch_lines(["*never_called*never fired*"])


# A leak check where pytest ends: after every finalizer, even of an interrupted session
LEAK_AT_THE_END = """
import socket, time, httpx, httpx2, respx.mocks, trio
REAL_SLEEP = time.sleep
NET = lambda: (socket.socket.connect, socket.socket.sendto, socket.getaddrinfo,
               socket.gethostbyname, socket.gethostbyaddr, trio.sleep)
REAL_NET = NET()
SEEN = []

def pytest_unconfigure(config):
    from pytest_agentfaults.runtime import hooks
    net = NET()
    SEEN.append(time.sleep is REAL_SLEEP and all(a is b for a, b in zip(net, REAL_NET)))
    SEEN.append(not any(m.routers for m in respx.mocks.Mocker.registry.values()))
    SEEN.append(hooks.active_interceptors() == ())
    print("LEAK CHECK", SEEN)
"""


def test_nothing_survives_a_keyboard_interrupt(pytester):
    # A KeyboardInterrupt ends the session at once: test_z never runs, so the leak check
    # runs where pytest ends, after every finalizer (pytest_unconfigure of a plugin).
    body = f"""
{FAULT}
def test_a(everything):
    raise KeyboardInterrupt
"""
    pytester.makepyfile(test_suite=SUITE.replace("BODY", body))
    pytester.makeconftest(LEAK_AT_THE_END)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*", "LEAK CHECK [[]True, True, True[]]"])


def test_a_step_that_fails_to_switch_off_does_not_stop_the_others():
    from pytest_agentfaults.runtime import hooks
    from pytest_agentfaults.runtime._pending import switch_on
    from pytest_agentfaults.runtime.clock import VirtualClock
    from pytest_agentfaults.testing.session import TestState

    class BrokenClock(VirtualClock):
        def unpatch_sleep(self) -> None:
            raise OSError("cannot restore")

    switch_on()  # this test's own state, switched on at its first use of the runtime
    outer = hooks.active_interceptors()
    state = TestState("t", seed=1, real_time=False)
    state.clock = BrokenClock()
    state.plan.tool("fetch").raises(ValueError("x"))
    state.start()
    assert len(hooks.active_interceptors()) == len(outer) + 1
    errors = state.stop()
    assert [str(e) for e in errors] == ["cannot restore"]
    assert hooks.active_interceptors() == outer  # the plan was switched off all the same
    assert [str(e) for e in state.stop()] == ["cannot restore"]  # and only once


def test_an_interrupt_while_switching_off_switches_the_rest_off_then_goes_on():
    from pytest_agentfaults.runtime import hooks
    from pytest_agentfaults.runtime._pending import switch_on
    from pytest_agentfaults.runtime.clock import VirtualClock, default_clock
    from pytest_agentfaults.testing.session import TestState

    class InterruptedClock(VirtualClock):
        def unpatch_sleep(self) -> None:
            super().unpatch_sleep()
            raise KeyboardInterrupt

    switch_on()  # this test's own state, switched on at its first use of the runtime
    outer, outer_clock = hooks.active_interceptors(), default_clock()
    state = TestState("t", seed=1, real_time=False)
    state.clock = InterruptedClock()
    state.plan.tool("fetch").raises(ValueError("x"))
    state.start()
    assert default_clock() is state.clock
    with pytest.raises(KeyboardInterrupt):
        state.stop()
    assert hooks.active_interceptors() == outer  # the plan, and the context, switched off
    assert default_clock() is outer_clock


def test_a_run_in_a_copy_of_the_tests_context_sees_its_faults(suite):
    result = suite(
        """
import contextvars
import threading

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_copied_context(trace, faults):
    context = contextvars.copy_context()
    worker = threading.Thread(target=lambda: context.run(make().run, "go"))
    worker.start()
    worker.join()
    assert trace.retries("fetch") == 1
    assert len(faults.fired) == 1

@pytest.mark.asyncio
async def test_to_thread(trace, faults):
    faults.tool("fetch").raises(ConnectionError("reset"))
    await asyncio.to_thread(make().run, "go")
    assert trace.retries("fetch") == 1
"""
    ).runpytest()
    result.assert_outcomes(passed=2)


PATCHED_UNDER_THE_KIT = """
import httpcore2
import httpx
import pytest

import pytest_agentfaults as af

ORIGINAL_POOL = httpcore2.ConnectionPool.__dict__["handle_request"]
import helpers_mod
ORIGINAL_FETCH = helpers_mod.fetch


def fake_pool(self, request):
    return httpcore2.Response(200, content=b"{}")


@pytest.fixture
def users_own_patches(monkeypatch):
    # the test's own patches, made before the kit patches over the same names
    monkeypatch.setattr(httpcore2.ConnectionPool, "handle_request", fake_pool)
    monkeypatch.setattr(helpers_mod, "fetch", lambda url: "the test's fake")


def test_a(users_own_patches, http_faults, faults):
    http_faults.get("https://api.example.test/").respond(200, json={})
    faults.function("helpers_mod:fetch").returns("the kit's fault")
    assert helpers_mod.fetch("x") == "the kit's fault"
    with httpx.Client() as client:
        client.get("https://api.example.test/")


def test_b_nothing_of_either_is_left():
    assert httpcore2.ConnectionPool.__dict__["handle_request"] is ORIGINAL_POOL
    assert helpers_mod.fetch is ORIGINAL_FETCH
"""


FUNCTION_FAULTS_ON_KIT_PATCHES = """
import time

import httpx
import pytest

REAL_SLEEP = time.sleep
REAL_SEND = httpx.Client._send_single_request


def test_a_function_fault_on_the_sleep_the_kit_patched(faults):
    faults.function("time:sleep").returns(None).times(1)
    time.sleep(100)  # patched by the fault above: returns at once, never sleeps


@pytest.mark.allow_network
@pytest.mark.inject_fault(http=503, strict=False)
@pytest.mark.inject_fault(
    function="httpx:Client._send_single_request", raises=ConnectionError("x"), strict=False
)
def test_b_a_function_fault_on_the_send_the_kit_patched():
    pass


def test_c_both_are_the_originals_again():
    assert time.sleep is REAL_SLEEP
    assert httpx.Client._send_single_request is REAL_SEND


@pytest.mark.inject_fault(http=503, times=1)
def test_d_a_later_test_records_each_request_once(http_faults, trace):
    http_faults.get("https://api.example.test/v").respond(200)
    statuses = [httpx.get("https://api.example.test/v").status_code for _ in range(2)]
    assert statuses == [503, 200]
    assert [e.type for e in trace.events] == ["http.fault", "http.request", "http.request"]
"""


def test_a_function_fault_over_a_kit_patch_is_undone_in_order(pytester):
    # The test's function faults patch over the kit's own sleep and send patches; the
    # kit undoes its patches last in, first out, so none of them is put back afterwards.
    pytester.makepyfile(test_order=FUNCTION_FAULTS_ON_KIT_PATCHES)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_a_patch_the_test_made_under_the_kits_is_undone_by_the_test_not_revived(pytester):
    # The kit switches off after the test's finalizers (so nothing of the kit survives a
    # failing one); its undo must then leave alone what the test's own undo put back,
    # rather than restore the test's patch it found when it patched over it.
    pytester.makepyfile(helpers_mod="def fetch(url):\n    return 'real'\n")
    pytester.makepyfile(test_order=PATCHED_UNDER_THE_KIT)
    pytester.syspathinsert()
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


# The kit switches a test off where its teardown report is made; what makes no such
# report still switches it off, in the plugin's protocol wrapper.
WITHOUT_REPORTS = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if item.name != "test_a":
        return None
    item.ihook.pytest_runtest_setup(item=item)  # setup, call and teardown, and no report
    item.ihook.pytest_runtest_call(item=item)
    item.ihook.pytest_runtest_teardown(item=item, nextitem=nextitem)
    return True
"""


def test_nothing_survives_a_protocol_that_makes_no_reports(pytester):
    body, _ = CASES["the test passes"]
    pytester.makepyfile(test_suite=SUITE.replace("BODY", body))
    pytester.makeconftest(WITHOUT_REPORTS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)  # test_z: test_a made no report
    result.stdout.no_fnmatch_line("*test_z_nothing_leaked FAILED*")


ENDING_TEARDOWNS = {
    "a KeyboardInterrupt in another fixture's teardown": "raise KeyboardInterrupt",
    "pytest.exit in another fixture's teardown": 'pytest.exit("stop here")',
}


@pytest.mark.parametrize("case", list(ENDING_TEARDOWNS))
def test_nothing_survives_a_teardown_that_ends_the_session(pytester, case):
    # pytest re-raises both before the teardown's report: the protocol wrapper switches
    # the test off, and the leak check runs where pytest ends (test_z never runs)
    body = f"""
@pytest.fixture
def ending(everything):
    yield everything
    {ENDING_TEARDOWNS[case]}

{FAULT}
def test_a(ending):
    run_agent()
"""
    pytester.makepyfile(test_suite=SUITE.replace("BODY", body))
    pytester.makeconftest(LEAK_AT_THE_END)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["LEAK CHECK [[]True, True, True[]]"])


# The same cases where trio is not imported when test_a switches the kit on: the kit waits
# for it with an import finder, and trio comes while test_a's fixtures set up (the network
# guard and respx import httpcore, which imports trio), so its sleep is replaced
# mid-setup. Neither the finder nor that replacement may survive the test. Each case in a
# fresh process with no plugin autoloaded (anyio's pytest plugin imports trio at start-up).
LATE_TRIO_SUITE = '''
import sys

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

AT_COLLECTION = "trio" in sys.modules
META_PATH = list(sys.meta_path)
CALLS = []


class LazyHttpx:  # httpx imports httpcore, which imports trio: only when a test calls it
    def __getattr__(self, name):
        import httpx

        return getattr(httpx, name)


httpx = LazyHttpx()


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    CALLS.append(url)
    return "page"


def run_agent():
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    return af.Agent("bot", model=model, tools=[fetch]).run("go")


@pytest.fixture
def everything(request, llm_server, http_faults, virtual_clock, faults):
    http_faults.assert_all_called = False
    http_faults.get("https://api.example.com/x").respond(200)
    faults.http(url="https://api.example.com/x").status(503).times(9).strict(False)
    assert not AT_COLLECTION
    assert "agentfaults" in (sys.modules["trio"].sleep.__doc__ or "")  # came late, replaced
    return llm_server


BODY


def test_z_nothing_leaked():
    assert sys.meta_path == META_PATH
    assert "agentfaults" not in (sys.modules["trio"].sleep.__doc__ or "")
    CALLS.clear()
    assert (run_agent().output, CALLS) == ("done", ["u"])
'''

LATE_TRIO_LEAK_AT_THE_END = """
import sys
META_PATH = list(sys.meta_path)

def pytest_unconfigure(config):
    trio = sys.modules["trio"]
    print("LEAK CHECK", [sys.meta_path == META_PATH, "agentfaults" not in trio.sleep.__doc__])
"""

NO_AUTOLOAD = ("-p", "pytest_agentfaults.plugin", "-p", "pytest_asyncio.plugin")


@pytest.mark.parametrize("case", list(CASES))
def test_nothing_survives_the_test_when_trio_comes_late(pytester, monkeypatch, case):
    body, outcomes = CASES[case]
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_suite=LATE_TRIO_SUITE.replace("BODY", body))
    result = pytester.runpytest_subprocess(*NO_AUTOLOAD, "-p", "no:cacheprovider")
    result.assert_outcomes(**outcomes)
    result.stdout.no_fnmatch_line("*test_z_nothing_leaked FAILED*")


def test_nothing_survives_a_keyboard_interrupt_when_trio_comes_late(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    body = f"""
{FAULT}
def test_a(everything):
    raise KeyboardInterrupt
"""
    pytester.makepyfile(test_suite=LATE_TRIO_SUITE.replace("BODY", body))
    pytester.makeconftest(LATE_TRIO_LEAK_AT_THE_END)
    result = pytester.runpytest_subprocess(*NO_AUTOLOAD, "-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*", "LEAK CHECK [[]True, True[]]"])
