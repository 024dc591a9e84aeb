"""The HTML report written by ``pytest --agentfaults-html=report.html``.

One self-contained page: a summary table, then per test its outcome, the faults that fired,
the counts, the SVG timeline of its trace (attempts, faults and backoff waits on the time
axis, one row per tool and model) and the event list. No scripts, no external assets.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_agentfaults.runtime.timeline import render_svg

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Event

__all__ = ["ReportEntry", "RetryCounts", "count_retries", "render_html"]


@dataclass(frozen=True, slots=True)
class RetryCounts:
    """A test's retries, by the layer that retried (`count_retries`)."""

    tool: int = 0
    llm: int = 0
    #: HTTP-level retries: a request sent again after it failed (an SDK's own retries,
    #: seen as repeated requests, and the runtime's ``transport_retries``)
    http: int = 0


def count_retries(events: Sequence[Event]) -> RetryCounts:
    """Count ``events``' retries: tool, LLM and HTTP apart (the one place that counts them).

    Tool and LLM retries are the runtime's ``tool.retry`` and ``llm.retry`` events. An HTTP
    retry is an ``http.request`` that repeats a failed one (same run, method, URL and body)
    or says so (``x-stainless-retry-count`` above 0); a trace without ``http.request``
    events counts the runtime's ``transport.retry`` events instead.
    """
    tool = llm = transport = repeated = 0
    requests = 0
    failed: dict[tuple[object, ...], bool] = {}
    for event in events:
        kind = event.type
        if kind == "tool.retry":
            tool += 1
        elif kind == "llm.retry":
            llm += 1
        elif kind == "transport.retry":
            transport += 1
        elif kind == "http.request":
            requests += 1
            key = (event.run_id, event.field("method"), event.field("url"), event.field("body_sha"))
            retry_count = event.field("retry_count")
            if (isinstance(retry_count, int) and retry_count > 0) or (
                retry_count is None and failed.get(key, False)
            ):
                repeated += 1
            status = event.status
            failed[key] = event.error is not None or (isinstance(status, int) and status >= 400)
    return RetryCounts(tool=tool, llm=llm, http=repeated if requests else transport)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #1c2833; }
h1 { font-size: 20px; } h2 { font-size: 15px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 13px; }
td, th { border: 1px solid #d5dbdf; padding: 3px 8px; text-align: left; }
.passed { color: #2e7d32; } .failed { color: #c62828; } .skipped { color: #8d6e63; }
.events { font-family: monospace; font-size: 12px; white-space: pre; background: #f5f7f9;
          padding: 8px; overflow-x: auto; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.swatch { display: inline-block; width: 12px; height: 10px; margin-right: 4px;
          vertical-align: middle; }
"""

_LEGEND = (
    '<p class="legend">'
    '<span><i class="swatch" style="background:#2e7d32"></i>attempt that succeeded</span>'
    '<span><i class="swatch" style="background:#c62828"></i>attempt that failed</span>'
    '<span><i class="swatch" style="background:#d50000;transform:rotate(45deg)"></i>'
    "injected fault</span>"
    '<span><i class="swatch" style="background:#90a4ae"></i>backoff wait</span>'
    '<span><i class="swatch" style="background:#6a1b9a"></i>fixer, escalation, '
    "fallback, budget, end</span></p>"
)


@dataclass
class ReportEntry:
    """One test in the report."""

    nodeid: str
    outcome: str
    seed: int
    faults: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)


def render_html(entries: list[ReportEntry], *, title: str = "pytest-agentfaults report") -> str:
    """The whole report page for ``entries``."""
    rows = []
    for index, entry in enumerate(entries):
        counts = entry.counts
        rows.append(
            f'<tr><td><a href="#t{index}">{html.escape(entry.nodeid)}</a></td>'
            f'<td class="{html.escape(entry.outcome)}">{html.escape(entry.outcome)}</td>'
            f"<td>{len(entry.faults)}</td><td>{counts.get('retries', 0)}</td>"
            f"<td>{counts.get('fixer_calls', 0)}</td><td>{counts.get('escalations', 0)}</td>"
            f"<td>{len(entry.events)}</td></tr>"
        )
    sections = [_section(index, entry) for index, entry in enumerate(entries)]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{_LEGEND}"
        "<table><tr><th>test</th><th>outcome</th><th>faults</th><th>retries</th>"
        "<th>fixer calls</th><th>escalations</th><th>events</th></tr>"
        + "".join(rows)
        + "</table>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _section(index: int, entry: ReportEntry) -> str:
    faults = "".join(f"<li>{html.escape(f)}</li>" for f in entry.faults) or "<li>none</li>"
    timeline = (
        render_svg(entry.events, title=entry.nodeid)
        if entry.events
        else "<p>No agent run or HTTP attempt was recorded.</p>"
    )
    listing = "\n".join(html.escape(e.describe()) for e in entry.events)
    return (
        f'<section id="t{index}"><h2>{html.escape(entry.nodeid)} '
        f'<span class="{html.escape(entry.outcome)}">{html.escape(entry.outcome)}</span></h2>'
        f"<p>seed {entry.seed}</p><p>faults fired:</p><ul>{faults}</ul>"
        f"{timeline}<div class='events'>{listing}</div></section>"
    )
