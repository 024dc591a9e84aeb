"""The pytest plugin's hooks and fixtures, which `plugin` (the entry point) names.

Kept light: pytest imports it for every session, so the kit is imported inside hooks and
fixtures. State lives in ``config.stash`` and ``item.stash``.
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import pytest_agentfaults._plugin_unrewritten as _unrewritten
from pytest_agentfaults import _plugin_coverage as _coverage
from pytest_agentfaults import _plugin_end as _end
from pytest_agentfaults import _plugin_fixtures as _fixtures
from pytest_agentfaults import _plugin_network as _network
from pytest_agentfaults import _plugin_options as _options
from pytest_agentfaults import _plugin_paths as _paths
from pytest_agentfaults import _plugin_peers as _peers
from pytest_agentfaults import _plugin_scopes as _scopes
from pytest_agentfaults import _plugin_secrets as _secrets
from pytest_agentfaults import _plugin_totals as _totals
from pytest_agentfaults._plugin_adapters import adapters_header as _adapters_header
from pytest_agentfaults._plugin_names import warn_shadowed as _warn_shadowed
from pytest_agentfaults._plugin_report import (
    add_trace_section as _add_trace_section,
)
from pytest_agentfaults._plugin_report import (
    note_async_misuse as _note_async_misuse,
)
from pytest_agentfaults._plugin_report import (
    ship as _ship,
)
from pytest_agentfaults._plugin_state import (
    ITEM as _ITEM,
)
from pytest_agentfaults._plugin_state import (
    SESSION as _SESSION,
)
from pytest_agentfaults._plugin_state import (
    STATE as _STATE,
)
from pytest_agentfaults._plugin_state import (
    Session as _Session,
)
from pytest_agentfaults._plugin_state import (
    declares_kit as _declares_kit,
)
from pytest_agentfaults._plugin_state import (
    kit_marks as _kit_marks,
)
from pytest_agentfaults._plugin_state import (
    may_use_kit as _may_use_kit,
)
from pytest_agentfaults._plugin_state import (
    no_virtual_clock as _no_virtual_clock,
)
from pytest_agentfaults._plugin_state import (
    pend as _pend,
)
from pytest_agentfaults._plugin_state import (
    reports_as_kit as _reports_as_kit,
)
from pytest_agentfaults._plugin_state import (
    running_item as _running_item,
)
from pytest_agentfaults._plugin_state import (
    running_uses_kit as _running_uses_kit,
)
from pytest_agentfaults._plugin_state import (
    start_state as _start_state,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "_agentfaults_llm_server",
    "faults",
    "http_faults",
    "llm_server",
    "pytest_addoption",
    "pytest_configure",
    "pytest_fixture_setup",
    "pytest_make_collect_report",
    "pytest_report_collectionfinish",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "pytest_sessionstart",
    "pytest_terminal_summary",
    "scripted_model",
    "trace",
    "virtual_clock",
]

_state = _fixtures.state_of

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import VirtualClock
    from pytest_agentfaults.runtime.events import Trace
    from pytest_agentfaults.testing.faults import FaultPlan
    from pytest_agentfaults.testing.http import HttpFaultRouter
    from pytest_agentfaults.testing.scripted import ScriptedModel
    from pytest_agentfaults.testing.server import LLMServer
    from pytest_agentfaults.testing.steps import Step

# ---------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The command-line options and their ini twins (`_plugin_options`).

    Called as the plugin registers, before any conftest: the kit loaded from here on is
    not assert-rewritten (`_unrewritten.keep_the_kit_unrewritten`).
    """
    _options.add_options(parser)
    _unrewritten.keep_the_kit_unrewritten(pluginmanager)


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers and settle the session's settings."""
    config.addinivalue_line("markers", _options.INJECT_FAULT)
    config.addinivalue_line("markers", _options.REAL_TIME)
    config.addinivalue_line("markers", _network.ALLOW_NETWORK)
    config.stash[_network.MODE] = _network.network_mode(config)
    # not import_plugin(), which would mark it for assertion rewriting (`_unrewritten`);
    # by name, as it imports this module
    sdk = importlib.import_module("pytest_agentfaults._plugin_sdk")
    config.pluginmanager.register(sdk, "pytest_agentfaults._plugin_sdk")
    mode = config.getoption("agentfaults_trace") or config.getini("agentfaults_trace")
    if mode not in _options.TRACE_MODES:
        raise pytest.UsageError(
            f"agentfaults_trace = {mode!r}: use one of {', '.join(_options.TRACE_MODES)}"
        )
    trace_dir = config.getoption("agentfaults_trace_dir") or config.getini("agentfaults_trace_dir")
    html = config.getoption("agentfaults_html") or config.getini("agentfaults_html")
    if trace_dir:
        _paths.check_trace_dir(trace_dir, ini=not config.getoption("agentfaults_trace_dir"))
    if html:
        _paths.check_html_path(html, ini=not config.getoption("agentfaults_html"))
    config.stash[_SESSION] = _Session(
        seed=_session_seed(config),
        trace_mode=mode,
        trace_dir=Path(trace_dir) if trace_dir else None,
        update=bool(config.getoption("agentfaults_update_snapshots")),
        html=Path(html) if html else None,
    )
    config.stash[_SESSION].coverage = _coverage.settings(config)
    config.pluginmanager.register(_totals.SessionEnd(config.stash[_SESSION]))
    config.pluginmanager.register(_secrets.Boundary(config.stash[_SESSION], config))
    if _totals.counts_from_the_start(config):
        _totals.count_reports(config)  # else on the first report that carries counts
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistSeed())
        worker = getattr(config, "workerinput", None) is not None
        config.pluginmanager.register(_secrets.ShareLearned(config.stash[_SESSION], worker))


