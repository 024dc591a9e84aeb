"""The HTML report written by ``pytest --agentfaults-html=report.html``.

One self-contained page: a summary table, then per test its outcome, the faults that fired,
the counts, the SVG timeline of its trace (attempts, faults and backoff waits on the time
axis, one row per tool and model) and the event list. No scripts, no external assets.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_agentfaults.runtime._verdict_http import failed, refused
from pytest_agentfaults.testing._html_test import STYLE, test_section

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Event

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Phase",
    "ReportEntry",
    "RetryCounts",
    "count_retries",
    "overall_outcome",
    "render_html",
]


@dataclass(frozen=True, slots=True)
class RetryCounts:
    """A test's retries, by the layer that retried (`count_retries`)."""

    tool: int = 0
    llm: int = 0
    #: HTTP-level retries: the runtime's ``transport_retries``, and an SDK's own retries,
    #: seen as the same request sent again
    http: int = 0


#: the run id of the HTTP events recorded outside any agent run (`TestState`)
OUTSIDE_RUNS = "http"


def count_retries(events: Sequence[Event], kinds: Mapping[str, int] | None = None) -> RetryCounts:
    """Count ``events``' retries: tool, LLM and HTTP apart (the one place that counts them).

    ``kinds``: how many events of each type ``events`` holds, when the caller counted them
    already; without an ``http.request`` among them, they are all it takes.

    Tool and LLM retries are the runtime's ``tool.retry`` and ``llm.retry`` events. HTTP
    retries are its ``transport.retry`` events, plus the retries made below it, outside
    our agent runs (whose requests their own retry events count): an ``http.request``
    that says it is one (an SDK's ``x-stainless-retry-count`` header, kept as
    ``retry_count``, above 0); an SDK's fresh call (``retry_count`` 0) that sends the
    request whose last attempt failed again (the retry loop of the code around it, as the
    verdict groups it); or, for a client that says nothing, one that repeats an earlier
    request to the same route with the same body. A request the network guard refused was
    never sent: asked again, it is no retry (the verdict leaves it out too).
    """
    if kinds is not None and "http.request" not in kinds:
        get = kinds.get
        return RetryCounts(get("tool.retry", 0), get("llm.retry", 0), get("transport.retry", 0))
    tool = llm = http = 0
    # per route outside runs: whether its last attempt failed
    last_failed: dict[tuple[object, ...], bool] = {}
    for event in events:
        kind = event.type
        if kind == "tool.retry":
            tool += 1
        elif kind == "llm.retry":
            llm += 1
        elif kind == "transport.retry":
            http += 1
        elif kind == "http.request" and not refused(event):  # never sent: no retry
            retry_count = event.field("retry_count")
            if isinstance(retry_count, int) and retry_count > 0:
                http += 1
            if event.run_id != OUTSIDE_RUNS:
                continue
            route = (event.field("method"), event.field("url"), event.field("body_sha"))
            if route in last_failed and (
                last_failed[route] if retry_count == 0 else retry_count is None
            ):
                http += 1
            last_failed[route] = failed(event)  # as the verdict tells a failed attempt
    return RetryCounts(tool=tool, llm=llm, http=http)


@dataclass
class Phase:
    """One phase of a test as pytest reported it (see ``_plugin_report.phase_of``)."""

    when: str
    outcome: str  # passed, failed, error, skipped, xfailed, xpassed
    message: str = ""
    traceback: str = ""
    duration: float = 0.0


@dataclass
class ReportEntry:
    """One test in the report: pytest's phases, and what the kit recorded (if it was used)."""

    nodeid: str
    outcome: str
    seed: int
    faults: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    #: the command that reruns the test with the same seed (empty: the kit was not used)
    replay: str = ""


def overall_outcome(phases: Sequence[Phase]) -> str:
    """The test's outcome from its phases, the way pytest counts it.

    ``error`` for a failed setup, or a failed teardown after a call that did not fail;
    otherwise the call's outcome (or the setup's, for a test skipped in setup).
    """
    by_when = {p.when: p for p in phases}
    setup, call, teardown = (by_when.get(w) for w in ("setup", "call", "teardown"))
    if setup is not None and setup.outcome == "error":
        return "error"
    main = call or setup
    outcome = main.outcome if main is not None else "passed"
    if teardown is not None and teardown.outcome == "error" and outcome != "failed":
        return "error"
    return outcome


def render_html(entries: list[ReportEntry], *, title: str = "pytest-agentfaults report") -> str:
    """The whole report page for ``entries``: a summary table, then one section per test."""
    rows = []
    for index, entry in enumerate(entries):
        counts = entry.counts
        outcome = html.escape(entry.outcome)
        rows.append(
            f'<tr><td><a href="#t{index}">{html.escape(entry.nodeid)}</a></td>'
            f'<td class="{outcome}">{outcome}</td>'
            f"<td>{len(entry.faults)}</td><td>{counts.get('retries', 0)}</td>"
            f"<td>{counts.get('http_retries', 0)}</td>"
            f"<td>{counts.get('fixer_calls', 0)}</td><td>{counts.get('escalations', 0)}</td>"
            f"<td>{len(entry.events)}</td></tr>"
        )
    totals: dict[str, int] = {}
    for entry in entries:
        totals[entry.outcome] = totals.get(entry.outcome, 0) + 1
    tally = ", ".join(
        f'<span class="{html.escape(k)}">{html.escape(k)}: {v}</span>' for k, v in totals.items()
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='tally'>{len(entries)} tests: {tally}</p>"
        "<table class='summary'><tr><th>test</th><th>outcome</th><th>faults</th>"
        "<th>retries</th><th>HTTP retries</th><th>fixer calls</th><th>escalations</th>"
        "<th>events</th></tr>"
        + "".join(rows)
        + "</table>"
        + "".join(test_section(index, entry) for index, entry in enumerate(entries))
        + "</body></html>\n"
    )
