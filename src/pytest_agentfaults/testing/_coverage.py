"""Fault coverage, the session: the matrix of rows by fault class, and its outputs.

A cell counts as covered when at least one test in which that fault fired passed (see
`_coverage_observe.observe` for what a test contributes). Outputs: the terminal table, a
JSON file for CI, a section of the HTML report, and the marker that would cover each of
the first uncovered cells.
"""

from __future__ import annotations

import fnmatch
import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._coverage_observe import (
    INJECTED,
    KIT,
    LLM_SERVER,
    MODEL_CLASSES,
    TOOL_CLASSES,
    classes_of,
    observe,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Matrix", "insert_into_html", "observe", "parse_exclusions", "suggest"]

_KINDS: Final = ("tool", "model", "host")
# How to cover a cell: the marker a suggestion prints, by row kind and class.
_TOOL_MARKERS: Final = {
    "retryable": 'tool="{name}", raises=ConnectionError("reset")',
    "non_retryable": 'tool="{name}", raises=ValueError("bad input")',
    "timeout": 'tool="{name}", delay=90',
    # name=: without it the call goes to the first tool on offer, maybe another one
    "invalid_args": 'llm="malformed_tool_args", name="{name}"',
    "tool_failure": 'tool="{name}", returns=af.ToolFailure(error="not found")',
    "unknown_tool": 'llm="unknown_tool"',
}
# A tool of another framework: its timeouts run on real clocks, so a virtual delay= never
# times it out, and its agent's model calls never meet llm= faults; the model's bad calls
# come from llm_server's script instead (counted by `observe`'s ``scripted``).
_FRAMEWORK_TOOL: Final = {
    "timeout": '@pytest.mark.inject_fault(tool="{name}", raises=TimeoutError("injected"))',
    "invalid_args": "llm_server.script([malformed.tool_args('{{\"not_an_argument\": 1}}', "
    'tool="{name}"), call_tool("{name}", ...), ...]) '
    "(llm= faults reach af.Agent's model only)",
    "unknown_tool": 'llm_server.script([malformed.unknown_tool(), call_tool("{name}", ...), '
    "...]) (llm= faults reach af.Agent's model only)",
}
# Cells of a framework's tool that nothing of the kit can cover, and why.
_UNREACHABLE: Final = {
    ("mcp", "invalid_args"): "an MCP tool (no model of the kit is behind an MCP client's calls)",
    ("mcp", "unknown_tool"): "an MCP tool (no model of the kit is behind an MCP client's calls)",
    ("google_genai", "unknown_tool"): "a google-genai function (automatic function calling "
    "raises KeyError on a call to a function it does not have, and records no tool event)",
    ("openai_agents", "unknown_tool"): "an Agents SDK tool (the SDK ends the run on a call "
    "to a tool it does not have, and records no tool event)",
    ("openai", "unknown_tool"): "a function of the openai SDK's tool runner or an action of "
    "its Decisions runner (each stops the run on a call to a function, or a choice of a "
    "candidate, it does not have, and records no tool event)",
}
# Cells of the openai SDK's Decisions runner's actions (rows of framework "openai", as its
# tool runner's functions) that nothing of the kit covers: said after the suggestion that
# covers them for a function.
_DECISIONS_ACTION: Final = {
    "invalid_args": "an action of the Decisions runner (it takes no arguments, and no script "
    "of the kit answers its /v1/decisions requests)",
}
_MODEL_MARKERS: Final = {
    "rate_limit": 'llm="rate_limit", retry_after=2',
    "server_error": 'llm="server_error"',
    "timeout": 'llm="timeout"',
    "connection": 'llm="connection"',
    "stream_cut": 'llm="truncated"',
    "malformed_tool_args": 'llm="malformed_tool_args"',
    "empty_or_blocked": 'llm="empty"',
    "not_json": 'llm="not_json"',
}
_HOST_MARKERS: Final = {
    "rate_limit": 'http=429, retry_after=2, url="{url}"',
    "server_error": 'http=503, url="{url}"',
    "timeout": 'http="timeout", url="{url}"',
    "connection": 'http="connect_error", url="{url}"',
    "stream_cut": 'http="truncated_stream", url="{url}"',
    "not_json": 'http="malformed_body", url="{url}"',
}
# A host's malformed answers: no http= fault sends them, and llm= faults reach af.Agent's
# model only, never a host; the step served by a script on that host covers the cell.
_SERVED_STEPS: Final = {
    "malformed_tool_args": "malformed.tool_args()",
    "empty_or_blocked": "malformed.empty()",
}
# The provider whose default endpoint `http_faults.script` answers on each provider host.
_PROVIDER_HOSTS: Final = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gemini",
    "localhost:11434": "ollama",
}
_NEVER: Final = "an llm= fault never reaches it"