def _session_seed(config: pytest.Config) -> int:
    worker_input = getattr(config, "workerinput", None)
    if worker_input and "agentfaults_seed" in worker_input:
        return int(worker_input["agentfaults_seed"])  # the controller's seed, for xdist
    given = config.getoption("agentfaults_seed")
    if given is None:
        ini = str(config.getini("agentfaults_seed")).strip()
        if ini:
            try:
                given = int(ini)
            except ValueError:
                raise pytest.UsageError(f"agentfaults_seed = {ini!r}: give an integer") from None
    if given is None:
        given = random.SystemRandom().randrange(1 << 31)
    return int(given)


class _XdistSeed:
    """Hands the controller's seed to every xdist worker."""

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["agentfaults_seed"] = node.config.stash[_SESSION].seed


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """``agentfaults: seed=N``, after collection, and only when a test uses the kit.

    Printed here rather than in the header: only now are the tests known, and a session
    none of whose tests uses the kit prints nothing of it. Shown with ``-q`` too.
    """
    session = config.stash[_SESSION]
    if not any(_declares_kit(item) for item in items):
        return []
    session.seed_shown = True
    # and the frameworks whose tools tool= faults reach (issue 16), when one is installed
    adapters = _adapters_header()
    return [_totals.seed_line(session.seed), *([adapters] if adapters else [])]


