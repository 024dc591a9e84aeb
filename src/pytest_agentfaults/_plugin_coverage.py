"""The plugin's fault coverage glue: options, settings, the session's matrix and outputs.

Light like ``plugin.py``: the standard library and pytest only; the matrix itself
(`testing._coverage`) loads when the first test reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentfaults._plugin_paths import check_coverage_path
from pytest_agentfaults._plugin_state import CoverageSettings, Session

if TYPE_CHECKING:
    from pytest_agentfaults.testing._coverage import Matrix
    from pytest_agentfaults.testing.faults import FaultPlan

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "SCRIPTED",
    "add_options",
    "finish",
    "scripted_bad_calls",
    "session_matrix",
    "settings",
    "summary",
]

#: The bad answers the test's scripts served (`scripted_bad_calls`).
SCRIPTED = pytest.StashKey[list[list[Any]]]()


def add_options(parser: pytest.Parser, group: Any) -> None:
    """``--agentfaults-coverage[=PATH]``, its gate, and their ini twins."""
    group.addoption(
        "--agentfaults-coverage",
        nargs="?",
        const="",
        default=None,
        metavar="PATH.json",
        help="report which fault classes each tool, model and host met in passing tests "
        "(a matrix at the end; with =PATH.json, also as JSON; the path must end in .json)",
    )
    group.addoption(
        "--agentfaults-coverage-fail-under",
        type=float,
        default=None,
        metavar="PCT",
        help="fail the session when fault coverage is below PCT percent of its cells",
    )
    parser.addini(
        "agentfaults_coverage",
        "default for --agentfaults-coverage: true, or the JSON path",
        default="",
    )
    parser.addini(
        "agentfaults_coverage_fail_under",
        "default for --agentfaults-coverage-fail-under",
        default="",
    )
    parser.addini(
        "agentfaults_coverage_exclude",
        "fault coverage cells that do not apply, one 'tool_or_host:fault_class' per line",
        type="linelist",
        default=[],
    )


def settings(config: pytest.Config) -> CoverageSettings | None:
    """The coverage settings of this session; None when coverage is off."""
    option = config.getoption("agentfaults_coverage")
    ini = str(config.getini("agentfaults_coverage")).strip()
    gate = config.getoption("agentfaults_coverage_fail_under")
    ini_gate = str(config.getini("agentfaults_coverage_fail_under")).strip()
    if option is None and ini.lower() in ("", "false", "0", "no") and gate is None:
        return None
    path = option if option is not None else ("" if ini.lower() in ("true", "1", "yes") else ini)
    if path:
        check_coverage_path(path, ini=option is None)
    if gate is None and ini_gate:
        try:
            gate = float(ini_gate)
        except ValueError:
            raise pytest.UsageError(
                f"agentfaults_coverage_fail_under = {ini_gate!r}: give a percentage, e.g. 80"
            ) from None
    if gate is not None and not 0 <= gate <= 100:
        raise pytest.UsageError(
            f"--agentfaults-coverage-fail-under={gate:g}: give a percentage from 0 to 100"
        )
    exclude = [str(line) for line in config.getini("agentfaults_coverage_exclude")]
    if exclude:
        from pytest_agentfaults.errors import UsageError  # noqa: PLC0415 - the kit loads on first use
        from pytest_agentfaults.testing._coverage import parse_exclusions  # noqa: PLC0415

        try:
            parse_exclusions(exclude)
        except UsageError as bad:
            raise pytest.UsageError(str(bad)) from None
    return CoverageSettings(Path(path) if path else None, gate, exclude)


def finish(state: Session, session: pytest.Session) -> None:
    """At the controller's session end: write the JSON and the HTML section; apply the gate."""
    settings = state.coverage
    if settings is None:
        return
    matrix = session_matrix(state)
    if settings.path is not None:
        matrix.write_json(settings.path)
    if state.html is not None:
        from pytest_agentfaults.testing._coverage import insert_into_html  # noqa: PLC0415 - the kit loads on first use

        anchors = {str(t.get("nodeid")): f"t{i}" for i, t in enumerate(state.html_tests)}
        insert_into_html(state.html, matrix.html_section(anchors))
    if _gate_failure(settings, matrix) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def scripted_bad_calls(item: pytest.Item, plan: FaultPlan | None) -> list[list[Any]]:
    """The bad answers the test's scripts have served so far, by the host that served them.

    ``[fault_class, [tool names], host]``: a ``malformed.tool_args(...)`` step is
    ``invalid_args`` of the tool it called, a ``malformed.unknown_tool(...)`` step
    ``unknown_tool`` of the tools the request offered, a ``malformed.empty()`` or
    ``malformed.blocked()`` step ``empty_or_blocked`` (no tool). A framework agent refuses
    a bad call before any tool runs, and pydantic-ai and LangChain record nothing of it;
    no client records an empty answer as a failure: the script is the only witness. The
    scripts are ``llm_server``'s and those of ``http_faults.script`` (``plan.scripts``),
    read at the end of the test's call, while the server still serves the test.
    """
    from pytest_agentfaults.testing._coverage_observe import LLM_SERVER  # noqa: PLC0415 - the kit loads on first use

    scripts: list[tuple[str, Any]] = list(plan.scripts) if plan is not None else []
    server = getattr(item, "funcargs", {}).get("llm_server")
    if server is not None:
        scripts.insert(0, (LLM_SERVER, server.scripted))
    return [call for host, model in scripts for call in _served(model, host)]


