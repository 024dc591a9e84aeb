"""Events and the `Trace`: the ordered record of everything a run did.

```python
result = agent.run("hi")
result.trace.retries("fetch")                        # 2
result.trace.assert_sequence("tool.error:fetch", "tool.retry:fetch", "tool.result:fetch")
print(result.trace.render())
```
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._event import KEPT, ErrorRecord, Event
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.snapshot import assert_matches_snapshot
from pytest_agentfaults.runtime.timeline import render_svg
from pytest_agentfaults.runtime.verdict import (
    RETRY_TYPES,
    NotResilientError,
    Verdict,
    check_options,
    verdict,
)

if TYPE_CHECKING:
    #: a tool as a question names it: its name, or the ``@af.tool`` itself
    ToolName = str | BaseTool[Any, Any]

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
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
# The kit records only these types, so a question about another one is a typo that would
# answer 0 or [] forever; one set lookup keeps the usual question as cheap as before.
_KNOWN_TYPES: Final = frozenset(EVENT_TYPES)
# The declared fields, and the extra fields the kit's own recorders write (HTTP attempts,
# retries, faults): a filter on any other name matches nothing, so it is refused, unless
# an event of the trace has it (the fields of an app's own events).
_DECLARED_FIELDS: Final = tuple(KEPT)
_EXTRA_FIELDS: Final = (
    "ambiguous",
    "body_sha",
    "client",
    "fault",
    "idempotent",
    "method",
    "model",
    "retry_after",
    "retry_after_date",
    "should_retry",
    "streamed",
    "unstreamed_body_sha",
    "url",
    "via",
)
_KNOWN_FIELDS: Final = frozenset(_DECLARED_FIELDS + _EXTRA_FIELDS)


Observer = Callable[[Event], object]


def _renumbered(event: Event, seq: int) -> Event:
    """A copy of ``event`` with another ``seq`` (for a trace that collects several runs)."""
    return Event.trusted({**event.__dict__, "seq": seq})


class Trace:
    """An ordered list of events with questions a test asks of it."""

    __slots__ = ("_buffered", "_tools", "events")

    def __init__(self, events: Sequence[Event] = ()) -> None:
        self.events: list[Event] = list(events)
        #: the tools of the agents whose runs this trace recorded (not in JSON: a trace
        #: read back knows none, and then answers any tool name)
        self._tools: set[str] = set()
        #: whether a parallel turn ever kept events for this trace aside (the recorder's
        #: `buffer_events`): only then may a context hold a buffer of its events
        self._buffered = False

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
        trace.of("tool.retry", tool="fetch")     # or tool=fetch, the @af.tool itself
        ```
        An event type or a field name the trace cannot have raises `UsageError`.
        """
        __tracebackhide__ = True
        return self._select("of", type, fields)

    def count(self, type: str | None = None, /, **fields: Any) -> int:
        """How many events `of` would return."""
        __tracebackhide__ = True
        return len(self._select("count", type, fields))

    def _select(self, where: str, type: str | None, fields: dict[str, Any]) -> list[Event]:
        __tracebackhide__ = True
        if type is None:
            chosen: list[Event] = list(self.events)
        elif isinstance(type, str) and type in _KNOWN_TYPES:
            chosen = [e for e in self.events if e.type == type]
        else:
            chosen = self._of_other_type(where, type)
        for name, given in fields.items():
            value = given
            if name not in _KNOWN_FIELDS:
                self._check_field(where, name, value)
            elif name == "tool" and value is not None and not isinstance(value, str):
                value = _tool_name(value, f"{where}(tool=...)")
            elif name == "tool" and value is not None and self._tools:
                self._check_tool(where, value)
            chosen = [e for e in chosen if e.field(name) == value]
        return chosen

    def _of_other_type(self, where: str, type: object) -> list[Event]:
        """Events of a type outside the kit's: a glob, or an app's own type in this trace."""
        __tracebackhide__ = True
        if not isinstance(type, str):
            raise UsageError(
                f"trace.{where}({type!r}): give an event type such as 'tool.retry' (a str), "
                f"got {_kind(type)}"
            )
        if _is_glob(type):
            chosen = [e for e in self.events if fnmatch.fnmatchcase(e.type, type)]
        else:
            chosen = [e for e in self.events if e.type == type]
        if not chosen:  # only an empty answer can come from a typo: check it then
            problem = self._unknown_type(type)
            if problem:
                raise UsageError(f"trace.{where}({type!r}): {problem}")
        return chosen

    def _unknown_type(self, kind: str) -> str:
        """Why ``kind`` names no event a trace can hold ("" when it names some)."""
        if kind in _KNOWN_TYPES:
            return ""
        if _is_glob(kind):
            if any(fnmatch.fnmatchcase(t, kind) for t in EVENT_TYPES) or any(
                fnmatch.fnmatchcase(e.type, kind) for e in self.events
            ):
                return ""
            return f"{kind!r} matches no event type; the event types are {', '.join(EVENT_TYPES)}"
        if any(e.type == kind for e in self.events):
            return ""  # an app's own event type, recorded in this trace
        close = difflib.get_close_matches(kind, EVENT_TYPES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"no event type {kind!r}{hint} (the event types are {', '.join(EVENT_TYPES)})"

    def _check_field(self, where: str, name: str, value: Any) -> None:
        """Refuse a filter on a field no event has (it would match nothing, silently)."""
        __tracebackhide__ = True
        if any(name in e.__dict__ for e in self.events):
            return  # an extra field of this trace's own events
        close = difflib.get_close_matches(name, _KNOWN_FIELDS, n=1)
        hint = f"; did you mean {close[0]}=?" if close else ""
        raise UsageError(
            f"trace.{where}(..., {name}={value!r}): events have no field {name!r}{hint} "
            f"(the fields are {', '.join(_DECLARED_FIELDS)}; extra fields the kit records: "
            f"{', '.join(_EXTRA_FIELDS)})"
        )

    def _check_tool(self, where: str, name: str) -> None:
        """Refuse a tool no agent of this trace had: it would count 0, silently."""
        __tracebackhide__ = True
        if name in self._tools:
            return
        seen = {e.tool for e in self.events if e.tool is not None}
        if name in seen or any(e.framework not in (None, "agentfaults") for e in self.events):
            return  # another framework's agents: their tools are not all known here
        names = sorted(self._tools | seen)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(
            f"trace.{where}(tool={name!r}): no agent of this trace has a tool {name!r}{hint} "
            f"(their tools: {', '.join(names)})"
        )

    def _named(self, where: str, type: str, tool: ToolName) -> list[Event]:
        """The ``type`` events of ``tool`` (a name or an ``@af.tool``)."""
        __tracebackhide__ = True
        return self._select(where, type, {"tool": _tool_name(tool, where)})

    def retries(self, tool: ToolName | None = None) -> int:
        """The number of ``tool.retry`` events (of ``tool``, a name or an ``@af.tool``).

        Tool retries only: the terminal summary's ``retries`` also counts the model's
        (``llm.retry``, see `count`).
        """
        __tracebackhide__ = True
        if tool is None:
            return self.count("tool.retry")
        return len(self._named("retries", "tool.retry", tool))

    def tool_attempts(self, tool: ToolName) -> int:
        """How many times ``tool`` was attempted (its ``tool.call`` events), in any framework.

        Retries included: a tool that failed twice and then worked was attempted 3 times.
        """
        __tracebackhide__ = True
        return len(self._named("tool_attempts", "tool.call", tool))

    def fixer_calls(self, tool: ToolName | None = None) -> list[Event]:
        """The ``fixer.call`` events (for ``tool`` when given)."""
        __tracebackhide__ = True
        if tool is None:
            return self.of("fixer.call")
        return self._named("fixer_calls", "fixer.call", tool)

    def escalations(self, tool: ToolName | None = None) -> list[Event]:
        """The ``escalation`` events (for ``tool`` when given)."""
        __tracebackhide__ = True
        if tool is None:
            return self.of("escalation")
        return self._named("escalations", "escalation", tool)

    def delays(self, tool: ToolName | None = None) -> list[float]:
        """The waits before retries, in order: of ``tool``'s retries, or of every retry."""
        __tracebackhide__ = True
        if tool is not None:
            events = self._named("delays", "tool.retry", tool)
        else:
            events = [e for e in self.events if e.type in RETRY_TYPES]
        return [e.delay for e in events if e.delay is not None]

    def errors(self, tool: ToolName | None = None) -> list[Event]:
        """The ``tool.error`` and ``llm.error`` events (only ``tool``'s when given)."""
        __tracebackhide__ = True
        if tool is not None:
            return self._named("errors", "tool.error", tool)
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
        if not expected:  # an empty sequence is in every trace: the assertion would be void
            raise UsageError(
                "trace.assert_sequence(): no labels to look for; give the events in the "
                "order they must occur, e.g. "
                "trace.assert_sequence('tool.error:fetch', 'tool.retry:fetch')"
            )
        for label in expected:
            problem = self._unknown_type(label.partition(":")[0])
            if problem:
                raise UsageError(f"trace.assert_sequence(..., {label!r}, ...): {problem}")
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
        missing = expected[position]
        lines.append(f"first missing: {missing!r} (after {position} matched)")
        tool = missing.partition(":")[2]
        tools = sorted({e.tool for e in self.events if e.tool})
        if tool and tool not in tools:  # a misspelt tool name, most likely: say so
            lines.append(
                f"no event of tool {tool!r} at all; the tools in the trace: "
                + (", ".join(tools) or "none")
            )
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
        __tracebackhide__ = True
        check_options("trace.verdict", options)
        return verdict(self, **options)

    def assert_resilient(self, **options: Any) -> None:
        """Raise `AssertionError` (a ``NotResilientError``) with the verdict's report.

        Takes the options of `verdict`, e.g. ``trace.assert_resilient(ignore=("no_backoff",))``.
        A trace in which nothing failed (no fault fired, no error, no retry, no failed HTTP
        attempt) fails too: no rule can judge it, and a pass would say nothing.
        """
        __tracebackhide__ = True
        check_options("trace.assert_resilient", options)
        judged = verdict(self, **options)
        if not judged.passed or not judged.judged:
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
        self._tools.clear()

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


def _is_glob(kind: str) -> bool:
    return "*" in kind or "?" in kind or "[" in kind


def _kind(value: object) -> str:
    return type(value).__name__


def _tool_name(tool: object, where: str) -> str:
    """``tool``'s name: a str as is, an ``@af.tool`` by its ``name``; anything else refused."""
    __tracebackhide__ = True
    if isinstance(tool, str):
        return tool
    if isinstance(tool, BaseTool) and isinstance(tool.name, str):
        return tool.name
    raise UsageError(
        f"trace.{where}: give a tool name (a str such as 'fetch') or an @af.tool, "
        f"got {tool!r} ({_kind(tool)})"
    )


def _label_matches(label: str, event: Event) -> bool:
    kind, _, tool = label.partition(":")
    if kind != event.type and not fnmatch.fnmatchcase(event.type, kind):
        return False
    return not tool or event.tool == tool
