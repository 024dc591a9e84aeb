"""A picture of a run: `trace.render(format="svg")`.

One row per model, per tool and per HTTP host, time running left to right on the trace's
(virtual) clock. When the run took no time at all (the common case before any backoff),
the axis is ordinal instead: one column per event, in order. Attempts are bars (green when
they worked, red when they failed), injected faults red diamonds, backoff waits hatched
bars, fixers, escalations and the like purple flags. A title, a legend and 1-2-5 ticks
come with it. Every event of the trace is one element carrying ``data-seq``,
``data-type`` and a tooltip, so nothing recorded is missing from the picture. Plain SVG
from the standard library.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_agentfaults._network_policy import url_host

if TYPE_CHECKING:
    # Only for annotations: events.py imports this module (Trace.render), not the reverse.
    from pytest_agentfaults.runtime.events import Event

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LEGEND", "nice_ticks", "render_svg"]

_ROW_HEIGHT = 28
_LABEL_WIDTH = 190
_LABEL_CHARS = 26
_PLOT_WIDTH = 760
_TOP = 62  # title, then the legend, then the rows
_BOTTOM = 44  # the axis, its ticks and its caption
_MIN_BAR = 4.0
#: below this many seconds from first to last event, time says nothing: go ordinal
_NO_TIME = 1e-6

_COLOURS = {
    "ok": "#2e7d32",
    "error": "#c62828",
    "fault": "#d50000",
    "wait": "#90a4ae",
    "call": "#1565c0",
    "mark": "#6a1b9a",
    "axis": "#455a64",
}

#: the legend's entries: (kind of mark, colour key, text)
LEGEND: tuple[tuple[str, str, str], ...] = (
    ("tick", "call", "attempt starts"),
    ("bar", "ok", "attempt worked"),
    ("bar", "error", "attempt failed"),
    ("diamond", "fault", "injected fault"),
    ("wait", "wait", "backoff wait"),
    ("flag", "mark", "fixer, escalation, run start/end"),
)


@dataclass
class _Row:
    key: str
    label: str
    events: list[tuple[int, Event]] = field(default_factory=list)


def _row_key(event: Event, model: str) -> tuple[str, str]:
    kind = event.type.split(".")[0]
    if event.tool and kind in ("tool", "fixer", "escalation"):
        return f"tool:{event.tool}", f"tool {event.tool}"
    if event.type.startswith("http."):
        url = event.field("url")
        host = url_host(url) if isinstance(url, str) else ""
        return f"http:{host}", f"HTTP {host}" if host else "HTTP"
    named = f"model {model} ({event.agent})" if model else f"model ({event.agent})"
    return f"model:{event.agent}:{model}", named


def _rows(events: Sequence[Event]) -> list[_Row]:
    # A run's model events go to the row of the model its latest llm.request named (a
    # fallback model gets its own row); events before its first request, to that one's.
    first: dict[str, str] = {}
    for event in events:
        if event.type == "llm.request" and event.detail:
            first.setdefault(event.run_id, event.detail)
    current: dict[str, str] = {}
    rows: dict[str, _Row] = {}
    for index, event in enumerate(events):
        if event.type == "llm.request" and event.detail:
            current[event.run_id] = event.detail
        model = current.get(event.run_id, first.get(event.run_id, ""))
        key, label = _row_key(event, model)
        rows.setdefault(key, _Row(key, label)).events.append((index, event))
    # models first, then tools in order of appearance, then HTTP hosts
    order = {"model": 0, "tool": 1, "http": 2}
    return sorted(rows.values(), key=lambda r: order.get(r.key.split(":")[0], 3))


def nice_ticks(end: float, *, target: int = 5) -> tuple[float, list[float]]:
    """Ticks from 0 past ``end`` in steps of 1, 2 or 5 times a power of ten.

    Returns the axis' last value (a whole number of steps, at least ``end``) and the ticks.
    """
    if end <= 0:
        return 1.0, [0.0, 1.0]
    raw = end / target
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if raw <= m * magnitude * (1 + 1e-9))
    count = max(1, math.ceil(end / step - 1e-9))
    return count * step, [round(i * step, 12) for i in range(count + 1)]


def _fit(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "\u2026"


def _tick_label(value: float, step: float, ordinal: bool) -> str:
    if ordinal:
        return str(int(value))
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return f"{value:.{decimals}f}s"


def render_svg(events: Sequence[Event], *, title: str = "") -> str:
    """The SVG timeline of ``events`` (a trace's events), as a string."""
    rows = _rows(events)
    start = min((e.at for e in events), default=0.0)
    end = max((e.at + (e.delay or 0.0) for e in events), default=0.0)
    ordinal = end - start < _NO_TIME
    if ordinal:  # one column per event: x counts events, 0 .. len(events)
        span, ticks = nice_ticks(float(max(1, len(events))))
        ticks = [t for t in ticks if t == int(t)]
    else:
        span, ticks = nice_ticks(end)
    height = _TOP + _BOTTOM + _ROW_HEIGHT * max(1, len(rows))
    width = _LABEL_WIDTH + _PLOT_WIDTH + 20

    def x(index: int, at: float) -> float:
        value = index + 0.5 if ordinal else at
        return _LABEL_WIDTH + value / span * _PLOT_WIDTH

    def wait_end(index: int, event: Event) -> float:
        if ordinal:
            return x(index + 1, 0.0)
        return x(index, event.at + (event.delay or 0.0))

    heading = title or "agent run timeline"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11" '
        f'role="img" aria-label="{html.escape(heading)}">',
        "<defs><pattern id='wait' width='6' height='6' patternUnits='userSpaceOnUse' "
        "patternTransform='rotate(45)'><rect width='3' height='6' "
        f"fill='{_COLOURS['wait']}'/></pattern></defs>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text class="title" x="8" y="18" font-size="13" font-weight="bold">'
        f"{html.escape(heading)}</text>",
        _legend(),
    ]
    for index, row in enumerate(rows):
        top = _TOP + index * _ROW_HEIGHT
        mid = top + _ROW_HEIGHT / 2
        shade = "#f5f7f9" if index % 2 else "#ffffff"
        parts.append(
            f'<rect x="0" y="{top}" width="{width}" height="{_ROW_HEIGHT}" fill="{shade}"/>'
            f'<text class="row" x="8" y="{mid + 4:.1f}">{html.escape(_fit(row.label))}'
            f"<title>{html.escape(row.label)}</title></text>"
        )
        parts.extend(_row_elements(row, top, mid, x, wait_end))
    parts.extend(_axis(height, span, ticks, ordinal))
    parts.append("</svg>")
    return "\n".join(parts)