# --------------------------------------------------------------------------- the session


def parse_exclusions(lines: Iterable[str]) -> list[tuple[str, str]]:
    """``tool_or_host:fault_class`` lines (globs allowed) as pairs; a bad line is an error."""
    known = {*TOOL_CLASSES, *MODEL_CLASSES}
    pairs = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, fault_class = line.rpartition(":")
        if not sep or not name or not fault_class:
            raise UsageError(
                f"agentfaults_coverage_exclude: {line!r} is not tool_or_host:fault_class, "
                "e.g. 'get_time:invalid_args' or '*:unknown_tool'"
            )
        if not any(fnmatch.fnmatchcase(c, fault_class) for c in known):
            raise UsageError(
                f"agentfaults_coverage_exclude: {line!r} names no fault class; use one of "
                f"{', '.join(sorted(known))}"
            )
        pairs.append((name, fault_class))
    return pairs


@dataclass
class Cell:
    """One (row, fault class): the passing tests that covered it, and how."""

    tests: list[str] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)

    @property
    def covered(self) -> bool:
        return bool(self.tests)


@dataclass
class Row:
    kind: str
    name: str
    framework: str
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def framework_tool(self) -> bool:
        """A tool of another framework (pydantic-ai, LangChain, ...), not the kit's own."""
        return self.kind == "tool" and self.framework != KIT

    def label(self) -> str:
        if self.kind == "tool":
            suffix = f" ({self.framework})" if self.framework_tool else ""
            return f"tool {self.name}{suffix}"
        return f"{self.kind} {self.name}"


