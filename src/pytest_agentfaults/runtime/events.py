"""Events and the `Trace`: the ordered record of everything a run did.

```python
result = agent.run("hi")
result.trace.retries("fetch")                        # 2
result.trace.assert_sequence("tool.error:fetch", "tool.retry:fetch", "tool.result:fetch")
print(result.trace.render())
```
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._event import ErrorRecord, Event
from pytest_agentfaults.runtime.snapshot import assert_matches_snapshot
from pytest_agentfaults.runtime.timeline import render_svg
from pytest_agentfaults.runtime.verdict import NotResilientError, Verdict, verdict

__all__ = [
    "EVENT_TYPES",
    "ErrorRecord",
    "Event",
    "EventType",
    "Observer",
    "Trace",
]


EventType = Literal[
    "run.start",
    "llm.request",
    "llm.response",
    "llm.error",
    "llm.retry",
    "llm.exhausted",
    "transport.retry",
    "tool.call",
    "tool.result",
    "tool.error",
    "tool.retry",
    "tool.exhausted",
    "fixer.call",
    "fixer.result",
    "escalation",
    "fallback",
    "budget.exceeded",
    "run.cancelled",
    "run.end",
    "http.request",
    "http.fault",
    "tool.fault",
    "llm.fault",
]
EVENT_TYPES: Final[tuple[str, ...]] = EventType.__args__  # type: ignore[attr-defined]
_RETRY_TYPES: Final = ("tool.retry", "llm.retry", "transport.retry")


Observer = Callable[[Event], object]


def _renumbered(event: Event, seq: int) -> Event:
    """A copy of ``event`` with another ``seq`` (for a trace that collects several runs)."""
    return Event.trusted({**event.__dict__, "seq": seq})


class Trace:
    """An ordered list of events with questions a test asks of it."""

    __slots__ = ("events",)

    def __init__(self, events: Sequence[Event] = ()) -> None:
        self.events: list[Event] = list(events)

    # ------------------------------------------------------------------ recording

    def add(self, event: Event) -> Event:
        """Append ``event``, numbering it in this trace; returns the stored event."""
        seq = len(self.events)
        if event.seq != seq:
            event = _renumbered(event, seq)
        self.events.append(event)
        return event

    # ------------------------------------------------------------------ questions

    def of(self, type: str | None = None, /, **fields: Any) -> list[Event]:
        """Events of ``type`` (a glob such as ``"tool.*"`` works) whose fields equal ``fields``.

        ```python
        trace.of("tool.retry", tool="fetch")
        ```
        """
        if type is None:
            chosen: list[Event] = list(self.events)
        elif any(c in type for c in "*?["):
            chosen = [e for e in self.events if fnmatch.fnmatchcase(e.type, type)]
        else:
            chosen = [e for e in self.events if e.type == type]
        for name, value in fields.items():
            chosen = [e for e in chosen if e.field(name) == value]
        return chosen

    def count(self, type: str | None = None, /, **fields: Any) -> int:
        """How many events `of` would return."""
        return len(self.of(type, **fields))

    def retries(self, tool: str | None = None) -> int:
        """The number of ``tool.retry`` events (of ``tool`` when given)."""
        if tool is None:
            return self.count("tool.retry")
        return self.count("tool.retry", tool=tool)

    def tool_attempts(self, tool: str) -> int:
        """How many times ``tool`` was attempted (its ``tool.call`` events), in any framework.

        Retries included: a tool that failed twice and then worked was attempted 3 times.
        """
        return self.count("tool.call", tool=tool)

    def fixer_calls(self, tool: str | None = None) -> list[Event]:
        """The ``fixer.call`` events (for ``tool`` when given)."""
        return self.of("fixer.call") if tool is None else self.of("fixer.call", tool=tool)

    def escalations(self, tool: str | None = None) -> list[Event]:
        """The ``escalation`` events (for ``tool`` when given)."""
        return self.of("escalation") if tool is None else self.of("escalation", tool=tool)

    def delays(self, tool: str | None = None) -> list[float]:
        """The waits before retries, in order: of ``tool``'s retries, or of every retry."""
        if tool is not None:
            events = self.of("tool.retry", tool=tool)
        else:
            events = [e for e in self.events if e.type in _RETRY_TYPES]
        return [e.delay for e in events if e.delay is not None]

    def errors(self, tool: str | None = None) -> list[Event]:
        """The ``tool.error`` and ``llm.error`` events (only ``tool``'s when given)."""
        if tool is not None:
            return self.of("tool.error", tool=tool)
        return [e for e in self.events if e.type in ("tool.error", "llm.error")]

    def assert_sequence(self, *labels: str | Sequence[str]) -> None:
        """Assert that events labelled ``expected`` occur in this order (gaps allowed).

        A label is ``"type"`` or ``"type:tool"``; one list of labels works too. On failure
        the message shows what was expected, how far the match got, and the actual timeline.
        """
        __tracebackhide__ = True
        first = labels[0] if len(labels) == 1 else None
        given = tuple(first) if isinstance(first, list | tuple) else labels
        expected = [label for label in given if isinstance(label, str)]
        if len(expected) != len(given):
            raise UsageError(
                "trace.assert_sequence(...): give labels such as 'tool.retry:fetch', "
                "as arguments or as one list"
            )
        position = 0
        matched: list[int] = []
        for index, event in enumerate(self.events):
            if position == len(expected):
                break
            if _label_matches(expected[position], event):
                matched.append(index)
                position += 1
        if position == len(expected):
            return
        lines = ["trace does not contain the expected sequence", "expected (in order):"]
        for i, label in enumerate(expected):
            mark = "ok " if i < position else ("-> " if i == position else "   ")
            lines.append(f"  {mark}{label}")
        lines.append(f"first missing: {expected[position]!r} (after {position} matched)")
        lines.append("actual timeline:")
        if not self.events:
            lines.append("  (no events)")
        for index, event in enumerate(self.events):
            mark = "*" if index in matched else " "
            lines.append(f"  {mark} {event.seq:3d} {event.label()}")
        raise AssertionError("\n".join(lines))

    # ------------------------------------------------------------------ judging

    def assert_matches_snapshot(self, path: str | Path, exact_times: bool = False) -> None:
        """Compare with the golden trace at ``path``; see `pytest_agentfaults.runtime.snapshot`.

        The file keeps what the seed cannot change (event kinds, targets, attempts,
        outcomes), so it passes under any ``--agentfaults-seed``; ``exact_times=True``
        keeps times and delays too, for one fixed seed. Rewrite golden traces with
        ``pytest --agentfaults-update-snapshots``.
        """
        __tracebackhide__ = True
        assert_matches_snapshot(self, path, exact_times=exact_times)

    def verdict(self, **options: Any) -> Verdict:
        """Judge how the code under test retried; see `pytest_agentfaults.runtime.verdict`.

        ```python
        v = trace.verdict()          # v.passed, v.findings (code, advice), v.render()
        ```
        ``ignore=("gave_up_early",)`` drops codes; ``max_attempts``, ``min_backoff``,
        ``storm_rate`` and ``storm_window`` tune the thresholds.
        """
        return verdict(self, **options)

    def assert_resilient(self, **options: Any) -> None:
        """Raise `AssertionError` (a ``NotResilientError``) with the verdict's report.

        Takes the options of `verdict`, e.g. ``trace.assert_resilient(ignore=("no_backoff",))``.
        """
        __tracebackhide__ = True
        judged = verdict(self, **options)
        if not judged.passed:
            raise NotResilientError(judged)

    # ------------------------------------------------------------------ output

    def render(self, format: Literal["text", "svg"] = "text", *, title: str = "") -> str:
        """A human timeline: one line per event, each beginning with its type.

        ``format="svg"`` draws the run instead: one row per model and tool, attempts,
        faults and backoff waits on the time axis (see `pytest_agentfaults.runtime.timeline`).
        """
        if format == "svg":
            return render_svg(self.events, title=title)
        if format != "text":
            raise UsageError(f"render(format={format!r}): use 'text' or 'svg'")
        return "\n".join(event.describe() for event in self.events)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The events as JSON (``{"events": [...]}``); `from_json` reads it back."""
        payload = {"events": [e.model_dump(mode="json", exclude_none=True) for e in self.events]}
        return json.dumps(payload, indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        """Rebuild a trace written by `to_json`."""
        data = json.loads(text)
        items = data["events"] if isinstance(data, dict) else data
        return cls([Event.model_validate(item) for item in items])

    def clear(self) -> None:
        """Forget every event (for instance between the examples of a property test)."""
        self.events.clear()

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __getitem__(self, index: int) -> Event:
        return self.events[index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self.events == other.events

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<Trace {len(self.events)} events>"


def _label_matches(label: str, event: Event) -> bool:
    kind, _, tool = label.partition(":")
    if kind != event.type and not fnmatch.fnmatchcase(event.type, kind):
        return False
    return not tool or event.tool == tool