def _legend() -> str:
    items = []
    left = 8.0
    y = 38
    for mark, colour, text in LEGEND:
        fill = "url(#wait)" if mark == "wait" else _COLOURS[colour]
        if mark == "tick":
            shape = (
                f'<line x1="{left + 5}" y1="{y - 7}" x2="{left + 5}" y2="{y + 5}" '
                f'stroke="{fill}" stroke-width="1.5"/>'
            )
        elif mark == "diamond":
            shape = (
                f'<path d="M{left + 5},{y - 6} L{left + 10},{y - 1} L{left + 5},{y + 4} '
                f'L{left},{y - 1} Z" fill="{fill}"/>'
            )
        elif mark == "flag":
            shape = f'<circle cx="{left + 5}" cy="{y - 1}" r="3.5" fill="{fill}"/>'
        else:
            shape = (
                f'<rect x="{left}" y="{y - 6}" width="12" height="10" fill="{fill}" '
                f'stroke="{_COLOURS["wait"] if mark == "wait" else fill}"/>'
            )
        items.append(f'{shape}<text x="{left + 16}" y="{y + 3}">{html.escape(text)}</text>')
        left += 24 + 7 * len(text)
    return f'<g class="legend">{"".join(items)}</g>'


def _axis(height: int, span: float, ticks: list[float], ordinal: bool) -> list[str]:
    axis_y = height - _BOTTOM + 8
    colour = _COLOURS["axis"]
    out = [
        f'<g class="axis" data-axis="{"ordinal" if ordinal else "time"}">'
        f'<line x1="{_LABEL_WIDTH}" y1="{axis_y}" x2="{_LABEL_WIDTH + _PLOT_WIDTH}" '
        f'y2="{axis_y}" stroke="{colour}"/>'
    ]
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    for tick in ticks:
        tx = _LABEL_WIDTH + tick / span * _PLOT_WIDTH
        out.append(
            f'<line x1="{tx:.1f}" y1="{axis_y}" x2="{tx:.1f}" y2="{axis_y + 4}" '
            f'stroke="{colour}"/><text class="tick" x="{tx:.1f}" y="{axis_y + 16}" '
            f'text-anchor="middle">{_tick_label(tick, step, ordinal)}</text>'
        )
    caption = (
        "events in order (the run took no time: one column per event)"
        if ordinal
        else "time on the test's clock (seconds)"
    )
    out.append(
        f'<text class="caption" x="{_LABEL_WIDTH + _PLOT_WIDTH / 2}" y="{axis_y + 32}" '
        f'text-anchor="middle" fill="{colour}">{caption}</text></g>'
    )
    return out