class Matrix:
    """The session's fault coverage: rows by kind, framework and name, cells by fault class.

    Tools of one name in two frameworks (a LangChain ``search``, an MCP ``search``) are
    two rows: neither gets the cells the other covered.
    """

    def __init__(self, exclusions: Sequence[tuple[str, str]] = ()) -> None:
        self.rows: dict[tuple[str, str, str], Row] = {}
        self.exclusions = list(exclusions)

    def add(self, observed: dict[str, Any], nodeid: str, passed: bool) -> None:
        """Count one test's `observe` data; its hits cover cells only if it ``passed``."""
        for kind, name, framework in observed["rows"]:
            self._row(kind, name, framework)
        if not passed:
            return
        for kind, name, framework, fault_class, source in observed["hits"]:
            row = self._row(kind, name, framework)
            cell = row.cells.setdefault(fault_class, Cell())
            if nodeid not in cell.tests:
                cell.tests.append(nodeid)
            cell.sources.add(source)

    def _row(self, kind: str, name: str, framework: str) -> Row:
        row = self.rows.get((kind, framework, name))
        if row is None:
            row = self.rows[(kind, framework, name)] = Row(kind, name, framework)
        return row

    def excluded(self, row: Row, fault_class: str) -> bool:
        """Whether an exclusion names the cell.

        A tool is named by its bare name (that tool in every framework) or as
        ``name (framework)`` (that framework's only).
        """
        names = (row.name, f"{row.name} ({row.framework})") if row.kind == "tool" else (row.name,)
        return any(
            any(fnmatch.fnmatchcase(each, name) for each in names)
            and fnmatch.fnmatchcase(fault_class, cls)
            for name, cls in self.exclusions
        )

    def ordered(self) -> list[Row]:
        return sorted(
            self.rows.values(),
            key=lambda r: (_KINDS.index(r.kind), r.name, r.framework_tool, r.framework),
        )

    def counts(self, row: Row | None = None) -> tuple[int, int]:
        """(covered, applicable) cells of ``row``, or of the whole matrix."""
        covered = applicable = 0
        for each in [row] if row is not None else self.ordered():
            for fault_class in classes_of(each.kind):
                if self.excluded(each, fault_class):
                    continue
                applicable += 1
                cell = each.cells.get(fault_class)
                covered += bool(cell and cell.covered)
        return covered, applicable

    def percent(self, row: Row | None = None) -> float:
        covered, applicable = self.counts(row)
        return 100.0 * covered / applicable if applicable else 100.0

    def uncovered(self) -> list[tuple[Row, str]]:
        return [
            (row, fault_class)
            for row in self.ordered()
            for fault_class in classes_of(row.kind)
            if not self.excluded(row, fault_class)
            and not (row.cells.get(fault_class) and row.cells[fault_class].covered)
        ]

    # ------------------------------------------------------------------- outputs

    def render(self, suggestions: int = 5) -> list[str]:
        """The terminal table: ✓ injected, u the user's own code, · uncovered, - excluded."""
        lines: list[str] = []
        for kind in _KINDS:
            rows = [r for r in self.ordered() if r.kind == kind]
            if not rows:
                continue
            columns = classes_of(kind)
            width = max(len(r.label()) for r in rows) + 2
            heads = "".join(f"{_short(c):>6}" for c in columns)
            lines.append(f"{'':<{width}}{heads}")
            for row in rows:
                marks = "".join(f"{self._mark(row, c):>6}" for c in columns)
                lines.append(f"{row.label():<{width}}{marks}   {self.percent(row):5.1f}%")
            lines.append("")
        covered, applicable = self.counts()
        lines.append(
            f"fault coverage: {covered} of {applicable} cells ({self.percent():.1f}%); "
            "✓ injected, u raised by your code, · not covered, - excluded"
        )
        for title, columns in (("tools", TOOL_CLASSES), ("models, hosts", MODEL_CLASSES)):
            legend = ", ".join(f"{_short(c)}={label}" for c, label in columns.items())
            lines.append(f"{title}: {legend}")
        missing = self.uncovered()
        if missing and suggestions:
            lines.append("to cover next:")
            for row, fault_class in missing[:suggestions]:
                lines.append(f"  {row.label()} / {fault_class}: {suggest(row, fault_class)}")
        return lines

    def _mark(self, row: Row, fault_class: str) -> str:
        if self.excluded(row, fault_class):
            return "-"
        cell = row.cells.get(fault_class)
        if cell is None or not cell.covered:
            return "·"
        return "✓" if INJECTED in cell.sources else "u"

    def as_dict(self) -> dict[str, Any]:
        covered, applicable = self.counts()
        return {
            "format": 1,
            "columns": {
                "tool": dict(TOOL_CLASSES),
                "model": dict(MODEL_CLASSES),
                "host": dict(MODEL_CLASSES),
            },
            "rows": [
                {
                    "kind": row.kind,
                    "name": row.name,
                    "framework": row.framework,
                    "percent": round(self.percent(row), 1),
                    "cells": {
                        fault_class: {
                            "covered": bool(
                                row.cells.get(fault_class) and row.cells[fault_class].covered
                            ),
                            "excluded": self.excluded(row, fault_class),
                            "sources": sorted(row.cells[fault_class].sources)
                            if fault_class in row.cells
                            else [],
                            "tests": list(row.cells[fault_class].tests)
                            if fault_class in row.cells
                            else [],
                        }
                        for fault_class in classes_of(row.kind)
                    },
                }
                for row in self.ordered()
            ],
            "total": {"covered": covered, "cells": applicable, "percent": round(self.percent(), 1)},
            "suggestions": [
                {"row": row.label(), "fault": fault_class, "marker": suggest(row, fault_class)}
                for row, fault_class in self.uncovered()
            ],
        }

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n", encoding="utf-8")

    def html_section(self, anchors: dict[str, str] | None = None) -> str:
        """The HTML report's section: each covered cell links to the tests that covered it.

        ``anchors`` maps a test's node id to its section's id in the report.
        """
        anchors = anchors or {}
        parts = ['<section id="fault-coverage"><h2>Fault coverage</h2>']
        covered, applicable = self.counts()
        parts.append(f"<p>{covered} of {applicable} cells covered ({self.percent():.1f}%)</p>")
        for kind in _KINDS:
            rows = [r for r in self.ordered() if r.kind == kind]
            if not rows:
                continue
            columns = classes_of(kind)
            head = "".join(f"<th>{html.escape(label)}</th>" for label in columns.values())
            parts.append(f'<table class="coverage"><tr><th>{kind}</th>{head}<th>%</th></tr>')
            for row in rows:
                cells = []
                for fault_class in columns:
                    mark = self._mark(row, fault_class)
                    cell = row.cells.get(fault_class)
                    if cell is not None and cell.covered:
                        links = " ".join(
                            f'<a href="#{html.escape(anchors.get(t, _anchor(t)))}" '
                            f'title="{html.escape(t)}">'
                            f"{index + 1}</a>"
                            for index, t in enumerate(cell.tests)
                        )
                        cells.append(f'<td class="covered">{mark} {links}</td>')
                    else:
                        cells.append(
                            f'<td class="{"excluded" if mark == "-" else "missing"}">{mark}</td>'
                        )
                parts.append(
                    f"<tr><th>{html.escape(row.label())}</th>{''.join(cells)}"
                    f"<td>{self.percent(row):.1f}</td></tr>"
                )
            parts.append("</table>")
        parts.append("</section>")
        return "\n".join(parts)


