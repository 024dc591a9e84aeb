"""The one boundary where pytest's reports of tests are redacted, and when.

Every report is redacted as it is made (`scrub`), with what the session learned by then.
Three things can put a key in an output that this misses, and are handled here:

- under xdist, a key one worker learned is unknown to the others: each worker ships what
  it learned with its reports, and the controller redacts every report it receives by the
  union, before any other plugin sees it (`ShareLearned`);
- a key printed before the kit learned it: the outputs written at the session's end
  (``-rA``, the warnings summary, junit XML, pytest-html, our HTML report) are redacted
  again just before they are written, with all the session learned (`Boundary`);
- a warning holds a key: its stored text is redacted as it is recorded;
- a parameter holds a key: the test's id, in every report, would show it. A parameter of
  a known key shape gets a safe id instead (`Boundary.pytest_make_parametrize_id`); a
  learned key in an id is redacted from our own outputs, the files written at the end,
  and the lines pytest writes to the terminal once it is learned.

Light like ``plugin.py``: the kit's modules load only when there is something to redact.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.terminal import WarningReport

from pytest_agentfaults._plugin_state import Session

if TYPE_CHECKING:
    from pytest_agentfaults._redact import LearnedSecrets

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LEARNED_FIELD", "Boundary", "ShareLearned", "scrub"]

#: the key of a serialized report's data that carries a worker's learned values
LEARNED_FIELD = "agentfaults_learned"


def scrub(report: Any, learned: LearnedSecrets | None, kit: bool = False) -> None:
    """Redact what pytest shows of ``report``; nothing to do for most (no text in them).

    ``kit``: the report is of a test that uses the kit, as it is made: every rule. Else
    (a plain test's report; the controller's or the session end's pass for keys learned
    later) the learned values and the key shapes only, so a plain test reads as without
    the plugin.
    """
    properties = getattr(report, "user_properties", None)  # a CollectReport has none
    if (
        report.longrepr is None
        and not report.sections
        and not properties
        and not getattr(report, "wasxfail", None)  # an XPASS's reason
    ):
        return  # a passing test that printed nothing: no text to redact (most reports)
    from pytest_agentfaults.testing._scrub import scrub_report  # noqa: PLC0415 - the kit loads on first use

    scrub_report(report, learned, kit=kit)


def scrub_xml_attributes(
    config: pytest.Config, report: pytest.TestReport, learned: LearnedSecrets | None
) -> None:
    """Redact a kit test's junit XML attributes (``record_xml_attribute``) with every rule.

    Called as its teardown ``report`` is made: junit XML builds the test's record from
    them when that report is logged, and keeps no report to redact them from later. The
    test's reporter is junit's own, found by the report as junit finds it (it exists: the
    setup report was logged).
    """
    if not getattr(config.option, "xmlpath", None):  # no junit XML: most sessions
        return
    from _pytest.junitxml import xml_key  # noqa: PLC0415 - not loaded under -p no:junitxml

    xml = config.stash.get(xml_key, None)  # None under xdist's workers: the controller writes
    if xml is None:
        return
    reporter = xml.node_reporter(report)
    if getattr(reporter, "attrs", None):
        from pytest_agentfaults._redact import redact_value  # noqa: PLC0415 - the kit loads on first use

        reporter.attrs = redact_value(reporter.attrs, learned)


class ShareLearned:
    """Under xdist: workers ship what they learned; the controller redacts by the union.

    A worker adds its learned values to a report's serialized data when it learned
    something new since its last report. The controller takes them out of the data (so
    no report, and no file written from one, holds them) before the report is made,
    learns them, and redacts the report with everything learned so far.
    """

    def __init__(self, session: Session, worker: bool) -> None:
        self.session = session
        self.worker = worker
        self.shipped = 0  # how many values the worker has shipped

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, report: Any) -> Generator[None, Any, Any]:
        data = yield
        learned = self.session.learned
        if self.worker and learned and len(learned) != self.shipped and isinstance(data, dict):
            data[LEARNED_FIELD] = list(learned.values)
            self.shipped = len(learned)
        return data

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, data: Any) -> Generator[None, Any, Any]:
        values = data.pop(LEARNED_FIELD, None) if isinstance(data, dict) else None
        learned = self.session.learned
        if values and learned is not None:
            learned.learn(values)
        report = yield
        if learned and isinstance(report, pytest.TestReport | pytest.CollectReport):
            scrub(report, learned)
        return report


class Boundary:
    """Keeps keys out of test ids, warnings, and the stored reports at the session's end."""

    def __init__(self, session: Session, config: pytest.Config) -> None:
        self.session = session
        self.config = config
        self.warned = 0  # how many of the terminal's stored warnings are redacted
        self.writer: Any = None  # the terminal writer redacting learned keys, if any

    def pytest_make_parametrize_id(self, val: object, argname: str) -> str | None:
        """A parameter shaped like a key gets its argument's name as its id, not the key.

        A test id reaches every report, and pytest's own lines cannot be redacted without
        changing the id (which ``--lf`` and xdist go by). Known shapes and the environment's
        keys only (`LearnedSecrets.learn_environment`): the id must be the same in every
        xdist worker, whatever each learns from requests later. pytest numbers repeated
        ids (``key0``, ``key1``).
        """
        if isinstance(val, str) and len(val) >= 6:
            from pytest_agentfaults._redact import redact_shapes  # noqa: PLC0415 - the kit loads on first use

            # no rule reading context: a plain suite's `"token=abc"` keeps its id; the
            # learned values are the environment's keys (nothing else before collection)
            if redact_shapes(val, self.session.learned) != val:
                return argname
        return None

    @pytest.hookimpl(trylast=True)  # after plugin.py's made the session's learned values
    def pytest_sessionstart(self) -> None:
        """Redact the learned keys and the key shapes from every line written to the terminal.

        pytest writes a test's id itself (the ``-v`` line, ``FAILED test[...]`` in the
        short summary, an explicit ``ids=[...]``), and ``--setup-show`` a fixture's
        parameter, and no report carries them there to be redacted. A key learned before
        the line is written, or of a known shape (`redact_shapes`: no rule that reads
        context), is replaced in it; the id itself is not changed.
        """
        learned = self.session.learned
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if learned is None or terminal is None:
            return
        from pytest_agentfaults._redact import redact_shapes  # noqa: PLC0415 - the kit loads on first use

        writer = self.writer = terminal._tw  # noqa: SLF001 - what config.get_terminal_writer() gives
        write = writer.write

        def redacting_write(msg: str, **markup: bool) -> None:
            write(redact_shapes(msg, learned), **markup)

        writer.write = redacting_write
        # pytest 8 has no write_raw (its write does it all); pytest 9's progress line goes
        # through write_raw, not through write
        write_raw = getattr(writer, "write_raw", None)
        if write_raw is not None:

            def redacting_write_raw(msg: str, *, flush: bool = False) -> None:
                write_raw(redact_shapes(msg, learned), flush=flush)

            writer.write_raw = redacting_write_raw

    def pytest_unconfigure(self) -> None:
        """Give the terminal writer back its own methods (`pytest_sessionstart`)."""
        writer = self.writer
        if writer is not None:
            self.writer = None
            for name in ("write", "write_raw"):
                vars(writer).pop(name, None)

    @pytest.hookimpl(trylast=True)  # after the terminal reporter stored it
    def pytest_warning_recorded(self) -> None:
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        stored = terminal.stats.get("warnings", []) if terminal is not None else []
        if len(stored) > self.warned:
            from pytest_agentfaults.testing._scrub import scrub_report  # noqa: PLC0415 - the kit loads on first use

            for report in stored[self.warned :]:
                scrub_report(report, self.session.learned)
            self.warned = len(stored)

    @pytest.hookimpl(tryfirst=True)  # before the terminal summary and the files are written
    def pytest_sessionfinish(self) -> None:
        if getattr(self.config, "workerinput", None) is not None:
            return  # a worker's reports are shipped; the controller writes
        session = self.session
        if session.learned:  # else every report was redacted as it was made
            redact_stored(self.config, session.learned)
        if session.always or session.html_tests or session.phases or session.matrix:
            redact_ours(session, session.learned)


