"""The session's totals and the end-of-session lines: counts, traces, the seed, coverage.

Light like ``plugin.py`` (the standard library and pytest only at module level); the kit's
modules load on the first report that carries something.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentfaults import _plugin_coverage as _coverage
from pytest_agentfaults._plugin_report import phase_of
from pytest_agentfaults._plugin_state import SESSION, Session

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "SessionEnd",
    "Totals",
    "add_shipped",
    "count_reports",
    "counts_from_the_start",
    "seed_line",
    "terminal_summary",
]


def seed_line(seed: int) -> str:
    """``agentfaults: seed=N``, with the option that replays the session."""
    return f"agentfaults: seed={seed} (reproduce with --agentfaults-seed={seed})"


def count_reports(config: pytest.Config) -> None:
    """Register the session's `Totals`, which sees every report (HTML, xdist controller).

    Other sessions register none: the plugin adds each test's counts as it ships them
    (`add_shipped`), so no test pays a hook call for each of its reports.
    """
    session = config.stash[SESSION]
    if session.counting:
        return
    session.counting = True
    config.pluginmanager.register(Totals(session, getattr(config, "workerinput", None) is not None))


def counts_from_the_start(config: pytest.Config) -> bool:
    """Whether `Totals` must see every report: HTML phases, or an xdist controller.

    The controller gets its workers' reports, shipped there, and never makes one itself.
    """
    session = config.stash[SESSION]
    if session.html is not None:
        return True
    worker = getattr(config, "workerinput", None) is not None
    return not worker and str(config.getoption("dist", "no") or "no") != "no"


class Totals:
    """Adds each test's counts to its own session's totals (xdist workers' reports too).

    An object per config rather than a module-level hook, so a pytest run inside a pytest
    run (pytester) keeps its totals apart. Registered by `count_reports`.
    """

    def __init__(self, session: Session, worker: bool = False) -> None:
        self.session = session
        self.worker = worker  # an xdist worker: it ships its reports, the controller writes

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.session.html is not None and not self.worker:
            self.session.phases.setdefault(report.nodeid, []).append(phase_of(report))
        if report.when == "teardown":  # only its teardown report carries a test's counts
            add_shipped(self.session, report)


def add_shipped(session: Session, report: pytest.TestReport) -> None:
    """Add what a teardown ``report`` carries of its test (`ship`) to the session's totals.

    Called for each teardown report by `Totals` where one is registered (an xdist
    controller gets its workers' reports so), else by the plugin as it ships a test.
    """
    # from the report's attributes: a `getattr` that misses makes and drops an
    # AttributeError, for every test of the session that shipped nothing
    shipped = report.__dict__.get("agentfaults")
    if shipped is None:
        return
    if session.totals is None:
        from pytest_agentfaults.testing.session import Counts  # noqa: PLC0415 - the kit loads on first use

        session.totals = Counts()
    session.totals.add(shipped["counts"])
    session.used = session.used or bool(shipped.get("used", True))
    if "render" in shipped:
        session.always.append((report.nodeid, shipped["render"]))
    if "html" in shipped:
        session.html_tests.append(shipped["html"])
    if "coverage" in shipped:
        _coverage.session_matrix(session).add(shipped["coverage"], report.nodeid, shipped["passed"])


class SessionEnd:
    """Writes the HTML report and the fault coverage at the session's end (per config)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if getattr(session.config, "workerinput", None) is not None:
            return  # workers ship their tests; the controller writes the report
        if self.session.html is not None:
            from pytest_agentfaults.testing.session import write_html_report  # noqa: PLC0415 - the kit loads on first use

            write_html_report(self.session.html, self.session.html_tests, self.session.phases)
        _coverage.finish(self.session, session)


def terminal_summary(terminalreporter: Any, session: Session) -> None:
    """The controller's end-of-session lines (the plugin calls it, never on a worker)."""
    if session.always:
        terminalreporter.section("recovery traces")
        for nodeid, text in session.always:
            terminalreporter.write_line(f"{nodeid}")
            for line in text.splitlines():
                terminalreporter.write_line(f"  {line}")
    if session.totals is not None and session.used:
        if not session.seed_shown:  # under xdist the controller collects nothing
            terminalreporter.write_line(seed_line(session.seed))
        terminalreporter.write_line(session.totals.summary())
    if session.html is not None:
        terminalreporter.write_line(f"agentfaults: HTML report written to {session.html}")
    if session.coverage is not None:
        _coverage.summary(terminalreporter, session)