def suggest(row: Row, fault_class: str) -> str:
    """What would cover ``fault_class`` on ``row``, in one line.

    A marker; for a framework's tool, what works there (an ``llm_server`` script for the
    model's bad calls), or why nothing of the kit can and the exclusion to write; for a
    host's malformed answers, the script that serves one there.
    """
    if row.framework_tool and fault_class in _FRAMEWORK_TOOL:
        why = _UNREACHABLE.get((row.framework, fault_class))
        if why is not None:
            return (
                f"nothing of the kit covers it for {why}; exclude the cell: "
                f"agentfaults_coverage_exclude = {row.name} ({row.framework}):{fault_class}"
            )
        suggestion = _FRAMEWORK_TOOL[fault_class].format(name=row.name)
        action = _DECISIONS_ACTION.get(fault_class) if row.framework == "openai" else None
        if action is not None:
            suggestion += (
                f"; nothing of the kit covers it for {action}, so exclude the cell: "
                f"agentfaults_coverage_exclude = {row.name} ({row.framework}):{fault_class}"
            )
        return suggestion
    if row.kind == "host" and fault_class in _SERVED_STEPS:
        return _served_step(row.name, fault_class)
    if row.kind == "tool":
        spec = _TOOL_MARKERS[fault_class].format(name=row.name)
    elif row.kind == "model":
        spec = _MODEL_MARKERS[fault_class]
    else:
        spec = _HOST_MARKERS[fault_class].format(url=f"https://{row.name}/")
    return f"@pytest.mark.inject_fault({spec})"


def _served_step(host: str, fault_class: str) -> str:
    """The script that serves ``host`` the malformed answer of ``fault_class``."""
    step = _SERVED_STEPS[fault_class]
    if host == LLM_SERVER:
        return f"llm_server.script([{step}, ...]) ({_NEVER})"
    provider = _PROVIDER_HOSTS.get(host)
    if provider is not None:
        return f'http_faults.script("{provider}", [{step}, ...]) ({_NEVER})'
    # another host: an OpenAI-compatible endpoint, the commonest; or no model at all
    return (
        f'http_faults.script("openai", [{step}, ...], '
        f'url="https://{host}/v1/chat/completions") ({_NEVER}; if {host} serves no model, '
        f"exclude the cell: agentfaults_coverage_exclude = {host}:{fault_class})"
    )


def _short(fault_class: str) -> str:
    return {
        "retryable": "retry",
        "non_retryable": "fatal",
        "timeout": "tmout",
        "invalid_args": "args",
        "tool_failure": "fail",
        "unknown_tool": "unkn",
        "rate_limit": "429",
        "server_error": "5xx",
        "connection": "conn",
        "stream_cut": "cut",
        "malformed_tool_args": "margs",
        "empty_or_blocked": "empty",
        "not_json": "!json",
    }[fault_class]


def _anchor(nodeid: str) -> str:
    return "test-" + "".join(c if c.isalnum() else "-" for c in nodeid)


def insert_into_html(path: Path, section: str) -> None:
    """Add ``section`` to the HTML report at ``path``, before ``</body>``."""
    text = path.read_text(encoding="utf-8")
    marker = "</body>"
    index = text.rfind(marker)
    text = text + section if index < 0 else text[:index] + section + "\n" + text[index:]
    path.write_text(text, encoding="utf-8")