def redact_stored(config: pytest.Config, learned: LearnedSecrets) -> None:
    """Redact, with ``learned``, every report and record pytest's outputs still hold."""
    from _pytest.junitxml import xml_key  # noqa: PLC0415 - not loaded under -p no:junitxml

    from pytest_agentfaults._redact import redact_value  # noqa: PLC0415 - the kit loads on first use
    from pytest_agentfaults.testing._scrub import redact_xml, scrub_report  # noqa: PLC0415

    reports = (pytest.TestReport, pytest.CollectReport, WarningReport)
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:  # -rA, failures, errors, the warnings summary
        for stored in terminal.stats.values():
            for report in stored:
                if isinstance(report, reports):  # not the deselected items
                    # keys learned later: values and shapes only (a plain test's text stays)
                    scrub_report(report, learned, kit=isinstance(report, WarningReport))
                    _locate(report, learned)

    xml = config.stash.get(xml_key, None)
    if xml is not None:  # junit XML keeps each test's record as it comes
        for reporter in xml.node_reporters_ordered:
            if "nodes" not in reporter.__dict__:  # finalized: it keeps its built element
                redact_xml(reporter.to_xml(), learned)
                continue
            reporter.properties = redact_value(reporter.properties, learned, shapes=True)
            reporter.attrs = redact_value(reporter.attrs, learned, shapes=True)
            for node in reporter.nodes:
                redact_xml(node, learned)
        xml.global_properties = redact_value(xml.global_properties, learned, shapes=True)
    if "pytest_html" in sys.modules:  # pytest-html keeps each test's data as it comes
        for plugin in config.pluginmanager.get_plugins():
            data = getattr(getattr(plugin, "_report", None), "data", None)
            if isinstance(data, dict) and isinstance(data.get("tests"), dict):
                data["tests"] = _by_test(data["tests"], learned, shapes=True)  # by node id


