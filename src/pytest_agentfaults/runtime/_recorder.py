"""Recording: the `Recorder` that stamps and stores a run's events, and `collecting`.

A run records into its own `Trace`; `collecting(trace)` also sends every event recorded in
the context to ``trace`` (the plugin's ``trace`` fixture), and `buffer_events` holds the
events of parallel tool calls until `_parallel` merges them in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults._redact import redact_value
from pytest_agentfaults.runtime._event import KEPT, redact, validated
from pytest_agentfaults.runtime._log import logger
from pytest_agentfaults.runtime._pending import PENDING, switch_on
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Observer, Trace

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import Clock

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Recorder",
    "active_collectors",
    "buffer_events",
    "close_aborted",
    "collecting",
    "new_run_id",
    "start_collecting",
]

# Fields that hold a name, an id or a status word, never free text (see `Recorder.emit`).
_NAME_FIELDS: Final = frozenset(
    {"tool", "call_id", "status", "severity", "method", "fault", "framework"}
)

# Field values that hold no text to redact, skipped without an `isinstance` (the hot path).
_NOT_CONTAINERS: Final = frozenset({int, float, bool, type(None), ErrorRecord})

# Per field, the classes of value that need neither redaction nor validation: the usual
# case, one lookup. A declared field's typed values (`KEPT`), but not str where the field
# holds text; for an extra field, numbers, None, a record (and str for a name field).
_DONE: Final[dict[str, frozenset[object]]] = {
    **{name: _NOT_CONTAINERS | {str} for name in _NAME_FIELDS},
    **{name: kept if name in _NAME_FIELDS else kept - {str} for name, kept in KEPT.items()},
}

#: the ``framework`` field of this runtime's tool events (other frameworks' tools have theirs)
_OURS: Final = "agentfaults"

# `Event.trusted`, inlined: an event is made here for every step of every run.
_new_event: Final = object.__new__

# What `collecting` set in this context, in one variable (one set and one reset a block):
# the traces that collect every event recorded here (the plugin's `trace` fixture), and
# the numbering of run ids of a ``fresh_run_ids`` block (None: the process-wide one).
_collecting: ContextVar[tuple[tuple[Trace, ...], Iterator[int] | None]] = ContextVar(
    "agentfaults_collecting", default=((), None)
)


# For `Tool.invoke`'s happy path, which switches a pending test on once for all its reads:
# ``(collectors, run numbering)`` of this context, read without a switch-on.
read_collecting: Final = _collecting.get


def active_collectors() -> tuple[Trace, ...]:
    """The traces collecting events in this context (empty: nothing records)."""
    collectors = _collecting.get()[0]
    if not collectors and switch_on():  # a test's first use of the runtime (`_pending`)
        collectors = _collecting.get()[0]
    return collectors


class collecting:
    """Also record every event of every run in this context into ``trace``.

    ``only=True``: into ``trace`` alone, the enclosing collectors sit out the context.
    ``fresh_run_ids=True`` numbers the runs started in the block from ``run-1``.
    """

    def __init__(self, trace: Trace, *, only: bool = False, fresh_run_ids: bool = False) -> None:
        self._trace = trace
        self._only = only
        self._fresh = fresh_run_ids
        self._set: list[tuple[ContextVar[Any], Token[Any]]] = []

    def __enter__(self) -> Trace:
        self._set = start_collecting(self._trace, only=self._only, fresh_run_ids=self._fresh)
        return self._trace

    def __exit__(self, *exc_info: object) -> None:
        set_, self._set = self._set, []
        for variable, token in reversed(set_):
            variable.reset(token)


def start_collecting(
    trace: Trace,
    *,
    only: bool = False,
    fresh_run_ids: bool = False,
    numbering: Iterator[int] | None = None,
) -> list[tuple[ContextVar[Any], Token[Any]]]:
    """What entering `collecting` does; returns each variable set, with its reset token.

    Also the plugin's per-test switch (`_test_context`); reset them last set first.
    ``numbering``: the fresh run ids' counter, when it goes on from an earlier block's
    (a test switched on in a second context: its runs are numbered as one).
    """
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    outer, run_ids = _collecting.get()
    if fresh_run_ids:
        # Runs started in the block are numbered from 1 (the plugin's per-test trace):
        # no id depends on what ran before in the process (same seed, same bytes).
        run_ids = itertools.count(1) if numbering is None else numbering
    collectors = (trace,) if only else (*outer, trace)
    return [(_collecting, _collecting.set((collectors, run_ids)))]


def collect_nothing() -> list[tuple[ContextVar[Any], Token[Any]]]:
    """No trace collects the runs of this context (code of no test's); reset to undo."""
    return [(_collecting, _collecting.set(((), None)))]


_run_ids = itertools.count(1)

# While the parallel tool calls of one turn run, each keeps its events here, per context:
# (the trace they belong to, [(event, recorder)]). `_parallel` merges them in order.
_buffer: ContextVar[tuple[Trace, list[tuple[Event, Recorder]]] | None] = ContextVar(
    "agentfaults_event_buffer", default=None
)


def buffer_events(trace: Trace) -> list[tuple[Event, Recorder]]:
    """Keep the events this context records into ``trace`` in a list, returned."""
    kept: list[tuple[Event, Recorder]] = []
    trace._buffered = True  # noqa: SLF001 - from now on its recorders look for a buffer
    _buffer.set((trace, kept))
    return kept


def new_run_id() -> str:
    """A short id: unique in a ``collecting(fresh_run_ids=True)`` block, else in the process."""
    scoped = _collecting.get()[1]
    return f"run-{next(scoped if scoped is not None else _run_ids)}"


class Recorder:
    """Stamps and stores the events of one run, and tells observers and collectors."""

    __slots__ = (
        "_collectors",
        "_observers",
        "_stamp",
        "agent",
        "clock",
        "parent_run_id",
        "run_id",
        "start",
        "trace",
    )

    # Positional or keyword: a run passes them in this order, since keywords given to a
    # class go through a dict of them (~450 instructions each), and every run makes one.
    def __init__(
        self,
        agent: str,
        clock: Clock,
        trace: Trace | None = None,
        observers: Sequence[Observer] = (),
        parent: Recorder | None = None,
        run_id: str | None = None,
    ) -> None:
        if parent is None and PENDING.get() is not None:
            switch_on()  # a test's first use of the runtime (`_pending`): its trace and ids
        self.agent = agent
        self.clock = clock
        self.run_id = run_id if run_id is not None else new_run_id()
        self.trace: Trace
        self.start: float
        if parent is not None:
            # A nested run (a fixer) writes into its parent's trace, on the parent's time axis.
            self.trace = parent.trace
            self.start = parent.start
            self.parent_run_id: str | None = parent.run_id
            self._observers: tuple[Observer, ...] = (*parent._observers, *observers)  # noqa: SLF001
            self._collectors: tuple[Trace, ...] = parent._collectors  # noqa: SLF001
        else:
            self.trace = trace if trace is not None else Trace()
            self.start = clock.now()
            self.parent_run_id = None
            self._observers = tuple(observers)
            # The traces that also get this run's events: not its own, which has them already.
            collectors = _collecting.get()[0]
            for collector in collectors:  # a loop, not a generator: every run under a test
                if collector is self.trace:
                    collectors = tuple(c for c in collectors if c is not self.trace)
                    break
            self._collectors = collectors
        # What `emit` copies for each event, made on its first use: most runs record only
        # the run's own events (`_keep`), which never need it.
        self._stamp: dict[str, Any] | None = None

    def emit(self, type: str, /, **fields: Any) -> Event:
        """Record one event now; returns it.

        Every text field is redacted here (``detail``, ``reason``, a ``url`` ...): this is
        where events are made, so nothing recorded holds a key. Names and ids (``tool``,
        ``call_id``, ``status`` ...) are not text and skip the scan: this is the hot path.
        A value whose class is not its field's type goes through pydantic's validator
        (``1`` becomes ``1.0`` for ``delay``; ``attempt="two"`` raises ``ValidationError``);
        the others are the values validation would return, and are kept as they are.
        """
        odd = type.__class__ is not str
        done, plain = _DONE.get, _NOT_CONTAINERS
        for key, value in fields.items():
            cls = value.__class__
            if cls in done(key, plain):
                continue
            if cls is str:  # `type` is the event's type here
                if key not in _NAME_FIELDS:
                    fields[key] = redact(value)
            elif cls not in _NOT_CONTAINERS and isinstance(value, dict | list):
                fields[key] = redact_value(value)
            allowed = KEPT.get(key)
            if allowed is not None and cls not in allowed:
                odd = True
        return self._record(type, fields, odd)

    def emit_known(self, type: str, fields: dict[str, Any], /) -> Event:
        """Record one event whose values are each of its field's type: `emit` unchecked.

        For events made where every value's type is known (a name, an id, a number, an
        `ErrorRecord`), as the HTTP layer's are. The only free text left to redact is
        ``detail``; the caller redacts any other. ``fields`` is the caller's to give up.
        """
        detail = fields.get("detail")
        if detail is not None:
            fields["detail"] = redact(detail)
        return self._record(type, fields, False)

    def _record(self, type: str, fields: dict[str, Any], odd: bool) -> Event:
        """Stamp ``fields`` (validated when ``odd``) as the next event, and store it."""
        trace = self.trace
        events = trace.events
        at = self.clock.now() - self.start
        stamp = self._stamp
        if stamp is None:
            # Every event `emit` records starts as a copy of this, its first six fields in
            # order, then type, seq and at overwritten: copying a dict of the final layout
            # and overwriting costs a third less than merging three dicts into a new one.
            stamp = self._stamp = {
                "run_id": self.run_id,
                "agent": self.agent,
                "parent_run_id": self.parent_run_id,
                "type": "",
                "seq": 0,
                "at": 0.0,
            }
        data = stamp.copy()
        data["type"] = type
        data["seq"] = len(events)
        data["at"] = at
        data.update(fields)
        event = _new_event(Event)
        event.__dict__ = validated(data) if odd or at.__class__ is not float else data
        buffer = _buffer.get() if trace._buffered else None  # noqa: SLF001
        if buffer is not None and buffer[0] is trace:
            buffer[1].append((event, self))  # a parallel call: merged in order later
            return event
        events.append(event)
        if self._collectors or self._observers:
            self._publish(event)
        return event

    # ------------------------------------------------------------------ the run's own events
    # The events every run records (a model turn, a tool attempt: a failed one records
    # three), each made field by field: its own fields, then `_keep` stamps it (run, type,
    # seq, time) and stores it, in one call. An event's fields are then kept in the instance
    # itself, not in a dict: half the cost of building a dict and dropping it (`__dict__`
    # makes one the first time something asks for it; dumps order the fields by their
    # declaration, not by when they were set). Their values are of their fields' types
    # (`KEPT`), and ``detail`` comes redacted.

    def run_start(self, detail: str, tools: Iterable[str] = ()) -> Event:
        """The ``run.start`` event; the traces learn the agent's ``tools`` (their names)."""
        event = _new_event(Event)
        event.detail = detail
        self.trace._tools.update(tools)  # noqa: SLF001 - the trace's own record of them
        for collector in self._collectors:
            collector._tools.update(tools)  # noqa: SLF001
        return self._keep(event, "run.start")

    def run_end(self, status: str, detail: str | None) -> Event:
        """The ``run.end`` event."""
        event = _new_event(Event)
        event.status = status
        event.detail = detail
        return self._keep(event, "run.end")

    def llm_request(self, attempt: int, detail: str) -> Event:
        """An ``llm.request`` event."""
        event = _new_event(Event)
        event.attempt = attempt
        event.detail = detail
        return self._keep(event, "llm.request")

    def llm_response(self, attempt: int, status: str | None, detail: str) -> Event:
        """An ``llm.response`` event."""
        event = _new_event(Event)
        event.attempt = attempt
        event.status = status
        event.detail = detail
        return self._keep(event, "llm.response")

    def tool_step(
        self,
        type: str,
        tool: str,
        call_id: str | None,
        attempt: int,
        detail: str,
        marks: dict[str, Any],
    ) -> Event:
        """A ``tool.call`` or ``tool.result`` event of this runtime's tool ``tool``."""
        event = _new_event(Event)
        event.tool = tool
        event.call_id = call_id
        event.attempt = attempt
        event.framework = _OURS
        event.detail = detail
        if marks:
            event.__dict__.update(marks)
        return self._keep(event, type)

    def tool_error(
        self,
        tool: str,
        call_id: str | None,
        attempt: int | None,
        error: ErrorRecord,
        marks: dict[str, Any],
    ) -> Event:
        """A ``tool.error`` event of this runtime's tool ``tool``."""
        event = _new_event(Event)
        event.tool = tool
        event.call_id = call_id
        event.framework = _OURS
        event.attempt = attempt
        event.error = error
        if marks:
            event.__dict__.update(marks)
        return self._keep(event, "tool.error")

    def tool_retry(
        self,
        tool: str,
        call_id: str | None,
        attempt: int,
        max_attempts: int,
        delay: float,
        error: ErrorRecord,
    ) -> Event:
        """A ``tool.retry`` event of this runtime's tool ``tool``."""
        event = _new_event(Event)
        event.tool = tool
        event.call_id = call_id
        event.framework = _OURS
        event.attempt = attempt
        event.max_attempts = max_attempts
        event.delay = delay
        event.error = error
        return self._keep(event, "tool.retry")

    def tool_fault(
        self,
        tool: str,
        call_id: str | None,
        attempt: int,
        status: str | None,
        detail: str,
        non_idempotent: bool,
    ) -> Event:
        """A ``tool.fault`` event: a fault the test kit injected into tool ``tool``."""
        event = _new_event(Event)
        event.tool = tool
        event.call_id = call_id
        event.attempt = attempt
        event.framework = _OURS
        event.status = status
        event.detail = detail
        if non_idempotent:
            event.__dict__["idempotent"] = False
        return self._keep(event, "tool.fault")

    def _keep(self, event: Event, type: str) -> Event:
        """Stamp ``event`` (its own fields set) as the next ``type`` event now, and store it.

        As `_record` does: its fields are validated when the clock's time is not a float.
        """
        trace = self.trace
        events = trace.events
        at = self.clock.now() - self.start
        event.run_id = self.run_id
        event.agent = self.agent
        event.parent_run_id = self.parent_run_id
        event.type = type
        event.seq = seq = len(events)
        event.at = at
        if at.__class__ is not float:
            event.__dict__ = validated(event.__dict__)
        buffer = _buffer.get() if trace._buffered else None  # noqa: SLF001
        if buffer is not None and buffer[0] is trace:
            buffer[1].append((event, self))  # a parallel call: merged in order later
            return event
        events.append(event)
        collectors = self._collectors
        if collectors:
            for collector in collectors:
                # `Trace.add`, inlined for a trace that numbers the event as its run did
                kept = collector.events
                if seq == len(kept) and collector.__class__ is Trace:
                    kept.append(event)
                else:
                    collector.add(event)
        if self._observers:
            self._observe(event)
        return event

    def deliver(self, event: Event) -> None:
        """Record an ``event`` this recorder made earlier (a buffered parallel call's)."""
        trace = self.trace
        buffer = _buffer.get() if trace._buffered else None  # noqa: SLF001
        if buffer is not None and buffer[0] is trace:
            buffer[1].append((event, self))
            return
        self._publish(trace.add(event))

    def _publish(self, event: Event) -> None:
        for collector in self._collectors:
            collector.add(event)
        self._observe(event)

    def _observe(self, event: Event) -> None:
        for observer in self._observers:
            try:
                observer(event)
            except Exception:
                # An observer must never break a run; the failure is logged, not hidden.
                logger.exception("observer %r raised on %s; the run goes on", observer, event.type)


def close_aborted(
    rec: Recorder | None,
    tool: str,
    call_id: str | None,
    attempt: int,
    exc: BaseException,
    marks: Any,
) -> None:
    """Answer an attempt's ``tool.call`` that ``exc`` interrupted: a ``tool.error`` "aborted".

    An interruption (KeyboardInterrupt, a cancelled task, SystemExit) or an error never
    recovered (a failed assertion, a UsageError, a budget cap) ends the run from inside
    the tool; the trace still closes the attempt before ``exc`` goes on. None: no events.
    """
    if rec is not None:
        record = ErrorRecord.from_exception(exc)
        record = ErrorRecord.trusted(record.type, record.message, "aborted", False)
        rec.tool_error(tool, call_id, attempt, record, marks)
