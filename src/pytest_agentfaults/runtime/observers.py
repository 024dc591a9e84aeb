"""Built-in observers: ``observer="progress"`` and ``observer="detailed"``.

Each prints one line per step, for example::

    [bot] [tool-retry] fetch 1/3 ConnectionError: reset (waiting 1.0s)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.events import Event

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ConsoleObserver", "format_event", "named_observer"]

# What "progress" shows: the steps a reader follows; "detailed" shows every event.
_PROGRESS = frozenset(
    {
        "run.start",
        "tool.call",
        "tool.error",
        "tool.retry",
        "tool.exhausted",
        "llm.error",
        "llm.retry",
        "llm.exhausted",
        "transport.retry",
        "fixer.call",
        "fixer.result",
        "escalation",
        "fallback",
        "budget.exceeded",
        "run.cancelled",
        "run.end",
    }
)


def format_event(event: Event) -> str:
    """The one-line form of ``event`` used by the console observers."""
    tag = event.type.replace(".", "-")
    head = f"[{event.agent}] [{tag}]"
    error = f" {event.error}" if event.error is not None else ""
    tool = f" {event.tool}" if event.tool else ""
    if event.type in ("tool.retry", "llm.retry", "transport.retry"):
        retry = (event.attempt or 2) - 1
        of = f"/{event.max_attempts - 1}" if event.max_attempts else ""
        wait = f" (waiting {event.delay:.1f}s)" if event.delay is not None else ""
        return f"{head}{tool} {retry}{of}{error}{wait}"
    if event.type == "escalation":
        return f"{head}{tool} {event.severity}: {event.reason}"
    if event.type == "run.end":
        return f"{head} {event.status}{error}" + (f" -> {event.detail}" if event.detail else "")
    attempt = f" attempt {event.attempt}" if event.attempt is not None else ""
    status = f" {event.status}" if event.status is not None else ""
    detail = f" {event.detail}" if event.detail else ""
    return f"{head}{tool}{attempt}{status}{error}{detail}"


class ConsoleObserver:
    """Print one line per event (all of them, or only the progress steps)."""

    def __init__(self, *, detailed: bool = False, stream: TextIO | None = None) -> None:
        self.detailed = detailed
        self._stream = stream

    def __call__(self, event: Event) -> None:
        """Print ``event`` if this observer shows its type."""
        if self.detailed or event.type in _PROGRESS:
            print(format_event(event), file=self._stream or sys.stdout)

    def __repr__(self) -> str:
        return f"ConsoleObserver(detailed={self.detailed})"


def named_observer(name: str) -> Callable[[Event], object]:
    """The observer called ``name``: ``"progress"`` or ``"detailed"``."""
    if name == "progress":
        return ConsoleObserver()
    if name == "detailed":
        return ConsoleObserver(detailed=True)
    raise UsageError(f"unknown observer {name!r}; use 'progress', 'detailed' or a callable(Event)")
