"""The paths the options write to, checked before the session runs anything.

``--agentfaults-coverage`` takes an optional value, so ``--agentfaults-coverage test_x.py``
makes the test path its value: the session ran the whole directory and wrote the JSON over
the test file. Each option that writes is refused (`pytest.UsageError`, naming what was
written and the fix) when its path could be someone else's file: a coverage path that does
not end in ``.json``, or any path naming an existing file that is not the option's own
report of an earlier run. Light like ``plugin.py``: the standard library and pytest only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["check_coverage_path", "check_html_path", "check_trace_dir"]

# What the start of an HTML report of ours holds (`testing.report.render_html`).
_HTML_MARK = "<title>pytest-agentfaults report</title>"
# The keys of a fault coverage report (`testing._coverage.Matrix.as_dict`).
_COVERAGE_KEYS = frozenset({"format", "columns", "rows", "total"})


def check_coverage_path(value: str, *, ini: bool) -> None:
    """Refuse a coverage JSON path that may be a test path or someone else's file."""
    __tracebackhide__ = True
    written = f"agentfaults_coverage = {value!r}" if ini else f"--agentfaults-coverage={value}"
    if not value.endswith(".json"):
        if ini:
            raise pytest.UsageError(
                f"{written}: give true, or the path of the JSON report, ending in .json "
                "(e.g. agentfaults_coverage = fault-coverage.json)"
            )
        raise pytest.UsageError(
            f"--agentfaults-coverage took {value!r} as its JSON path (written after the "
            "flag, the next argument becomes its value), so nothing ran. For a JSON "
            "report write --agentfaults-coverage=PATH.json; for the table alone, put "
            "--agentfaults-coverage after the test paths"
        )
    _refuse_foreign(
        value,
        written,
        "a fault coverage report",
        _is_coverage_report,
        "--agentfaults-coverage=fault-coverage.json",
    )


def check_html_path(value: str, *, ini: bool) -> None:
    """Refuse an HTML report path that names a file other than our own report."""
    __tracebackhide__ = True
    written = f"agentfaults_html = {value!r}" if ini else f"--agentfaults-html={value}"
    _refuse_foreign(
        value, written, "an HTML report", _is_html_report, "--agentfaults-html=agentfaults.html"
    )


def check_trace_dir(value: str, *, ini: bool) -> None:
    """Refuse a trace directory that is an existing file."""
    __tracebackhide__ = True
    path = Path(value)
    if path.exists() and not path.is_dir():
        written = (
            f"agentfaults_trace_dir = {value!r}" if ini else f"--agentfaults-trace-dir={value}"
        )
        raise pytest.UsageError(
            f"{written}: {value} is a file, not a directory; the traces go into a "
            "directory of their own, e.g. --agentfaults-trace-dir=agentfaults-traces"
        )


def _refuse_foreign(
    value: str, written: str, report: str, is_ours: Callable[[Path], bool], example: str
) -> None:
    """Refuse ``value`` when it names a directory, or a file that is not ``report`` of ours."""
    __tracebackhide__ = True
    path = Path(value)
    if path.is_dir() or (path.exists() and not is_ours(path)):
        raise pytest.UsageError(
            f"{written}: {value} exists and is not {report} of pytest-agentfaults; it is "
            f"never written over. Give a new path, e.g. {example}"
        )


def _is_coverage_report(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.keys() >= _COVERAGE_KEYS


def _is_html_report(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8") as file:
            start = file.read(512)
    except (OSError, UnicodeDecodeError):
        return False
    return start.startswith("<!DOCTYPE html>") and _HTML_MARK in start
