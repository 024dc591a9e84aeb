"""What the plugin adds to pytest's reports of a test.

The recovery trace section and its replay command, phase outcomes for the HTML report,
junit XML properties, and pytest-html extras.

Light like ``plugin.py`` (the standard library and pytest only at module level); loaded
by the hooks on first use.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_agentfaults._plugin_coverage import SCRIPTED
from pytest_agentfaults._plugin_state import Session

if TYPE_CHECKING:
    from pytest_agentfaults.testing.session import TestState

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "SHOWN",
    "TRACEBACK_LINES",
    "add_html_extras",
    "add_junit_properties",
    "add_to_pytest_reports",
    "add_trace_section",
    "note_async_misuse",
    "phase_of",
    "replay",
    "ship",
]

SHOWN = pytest.StashKey[bool]()  # the test's report has its recovery trace section

#: how much of a failure's traceback the HTML report keeps (its end: the crash site)
TRACEBACK_LINES = 40


def phase_of(report: pytest.TestReport) -> dict[str, Any]:
    """One phase (setup / call / teardown) of a test as the HTML report shows it.

    ``outcome`` is pytest's word for it: ``passed``, ``failed`` (the call), ``error`` (a
    failed setup or teardown), ``skipped``, ``xfailed`` or ``xpassed``; ``message`` the
    one-line reason, ``traceback`` the end of pytest's report of the failure.
    """
    wasxfail = getattr(report, "wasxfail", None)
    if report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif report.skipped:
        outcome = "xfailed" if wasxfail is not None else "skipped"
    else:
        outcome = "xpassed" if wasxfail is not None else "passed"
    message = ""
    traceback = ""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        message = str(longrepr[2]).removeprefix("Skipped: ")
    elif longrepr is not None:
        crash = getattr(longrepr, "reprcrash", None)
        text = report.longreprtext
        message = crash.message if crash is not None else (text.strip().splitlines() or [""])[-1]
        message = message.removeprefix("Failed: ")  # the kit's own checks fail with pytest.fail
        traceback = "\n".join(text.splitlines()[-TRACEBACK_LINES:])
    if wasxfail:
        message = f"{message} (xfail: {wasxfail})" if message else f"xfail: {wasxfail}"
    return {
        "when": report.when,
        "outcome": outcome,
        "message": message,
        "traceback": traceback,
        "duration": round(float(report.duration), 6),
    }


def add_junit_properties(report: pytest.TestReport, counts: dict[str, int], replay: str) -> None:
    """The test's counts as junit XML ``<property>`` items (``record_property`` style).

    Put on the teardown report, which is where pytest's junitxml reads them.
    """
    for name, value in counts.items():
        report.user_properties.append((f"agentfaults.{name}", value))
    report.user_properties.append(("agentfaults.replay", replay))


def add_html_extras(report: pytest.TestReport, content: str) -> None:
    """Add ``content`` (the trace and the timeline, as HTML) to pytest-html's report.

    The item is what ``pytest_html.extras.html(content)`` makes; built here so this
    module needs no import of pytest-html. pytest-html reads every phase's extras when
    the teardown report arrives (under xdist too: the list travels with the report).
    """
    extra = {
        "name": "agentfaults",
        "format_type": "html",
        "content": content,
        "mime_type": None,
        "extension": None,
    }
    report.extras = [*getattr(report, "extras", []), extra]  # type: ignore[attr-defined]


def add_to_pytest_reports(
    item: pytest.Item,
    report: pytest.TestReport,
    state: TestState,
    counts: dict[str, int],
    session: Session,
) -> None:
    """The counts as junit XML properties; the trace as a pytest-html extra.

    Each only when the session writes that report (``--junitxml``, ``--html``): installed
    is not enough, and building the timeline for every test costs more than the test.
    """
    option = item.config.option
    if getattr(option, "xmlpath", None):
        add_junit_properties(report, counts, replay(item, session))
    if getattr(option, "htmlpath", None) and state.trace.events:
        from pytest_agentfaults.testing._html_test import trace_extra  # noqa: PLC0415 - the kit loads on first use

        add_html_extras(report, trace_extra(state.shown_events(), item.nodeid))


def replay(item: pytest.Item, session: Session) -> str:
    """The command that runs ``item`` again with the same faults and the same waits.

    The session seed, not the test's own: each test's seed is derived from the session
    seed and the test id, so this reproduces it whatever else runs (or runs first).
    """
    return f"pytest --agentfaults-seed={session.seed}{_repeated(item)} {shlex.quote(item.nodeid)}"


def _repeated(item: pytest.Item) -> str:
    """pytest-repeat's ``--count``, without which a repetition's id (``[2-3]``) is not found.

    A repetition made by its ``repeat`` marker needs nothing: the marker makes it again.
    """
    callspec = getattr(item, "callspec", None)  # pytest-repeat parametrizes its fixture
    if callspec is None or "__pytest_repeat_step_number" not in callspec.params:
        return ""
    count = item.config.getoption("count", None)
    if not count or item.get_closest_marker("repeat") is not None:
        return ""
    return f" --count={count}"


def add_trace_section(
    item: pytest.Item,
    report: pytest.TestReport,
    state: TestState,
    session: Session,
    *,
    subtest: bool = False,
) -> None:
    """The "recovery trace" section, for a test that recorded something or uses the kit.

    On the call report (or a failed setup), and on a failed teardown (a strict check)
    when the test's report has none yet. It opens with the command that replays the test.
    A failed ``subtest``'s report gets the trace so far, and the test's own still gets it
    whole.
    """
    mode = session.trace_mode
    if mode == "never" or item.stash.get(SHOWN, False):
        return
    if report.when == "teardown":
        wanted = report.failed
    else:
        wanted = (report.when == "call" or report.failed) and (mode == "always" or report.failed)
    if wanted and (state.recorded() or state.declared):
        report.sections.append(("recovery trace", state.render(replay=replay(item, session))))
        if not subtest:
            item.stash[SHOWN] = True


def ship(
    item: pytest.Item, report: pytest.TestReport, state: TestState, session: Session, *, used: bool
) -> None:
    """Put what the controller needs of the test on its teardown report.

    On the teardown report, so it reaches the terminal summary and the HTML report from
    xdist workers too. ``used``: the test recorded something or declares the kit.
    """
    outcome = "failed" if state.failed else "passed"
    shipped: dict[str, Any] = {"counts": state.counted(), "used": used}
    if session.trace_dir is not None and session.kit is not None:
        text = state.to_json(outcome)
        session.kit.write_trace_file(session.trace_dir, item.nodeid, text, session.learned)
    if session.trace_mode == "always" and state.trace.events:
        shipped["render"] = state.render(replay=replay(item, session))
    if session.html is not None:
        shipped["html"] = state.as_dict(outcome)
        if used:
            shipped["html"]["replay"] = replay(item, session)
    if used:
        add_to_pytest_reports(item, report, state, shipped["counts"], session)
    if session.coverage is not None:
        from pytest_agentfaults.testing._coverage import observe  # noqa: PLC0415 - the kit loads on first use

        scripted: list[list[Any]] = item.stash.get(SCRIPTED, [])
        shipped["coverage"] = observe(state.trace.events, scripted)
        shipped["passed"] = state.passed and outcome == "passed" and report.passed
    report.agentfaults = shipped  # type: ignore[attr-defined]


_FORGOT_AWAIT: Final = (
    "agent.arun(...) returns a coroutine: write `result = await agent.arun(...)` in an "
    "async test, or call agent.run(...) in a sync one"
)


def note_async_misuse(error: BaseException) -> None:
    """Add the fix to an AttributeError read off an ``arun(...)`` nobody awaited.

    The coroutine is closed: the test fails with this note, not again with Python's
    "coroutine was never awaited" warning when it is collected.
    """
    if type(error) is not AttributeError:
        return
    coroutine = getattr(error, "obj", None)
    code = getattr(coroutine, "cr_code", None)
    if code is None or code.co_name != "arun" or "pytest_agentfaults" not in code.co_filename:
        return
    coroutine.close()  # type: ignore[union-attr]
    if _FORGOT_AWAIT not in getattr(error, "__notes__", ()):
        error.add_note(_FORGOT_AWAIT)