# ---------------------------------------------------------------------------- per test


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Build the test's fault plan from its markers and switch it on, if the test may use it.

    A test that cannot reach the kit (see `_may_use_kit`) gets no state at all, so the
    plugin costs it next to nothing; a kit fixture it asks for later builds the state then.
    """
    __tracebackhide__ = True
    if _fixtures.ENDED in item.stash:  # a rerun (pytest-rerunfailures): a fresh attempt
        _end.forget_last_attempt(item)
    marks = _kit_marks(item)  # one walk up the tree for all our markers
    declared = _declares_kit(item, marks)
    may_use = declared
    if declared:
        _warn_shadowed(item)  # a suite's own fixture of a kit fixture's name: said
        state = _start_state(item, marks, declared)
        # the kit's fixtures it names, filled in here (`_plugin_fixtures`)
        _fixtures.fill_kit_fixtures(item, state, item.config.stash[_SESSION])
    elif _may_use_kit(item, marks, declared):
        may_use = True
        _pend(item, marks)  # its state is built on its first use of the runtime
    # The httpx guard is for tests that use the kit (a marker or a kit fixture), not for
    # every test once the runtime is loaded: an unrelated test keeps its network, whatever
    # ran before it (our own model clients refuse real hosts in every test regardless).
    _network.start_network(item, declared, allowed="allow_network" in marks)
    if may_use:  # unittest's cases and subtests (`_plugin_peers`)
        _peers.prepare(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """A safety net for a test whose teardown report was never made (KeyboardInterrupt, exit).

    The test's state is switched off with its teardown report (`_plugin_end.end_test`);
    what skips that is switched off here. And names the running test for the kit's
    fixtures (`_running_item`).
    """
    token = _ITEM.set(item)
    try:
        result = yield
    except BaseException as interrupted:
        for error in _end.switch_off(item):
            interrupted.add_note(f"pytest-agentfaults could not switch off: {error!r}")
        raise
    finally:
        _ITEM.reset(token)
    if _fixtures.ENDED not in item.stash:  # a protocol that made no teardown report
        errors = _end.switch_off(item)
        if errors:
            raise errors[0]
    return result


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, object, object]:
    """A fixture wider than the function runs on real time, without the test's guard.

    It belongs to no one test (`_plugin_scopes`); a function-scoped one is the test's own.
    """
    __tracebackhide__ = True
    if fixturedef.scope == "function":
        return (yield)
    return (yield from _scopes.around_wider_fixture(fixturedef))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Redact the report; attach the recovery trace, the counts and the trace file to it.

    And switch the test off before its teardown report is made (`_plugin_end.end_test`).
    """
    ending = call.when == "teardown"
    state = _end.end_test(item, call) if ending else None  # the test's state, if any
    if call.excinfo is not None:
        _note_async_misuse(call.excinfo.value)
    report = yield
    if (
        report.longrepr is not None
        or report.sections
        or report.user_properties
        or getattr(report, "wasxfail", None)  # an XPASS's reason
    ):
        # what the terminal, -rA and junit XML show of the test; under xdist, in the
        # worker that learned the keys, before the report is shipped (`_plugin_secrets`);
        # the rules that read context only for a test that uses the kit
        _secrets.scrub(report, item.config.stash[_SESSION].learned, _reports_as_kit(item, state))
    if ending and state is not None and _reports_as_kit(item, state):  # before junit's record
        _secrets.scrub_xml_attributes(item.config, report, item.config.stash[_SESSION].learned)
    stash = item.stash
    if not ending:
        if _STATE not in stash:  # (a `stash.get` that misses raises and catches a KeyError)
            # a guarded test without kit state (ini block); not a subtest's report
            if call.when == "call" and _peers.IN_CALL not in stash:
                _network.note_call(item, report)
            return report
        state = stash[_STATE]
    if state is None:
        return report
    session = item.config.stash[_SESSION]
    failed = report.outcome == "failed"
    if _peers.IN_CALL in stash:  # a subtest's report, made during the call: not the test's
        if failed:
            state.failed = True
            _add_trace_section(item, report, state, session, subtest=True)
        return report
    if failed or session.trace_mode == "always":  # else no section is wanted
        _add_trace_section(item, report, state, session)
    when = report.when
    if when != "teardown":
        if failed:
            state.failed = True
        elif when == "call" and report.outcome == "passed" and hasattr(report, "wasxfail"):
            _end.note_xpass(state, report)  # said in its XPASS line, not a teardown error
        elif when == "call" and report.outcome == "passed":
            state.passed = True
            if session.coverage is not None:  # while llm_server still serves the test
                item.stash[_coverage.SCRIPTED] = _coverage.scripted_bad_calls(item, state.plan)
        return report
    # Items live until the session ends: keeping every test's plan, trace and clock
    # alive would grow the heap, and with it the garbage collector's work, per test.
    del stash[_STATE]
    used = state.recorded() or state.declared
    if not used and session.trace_dir is None and session.html is None and session.coverage is None:
        # Nothing recorded, nothing declared, no file to write: nothing to ship (its
        # counts are all zero, and only a used test turns the summary on).
        return report
    _ship(item, report, state, session, used=used)
    if not session.counting:  # no `Totals` sees the reports: added here, once
        _totals.add_shipped(session, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Redact a collection error (an import that failed with a key in its message)."""
    report = yield
    # a collection error belongs to no test: every rule (its module may hold a key)
    _secrets.scrub(report, collector.config.stash[_SESSION].learned, kit=True)
    return report


def pytest_sessionstart(session: pytest.Session) -> None:
    """Redact the log lines pytest writes straight out (live logging, ``--log-file``).

    With the session's learned credentials (`LearnedSecrets`), made here: what the kit
    sees in requests is redacted by value in every report and file from then on. And set
    the session's network policy, which each test that does not use the kit names itself
    in (`_network.start_network`).
    """
    from pytest_agentfaults._redact import LearnedSecrets  # noqa: PLC0415 - the kit loads on first use

    _network.start_session(session.config)
    state = session.config.stash[_SESSION]
    state.learned = LearnedSecrets()
    state.learned.learn_environment(os.environ)  # before collection: parametrize ids
    # --setup-show (and --setup-plan) show each fixture's setup: no filling in then
    option = session.config.option
    state.direct_fixtures = not getattr(option, "setupshow", False)
    logging_plugin = session.config.pluginmanager.get_plugin("logging-plugin")
    if logging_plugin is not None:
        from pytest_agentfaults.testing._scrub import redact_log_output  # noqa: PLC0415 - the kit loads on first use

        redact_log_output(logging_plugin, state.learned, _running_uses_kit)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Unset the session's network policy (`pytest_sessionstart`)."""
    _network.stop_session(session.config)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Print the always-mode traces and the one-line agentfaults summary."""
    if getattr(config, "workerinput", None) is None:
        _totals.terminal_summary(terminalreporter, config.stash[_SESSION])


# ---------------------------------------------------------------------------- fixtures


# These four find their test through `_running_item`, not ``request`` (see there why).
@pytest.fixture
def faults() -> FaultPlan:
    """The test's `FaultPlan`: ``faults.tool("fetch").raises(ConnectionError()).times(2)``."""
    __tracebackhide__ = True
    return _state(_running_item("faults")).plan


@pytest.fixture(scope="session")
def trace() -> Trace:
    """One `Trace` holding every agent run (and HTTP attempt) of the test.

    Session-scoped: a view whose every read goes to the trace of the test running in the
    reader's context (`RunningTrace`). A test that names it gets it from the plugin's setup
    hook, without pytest's fixture machinery (`_plugin_fixtures`).
    """
    return _fixtures.trace_view(_running_item("trace").config.stash[_SESSION])


@pytest.fixture
def virtual_clock() -> VirtualClock:
    """The test's virtual clock: agents (``clock=None``) and the test's own sleeps wait on it."""
    __tracebackhide__ = True
    item = _running_item("virtual_clock")
    state = _state(item)
    if state.real_time:  # asked for late (request.getfixturevalue): else refused at setup
        _no_virtual_clock(item)
    return state.clock


@pytest.fixture
def scripted_model() -> Callable[..., ScriptedModel]:
    """A factory: ``scripted_model([say("hi")])`` is a `ScriptedModel`."""
    from pytest_agentfaults.testing.scripted import ScriptedModel  # noqa: PLC0415 - the kit loads on first use

    def make(steps: list[Step | str], **options: Any) -> ScriptedModel:
        return ScriptedModel(steps, **options)

    return make


@pytest.fixture
def http_faults() -> HttpFaultRouter:
    """A respx router that sees httpx AND httpx2 clients (the official SDKs use httpx2).

    ``http_faults.post(url).respond(200, json=...)``; the test's http faults apply first,
    and a request that matches no route raises an `AssertionError` unless it goes to
    loopback. Stopped with the test's fault plan; a route never requested then fails the
    test (opt out with ``http_faults.assert_all_called = False``).
    ``http_faults.script("openai", [call_tool(...), say("done")])`` answers a provider's
    endpoint with scripted steps in its wire format.
    """
    __tracebackhide__ = True
    return _state(_running_item("http_faults")).plan.http_layer().router


@pytest.fixture(scope="session")
def _agentfaults_llm_server() -> Generator[LLMServer, None, None]:
    """The session's loopback server, started on first use and stopped at the end."""
    from pytest_agentfaults.testing.server import LLMServer  # noqa: PLC0415 - the kit loads on first use

    server = LLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_server(
    request: pytest.FixtureRequest, _agentfaults_llm_server: LLMServer
) -> Generator[LLMServer, None, None]:
    """A real server on 127.0.0.1 speaking the OpenAI, Anthropic, Ollama and Gemini wires.

    Drive it with ``llm_server.script([...steps])``; point clients at
    ``llm_server.base_url("openai")`` (or ``.env()``). The test's http faults are served
    over its socket; ``llm_server.requests`` lists every request received. A request left
    without a script step, or a step left unused, fails a test whose call passed at
    teardown (a failed test shows its own outcome alone, as for every check of the kit).
    """
    __tracebackhide__ = True
    from pytest_agentfaults.testing._compose import check_llm_server_mocks  # noqa: PLC0415 - the kit loads on first use

    server = _agentfaults_llm_server
    markers = list(request.node.iter_markers("httpx_mock"))
    url = server.base_url("openai")
    check_llm_server_mocks(request.node.name, request.fixturenames, markers, url)
    state = _state(request.node)
    server.bind(state.plan)
    try:
        yield server
        if state.passed:  # set by the call's report, made before any teardown
            server.check()
    finally:
        server.reset()