def _served(model: Any, host: str) -> list[list[Any]]:
    from pytest_agentfaults.errors import UsageError  # noqa: PLC0415 - the kit loads on first use
    from pytest_agentfaults.testing._malformed_steps import (  # noqa: PLC0415
        BadToolArgs,
        BlockedAnswer,
        EmptyAnswer,
        UnknownToolCall,
    )

    served = model.steps[: len(model.steps) - model.remaining]
    calls: list[list[Any]] = []
    for step, request in zip(served, model.requests, strict=False):
        if isinstance(step, BadToolArgs):
            try:
                calls.append(["invalid_args", [step.target(request)[0]], host])
            except UsageError:  # no tool offered: the step failed that request
                continue
        elif isinstance(step, UnknownToolCall):
            calls.append(["unknown_tool", [spec.name for spec in request.tools], host])
        elif isinstance(step, EmptyAnswer | BlockedAnswer):
            calls.append(["empty_or_blocked", [], host])
    return calls


def session_matrix(session: Session) -> Matrix:
    """The matrix of the session, built on first use."""
    if session.matrix is None:
        from pytest_agentfaults.testing._coverage import (  # noqa: PLC0415 - the kit loads on first use
            Matrix,
            parse_exclusions,
        )

        exclude = session.coverage.exclude if session.coverage is not None else []
        session.matrix = Matrix(parse_exclusions(exclude))
    return session.matrix


def summary(terminalreporter: Any, session: Session) -> None:
    """The terminal section: the table, the suggestions and the verdict of the gate."""
    settings = session.coverage
    assert settings is not None
    matrix = session_matrix(session)
    terminalreporter.section("agentfaults fault coverage")
    for line in matrix.render():
        terminalreporter.write_line(line)
    if settings.path is not None:
        terminalreporter.write_line(f"fault coverage written to {settings.path}")
    failure = _gate_failure(settings, matrix)
    if failure:
        terminalreporter.write_line(failure, red=True)


def _gate_failure(settings: CoverageSettings, matrix: Matrix) -> str:
    """Why the session fails ``--agentfaults-coverage-fail-under``, or "" if it passes.

    A session with no cell measured fails it: no test used the kit, and 0 of 0 cells is
    no coverage, not all of it (as coverage.py has no data to report).
    """
    gate = settings.fail_under
    if gate is None:
        return ""
    if not matrix.counts()[1]:
        return (
            "FAIL: no fault coverage was measured (0 cells: no test used the kit, or every cell "
            "is excluded); "
            f"--agentfaults-coverage-fail-under={gate:g}% needs tests that inject faults, or "
            "leave the gate off for this run"
        )
    if matrix.percent() < gate:
        return (
            f"FAIL: fault coverage {matrix.percent():.1f}% is below "
            f"--agentfaults-coverage-fail-under={gate:g}%"
        )
    return ""