def redact_ours(session: Session, learned: LearnedSecrets | None) -> None:
    """Redact what our session-end outputs hold: node ids hold a test's parameters too.

    An explicit ``ids=`` is used as written, known key shapes included (see `Boundary`).
    """
    from pytest_agentfaults._redact import redact_value  # noqa: PLC0415 - the kit loads on first use

    session.always[:] = redact_value(session.always, learned)
    if session.trace_dir is not None and learned:  # xdist: files a worker wrote unknowing
        from pytest_agentfaults.testing._scrub import redact_trace_files  # noqa: PLC0415 - the kit loads on first use

        redact_trace_files(session.trace_dir, learned)
    session.html_tests[:] = redact_value(session.html_tests, learned)
    session.phases = _by_test(session.phases, learned)
    if session.matrix is not None:
        for row in session.matrix.rows.values():
            for cell in row.cells.values():
                cell.tests = redact_value(cell.tests, learned)


def _locate(report: Any, learned: LearnedSecrets) -> None:
    """Redact the test name a report's header shows (its location, not its node id).

    A test's report holds its location; a collection report's is a read-only property
    made from its path, which names no test, and is left as it is.
    """
    location = vars(report).get("location")
    if location is not None and location[2]:
        from pytest_agentfaults._redact import redact_shapes  # noqa: PLC0415 - the kit loads on first use

        report.location = (location[0], location[1], redact_shapes(location[2], learned))


def _by_test(
    tests: dict[str, Any], learned: LearnedSecrets | None, *, shapes: bool = False
) -> dict[str, Any]:
    """``tests`` (by node id) redacted, its node ids too (``shapes``: see `redact_value`)."""
    from pytest_agentfaults._redact import redact_value  # noqa: PLC0415 - the kit loads on first use

    return {
        redact_value(nodeid, learned, shapes=shapes): redact_value(v, learned, shapes=shapes)
        for nodeid, v in tests.items()
    }
