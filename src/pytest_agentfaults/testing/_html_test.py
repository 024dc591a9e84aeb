"""One test's section of the HTML report, and the same content as a pytest-html extra.

Per test: pytest's outcome of each phase (setup, call, teardown) with its message and the
end of its traceback; the replay command; the faults that fired; the counts; the SVG
timeline; the event list. Plain HTML (``<details>`` folds the tracebacks), no script.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from pytest_agentfaults.runtime.timeline import render_svg
from pytest_agentfaults.testing._trace_text import render_events

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pytest_agentfaults.runtime.events import Event
    from pytest_agentfaults.testing.report import Phase, ReportEntry

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["STYLE", "test_section", "trace_extra"]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1c2833; }
h1 { font-size: 20px; } h2 { font-size: 15px; margin-top: 32px; border-top: 1px solid #d5dbdf;
  padding-top: 12px; } h3 { font-size: 13px; margin: 14px 0 4px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #d5dbdf; padding: 3px 8px; text-align: left; vertical-align: top; }
.passed, .xpassed { color: #2e7d32; } .failed, .error { color: #c62828; }
.skipped, .xfailed { color: #8d6e63; }
.badge { font-size: 12px; font-weight: normal; margin-left: 8px; }
pre, code { font-family: monospace; font-size: 12px; }
pre { background: #f5f7f9; padding: 8px; overflow-x: auto; margin: 4px 0; }
details summary { cursor: pointer; font-size: 12px; color: #455a64; }
svg { max-width: 100%; height: auto; }
"""

_NO_EVENTS = "<p>No agent run or HTTP attempt was recorded.</p>"


def test_section(index: int, entry: ReportEntry) -> str:
    """The ``<section>`` of one test (anchor ``t<index>``)."""
    outcome = html.escape(entry.outcome)
    parts = [
        f'<section id="t{index}"><h2>{html.escape(entry.nodeid)} '
        f'<span class="badge {outcome}">{outcome}</span></h2>',
        _phases(entry.phases),
    ]
    if entry.replay:
        parts.append(f"<p>replay: <code>{html.escape(entry.replay)}</code></p>")
    if entry.replay or entry.events or entry.faults:
        faults = "".join(f"<li>{html.escape(f)}</li>" for f in entry.faults) or "<li>none</li>"
        parts.append(f"<h3>faults fired</h3><ul>{faults}</ul>")
        parts.append(_counts(entry.counts))
        parts.append(_trace(entry.events, entry.nodeid))
    parts.append("</section>")
    return "".join(parts)


def trace_extra(events: Sequence[Event], title: str) -> str:
    """What pytest-html shows under a test: the timeline picture and the event list."""
    return f"<div class='agentfaults'><h3>agentfaults trace</h3>{_trace(events, title)}</div>"


def _phases(phases: Sequence[Phase]) -> str:
    if not phases:
        return ""
    rows = []
    tracebacks = []
    for phase in phases:
        outcome = html.escape(phase.outcome)
        rows.append(
            f"<tr><td>{html.escape(phase.when)}</td><td class='{outcome}'>{outcome}</td>"
            f"<td>{html.escape(phase.message)}</td><td>{phase.duration:.3f}s</td></tr>"
        )
        if phase.traceback:
            tracebacks.append(
                f"<details open><summary>{html.escape(phase.when)}: "
                f"{html.escape(phase.outcome)}</summary><pre class='traceback'>"
                f"{html.escape(phase.traceback)}</pre></details>"
            )
    return (
        "<table class='phases'><tr><th>phase</th><th>outcome</th><th>message</th>"
        "<th>duration</th></tr>" + "".join(rows) + "</table>" + "".join(tracebacks)
    )


def _counts(counts: dict[str, int]) -> str:
    labels = (
        ("faults", "faults injected"),
        ("retries", "tool and LLM retries"),
        ("http_retries", "HTTP retries"),
        ("fixer_calls", "fixer calls"),
        ("escalations", "escalations"),
    )
    cells = "".join(f"<tr><td>{label}</td><td>{counts.get(k, 0)}</td></tr>" for k, label in labels)
    return f"<h3>counts</h3><table class='counts'>{cells}</table>"


def _trace(events: Sequence[Event], title: str) -> str:
    if not events:
        return f"<h3>timeline</h3>{_NO_EVENTS}"
    listing = "\n".join(html.escape(line) for line in render_events(events, width=160))
    return (
        f"<h3>timeline</h3>{render_svg(events, title=title)}"
        f"<h3>events</h3><pre class='events'>{listing}</pre>"
    )