_Place = Callable[[int, float], float]
_WaitEnd = Callable[[int, "Event"], float]


def _row_elements(row: _Row, top: float, mid: float, x: _Place, wait_end: _WaitEnd) -> list[str]:
    out: list[str] = []
    on_top: list[str] = []  # fault diamonds, drawn over the attempt bars they fall on
    open_attempt: tuple[int, Event] | None = None
    for index, event in row.events:
        tip = html.escape(event.describe())
        seq = event.seq
        kind = event.type
        ex = x(index, event.at)
        if kind in ("tool.call", "llm.request", "http.request"):
            open_attempt = (index, event)
            out.append(_tick(ex, top, seq, kind, tip))
            continue
        if kind in ("tool.result", "tool.error", "llm.response", "llm.error") and (
            open_attempt is not None
        ):
            start = x(*_index_at(open_attempt))
            colour = _COLOURS["error"] if kind.endswith("error") else _COLOURS["ok"]
            out.append(
                f'<rect data-seq="{seq}" data-type="{kind}" x="{start:.1f}" y="{top + 7}" '
                f'width="{max(_MIN_BAR, ex - start):.1f}" height="{_ROW_HEIGHT - 14}" '
                f'fill="{colour}" rx="2"><title>{tip}</title></rect>'
            )
            open_attempt = None
            continue
        if kind.endswith(".retry") and event.delay:
            out.append(
                f'<rect data-seq="{seq}" data-type="{kind}" x="{ex:.1f}" y="{top + 9}" '
                f'width="{max(_MIN_BAR, wait_end(index, event) - ex):.1f}" '
                f'height="{_ROW_HEIGHT - 18}" fill="url(#wait)" stroke="{_COLOURS["wait"]}">'
                f"<title>{tip}</title></rect>"
            )
            continue
        if kind.endswith(".fault") or kind in ("tool.error", "llm.error"):
            size = 5
            points = (
                f"M{ex:.1f},{mid - size:.1f} L{ex + size:.1f},{mid:.1f} "
                f"L{ex:.1f},{mid + size:.1f} L{ex - size:.1f},{mid:.1f} Z"
            )
            on_top.append(
                f'<path data-seq="{seq}" data-type="{kind}" d="{points}" '
                f'fill="{_COLOURS["fault"]}" stroke="white" stroke-width="0.8">'
                f"<title>{tip}</title></path>"
            )
            continue
        out.append(_flag(ex, top, seq, kind, tip))
    return out + on_top


def _index_at(attempt: tuple[int, Event]) -> tuple[int, float]:
    return attempt[0], attempt[1].at


def _tick(ex: float, top: float, seq: int, kind: str, tip: str) -> str:
    return (
        f'<line data-seq="{seq}" data-type="{kind}" x1="{ex:.1f}" y1="{top + 4}" '
        f'x2="{ex:.1f}" y2="{top + _ROW_HEIGHT - 4}" stroke="{_COLOURS["call"]}" '
        f'stroke-width="1.5"><title>{tip}</title></line>'
    )


def _flag(ex: float, top: float, seq: int, kind: str, tip: str) -> str:
    return (
        f'<g data-seq="{seq}" data-type="{kind}"><line x1="{ex:.1f}" y1="{top + 3}" '
        f'x2="{ex:.1f}" y2="{top + _ROW_HEIGHT - 3}" stroke="{_COLOURS["mark"]}"/>'
        f'<circle cx="{ex:.1f}" cy="{top + 6}" r="3" fill="{_COLOURS["mark"]}"/>'
        f"<title>{tip}</title></g>"
    )
