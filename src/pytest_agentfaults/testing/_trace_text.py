"""The recovery trace as text a person scans: one clipped line per event, with turns.

Turn numbers, and an explicit line where retries ran out.

Used by the "recovery trace" report section (`TestState.render`). The full values stay in
the trace JSON (``--agentfaults-trace-dir``); here a long value is cut at ``width``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Event

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["WIDTH", "clip", "exhausted_after", "render_events", "turns"]

#: the widest line of the section (pytest's own lines are 80 to 120 wide)
WIDTH = 120

_QUIET_FIRST_ATTEMPT = (
    "llm.request",
    "llm.response",
    "llm.error",
    "tool.call",
    "tool.result",
    "tool.error",
    "tool.fault",
)


def clip(line: str, width: int = WIDTH) -> str:
    """``line`` cut to ``width`` characters, ending in an ellipsis when cut."""
    line = " ".join(line.split("\n"))
    return line if len(line) <= width else line[: width - 1] + "\u2026"


def turns(events: Sequence[Event]) -> list[int | None]:
    """Each event's model turn in its run: a turn starts at a first-attempt ``llm.request``.

    None before the run's first model call (``run.start``) and for events outside runs.
    """
    current: dict[str, int] = {}
    out: list[int | None] = []
    for event in events:
        if event.type == "llm.request" and (event.attempt or 1) == 1:
            current[event.run_id] = current.get(event.run_id, 0) + 1
        out.append(current.get(event.run_id))
    return out


def exhausted_after(events: Sequence[Event]) -> dict[int, str]:
    """Index of an event -> the line to print after it, where the runtime gave up.

    ``retries exhausted``: a tool call, or a run's model calls, whose last attempt failed
    after at least one retry. ``not retried``: one that failed with a retryable error and
    was never retried (no retry configured for it). ``aborted``: one whose last attempt was
    stopped from outside (a KeyboardInterrupt, pytest-timeout's failure, a cancelled
    task, a budget cap), which no policy retries: its retries did not run out.
    """
    found: dict[int, str] = {}
    last_error: dict[tuple[str, str], int] = {}
    retried: set[tuple[str, str]] = set()
    attempts: dict[tuple[str, str], int] = {}
    explicit: set[tuple[str, str]] = set()  # the runtime recorded its own *.exhausted
    for index, event in enumerate(events):
        key = _call_key(event)
        if key is None:
            continue
        kind = event.type
        if kind in _EXHAUSTED:
            explicit.add(key)
            last_error.pop(key, None)
        elif kind in ("tool.call", "llm.request"):
            attempts[key] = attempts.get(key, 0) + 1
            last_error.pop(key, None)
        elif kind in ("tool.error", "llm.error"):
            last_error[key] = index
        elif kind in ("tool.retry", "llm.retry"):
            retried.add(key)
            last_error.pop(key, None)
        elif kind in ("tool.result", "llm.response"):
            last_error.pop(key, None)
    for key, index in last_error.items():
        event = events[index]
        error = event.error
        what = f"tool {key[1]!r}" if event.type == "tool.error" else "the model call"
        cause = f": {error}" if error is not None else ""
        if key in explicit:
            continue
        if error is not None and error.kind == "aborted":
            tried = event.attempt or attempts.get(key, 1)
            found[index] = f"aborted: {what} stopped in attempt {tried}, not retried{cause}"
        elif key in retried:
            tried = event.attempt or attempts.get(key, 1)
            found[index] = f"retries exhausted: {what} failed all {tried} attempts{cause}"
        elif error is not None and error.retryable:
            found[index] = f"not retried: {what} failed once with a retryable error{cause}"
    return found


def render_events(events: Sequence[Event], *, width: int = WIDTH) -> list[str]:
    """The section's timeline: ``time  turn N  type  [agent] what``, one line each."""
    numbered = turns(events)
    exhausted = exhausted_after(events)
    lines: list[str] = []
    for index, event in enumerate(events):
        turn = numbered[index]
        head = f"{event.at:8.3f}s  {f'turn {turn}' if turn else '':<7} "
        what = _exhausted(event) if event.type in _EXHAUSTED else _what(event)
        lines.append(clip(f"{head} {event.type:<15} [{event.agent}] {what}", width))
        if index in exhausted:
            lines.append(clip(f"{head} {exhausted[index]}", width))
    return lines


_EXHAUSTED = ("tool.exhausted", "llm.exhausted")


def _exhausted(event: Event) -> str:
    what = f"tool {event.tool!r}" if event.type == "tool.exhausted" else "the model call"
    cause = f": {event.error}" if event.error is not None else ""
    return f"retries exhausted: {what} failed all {event.attempt} attempts{cause}"


def _call_key(event: Event) -> tuple[str, str] | None:
    """The attempts an event belongs to: one tool call, or the model calls of one run."""
    if event.type.startswith("tool."):
        return f"{event.run_id}/{event.call_id or event.tool}", f"{event.tool}"
    if event.type.startswith("llm."):
        return event.run_id, "llm"
    return None


def _what(event: Event) -> str:
    """What matters about ``event``, without its type, time and agent."""
    parts: list[str] = []
    if event.tool:
        parts.append(event.tool)
    attempt = event.attempt
    if attempt is not None and not (
        attempt == 1 and event.max_attempts is None and event.type in _QUIET_FIRST_ATTEMPT
    ):
        of = f"/{event.max_attempts}" if event.max_attempts is not None else ""
        parts.append(f"attempt {attempt}{of}")
    if event.delay is not None:
        parts.append(f"after {event.delay:.3f}s")
    if event.status is not None and event.type not in ("tool.fault", "llm.fault"):
        parts.append(str(event.status))
    if event.error is not None:
        parts.append(str(event.error))
    if event.reason is not None:
        parts.append(f"reason: {event.reason}")
    if event.severity is not None:
        parts.append(f"({event.severity})")
    if event.detail:
        parts.append(event.detail)
    return "  ".join(parts)
