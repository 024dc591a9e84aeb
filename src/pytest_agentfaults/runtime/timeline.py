"""A picture of a run: `trace.render(format="svg")`.

One row per model and per tool (and one for HTTP when there is HTTP traffic), time running
left to right on the trace's (virtual) clock. Attempts are bars, injected faults red
diamonds, failures red bars, backoff waits hatched bars, escalations and fallbacks
flags. Every event of the trace is one element carrying ``data-seq`` and a tooltip, so
nothing recorded is missing from the picture. Plain SVG from the standard library.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Only for annotations: events.py imports this module (Trace.render), not the reverse.
    from pytest_agentfaults.runtime.events import Event

__all__ = ["render_svg"]

_ROW_HEIGHT = 28
_LABEL_WIDTH = 190
_LABEL_CHARS = 26
_PLOT_WIDTH = 760
_TOP = 34
_BOTTOM = 34
_MIN_BAR = 4.0

_COLOURS = {
    "ok": "#2e7d32",
    "error": "#c62828",
    "fault": "#d50000",
    "wait": "#90a4ae",
    "call": "#1565c0",
    "mark": "#6a1b9a",
    "axis": "#455a64",
}


@dataclass
class _Row:
    key: str
    label: str
    events: list[Event] = field(default_factory=list)


def _row_key(event: Event) -> tuple[str, str]:
    kind = event.type.split(".")[0]
    if event.tool and kind in ("tool", "fixer", "escalation"):
        return f"tool:{event.tool}", f"tool {event.tool}"
    if event.type.startswith("http."):
        return "http", "HTTP"
    if event.type == "escalation":
        return f"tool:{event.tool}", f"tool {event.tool}"
    return f"model:{event.agent}", f"model ({event.agent})"


def _rows(events: Sequence[Event]) -> list[_Row]:
    rows: dict[str, _Row] = {}
    for event in events:
        key, label = _row_key(event)
        rows.setdefault(key, _Row(key, label)).events.append(event)
    # models first, then tools in order of appearance, then HTTP
    order = {"model": 0, "tool": 1, "http": 2}
    return sorted(rows.values(), key=lambda r: order.get(r.key.split(":")[0], 3))


def _fit(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "\u2026"


def _fmt(seconds: float) -> str:
    return f"{seconds:.3f}s" if seconds < 10 else f"{seconds:.1f}s"


def render_svg(events: Sequence[Event], *, title: str = "") -> str:
    """The SVG timeline of ``events`` (a trace's events), as a string."""
    rows = _rows(events)
    end = max((e.at + (e.delay or 0.0) for e in events), default=0.0)
    span = end if end > 0 else 1.0
    height = _TOP + _BOTTOM + _ROW_HEIGHT * max(1, len(rows))
    width = _LABEL_WIDTH + _PLOT_WIDTH + 20

    def x(at: float) -> float:
        return _LABEL_WIDTH + at / span * _PLOT_WIDTH

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11" '
        f'role="img" aria-label="{html.escape(title or "agent run timeline")}">',
        "<defs><pattern id='wait' width='6' height='6' patternUnits='userSpaceOnUse' "
        "patternTransform='rotate(45)'><rect width='3' height='6' "
        f"fill='{_COLOURS['wait']}'/></pattern></defs>",
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    if title:
        parts.append(
            f'<text x="8" y="18" font-size="13" font-weight="bold">{html.escape(title)}</text>'
        )
    # time axis
    axis_y = height - _BOTTOM + 8
    parts.append(
        f'<line x1="{_LABEL_WIDTH}" y1="{axis_y}" x2="{_LABEL_WIDTH + _PLOT_WIDTH}" '
        f'y2="{axis_y}" stroke="{_COLOURS["axis"]}"/>'
    )
    for tick in range(6):
        at = span * tick / 5
        tx = x(at)
        parts.append(
            f'<line x1="{tx:.1f}" y1="{axis_y}" x2="{tx:.1f}" y2="{axis_y + 4}" '
            f'stroke="{_COLOURS["axis"]}"/>'
            f'<text x="{tx:.1f}" y="{axis_y + 16}" text-anchor="middle">{_fmt(at)}</text>'
        )
    for index, row in enumerate(rows):
        top = _TOP + index * _ROW_HEIGHT
        mid = top + _ROW_HEIGHT / 2
        shade = "#f5f7f9" if index % 2 else "#ffffff"
        parts.append(
            f'<rect x="0" y="{top}" width="{width}" height="{_ROW_HEIGHT}" fill="{shade}"/>'
            f'<text x="8" y="{mid + 4:.1f}">{html.escape(_fit(row.label))}'
            f"<title>{html.escape(row.label)}</title></text>"
        )
        parts.extend(_row_elements(row, top, mid, x))
    parts.append("</svg>")
    return "\n".join(parts)


def _row_elements(row: _Row, top: float, mid: float, x: object) -> list[str]:
    place = x  # callable(at) -> pixels
    assert callable(place)
    out: list[str] = []
    open_attempt: Event | None = None
    for event in row.events:
        tip = html.escape(event.describe())
        seq = event.seq
        kind = event.type
        ex = place(event.at)
        if kind in ("tool.call", "llm.request", "http.request"):
            open_attempt = event
            out.append(_tick(ex, top, seq, tip, _COLOURS["call"]))
            continue
        if kind in ("tool.result", "tool.error", "llm.response", "llm.error") and (
            open_attempt is not None
        ):
            start = place(open_attempt.at)
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
                f'width="{max(_MIN_BAR, place(event.at + event.delay) - ex):.1f}" '
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
            out.append(
                f'<path data-seq="{seq}" data-type="{kind}" d="{points}" '
                f'fill="{_COLOURS["fault"]}"><title>{tip}</title></path>'
            )
            continue
        out.append(_flag(ex, top, seq, kind, tip))
    return out


def _tick(ex: float, top: float, seq: int, tip: str, colour: str) -> str:
    return (
        f'<line data-seq="{seq}" data-type="attempt" x1="{ex:.1f}" y1="{top + 4}" '
        f'x2="{ex:.1f}" y2="{top + _ROW_HEIGHT - 4}" stroke="{colour}" stroke-width="1.5">'
        f"<title>{tip}</title></line>"
    )


def _flag(ex: float, top: float, seq: int, kind: str, tip: str) -> str:
    return (
        f'<g data-seq="{seq}" data-type="{kind}"><line x1="{ex:.1f}" y1="{top + 3}" '
        f'x2="{ex:.1f}" y2="{top + _ROW_HEIGHT - 3}" stroke="{_COLOURS["mark"]}"/>'
        f'<circle cx="{ex:.1f}" cy="{top + 6}" r="3" fill="{_COLOURS["mark"]}"/>'
        f"<title>{tip}</title></g>"
    )
