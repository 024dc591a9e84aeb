"""`Event` and `ErrorRecord`: plain classes with pydantic at the edges.

A run records 8 to 16 events, so making one is on the hot path of every run. A pydantic
``BaseModel`` costs 1.3 to 3 us to build whatever the route (its validator fills 20
defaults and the extra-field dict; ``model_construct`` is slower still), which was half
the cost of a whole agent run. So events are plain classes:

- an event keeps in its ``__dict__`` only the fields it was given (the class holds the
  defaults), which is also `model_fields_set`; extra fields sit beside them;
- ``Event(...)``, `model_validate` and JSON go through ONE pydantic `TypeAdapter` over the
  fields (a ``TypedDict`` with ``extra="allow"``): wrong types are refused, ``1`` becomes
  ``1.0`` for a float field, exactly as the former model did;
- `model_dump`, `model_dump_json`, `model_copy`, `model_extra`, equality and ``repr``
  behave as pydantic's do, and the class has a pydantic core schema, so an ``Event`` (or
  an ``ErrorRecord``) is a valid field type in a pydantic model;
- the runtime's `Recorder` makes events through `Event.trusted`, which validates only the
  values whose class is not already the field's type (see `untyped`).

Writing pydantic's private slots would be as fast; it is not allowed (issue 15).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal, Required, cast

from pydantic import ConfigDict, GetCoreSchemaHandler, TypeAdapter, with_config
from pydantic_core import core_schema
from typing_extensions import TypedDict

from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import kind_and_retryable

if TYPE_CHECKING:
    from collections.abc import Iterator

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["KEPT", "ErrorRecord", "Event", "redact", "validated"]

_PUBLIC: Final = "pytest_agentfaults.runtime.events"

# `redact_text`, remembered: runs record the same few texts again and again (a tool's
# arguments on each attempt, "tool calls: fetch", an error's message), and the scan costs
# more than the lookup. A pure function's results, bounded: it never grows with the process.
redact: Final = functools.lru_cache(maxsize=1024)(redact_text)
_DumpMode = Literal["json", "python"]


def _schema(
    cls: type, fields: core_schema.CoreSchema, make: Any, dump: Any
) -> core_schema.CoreSchema:
    """A core schema: an instance as is, or a dict of fields validated into one.

    It dumps an instance as its fields (``model_dump``), so a pydantic model may hold one.
    """
    build = core_schema.no_info_after_validator_function(make, fields)
    return core_schema.json_or_python_schema(
        json_schema=build,
        python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), build]),
        serialization=core_schema.plain_serializer_function_ser_schema(
            dump,
            return_schema=fields,
        ),
    )


class ErrorRecord:
    """An error as a trace keeps it: type name, message (redacted), kind, retryability."""

    __slots__ = ("kind", "message", "retryable", "type")

    type: str
    message: str
    kind: str
    retryable: bool

    def __init__(self, **data: Any) -> None:
        valid = _ERROR_FIELDS.validate_python(data)
        _fill(self, valid["type"], valid["message"], valid["kind"], valid["retryable"])

    @classmethod
    def trusted(cls, type: str, message: str, kind: str, retryable: bool) -> ErrorRecord:
        """A record from values of the right types (the runtime's), without validation."""
        record = object.__new__(cls)
        _fill(record, type, message, kind, retryable)
        return record

    @classmethod
    def from_exception(cls, exc: BaseException | Any, *, tool: str | None = None) -> ErrorRecord:
        """Record ``exc`` (an exception or a `ToolFailure`) as `classify` sees it."""
        kind, retryable = kind_and_retryable(exc)
        if isinstance(exc, BaseException):
            name, message = type(exc).__name__, exception_text(exc)
        else:
            name, message = "ToolFailure", str(getattr(exc, "error", exc))
        # `trusted`, inlined: every failed tool attempt is recorded here
        record = object.__new__(cls)
        _set_type(record, name)
        _set_message(record, redact(message))
        _set_kind(record, kind)
        _set_retryable(record, retryable)
        return record

    # ------------------------------------------------------------------ pydantic's API

    @classmethod
    def model_validate(cls, obj: Any) -> ErrorRecord:
        """A record from a dict (validated), or ``obj`` itself when it is one."""
        return (
            obj
            if isinstance(obj, ErrorRecord)
            else _error_record(_ERROR_FIELDS.validate_python(obj))
        )

    def model_dump(self, *, mode: _DumpMode = "python", **options: Any) -> dict[str, Any]:
        """The four fields as a dict."""
        return _ERROR_FIELDS.dump_python(self._fields(), mode=mode, **options)  # type: ignore[no-any-return]

    def model_dump_json(self, **options: Any) -> str:
        """The four fields as JSON."""
        return _ERROR_FIELDS.dump_json(self._fields(), **options).decode()

    def _fields(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "message": self.message,
            "kind": self.kind,
            "retryable": self.retryable,
        }

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return _schema(cls, handler.generate_schema(_ErrorFields), _error_record, cls._fields)

    # ------------------------------------------------------------------ a frozen value

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"ErrorRecord is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not ErrorRecord:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.type, self.message, self.kind, self.retryable))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"ErrorRecord({shown})"

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    def __reduce__(self) -> tuple[Any, ...]:
        return (ErrorRecord.trusted, (self.type, self.message, self.kind, self.retryable))


def _fill(record: ErrorRecord, type: str, message: str, kind: str, retryable: bool) -> None:
    _set_type(record, type)
    _set_message(record, message)
    _set_kind(record, kind)
    _set_retryable(record, retryable)


_Setter = Callable[[ErrorRecord, Any], None]
# The slots' own setters: a frozen record is written once, here, past its __setattr__.
_set_type: Final[_Setter] = ErrorRecord.__dict__["type"].__set__
_set_message: Final[_Setter] = ErrorRecord.__dict__["message"].__set__
_set_kind: Final[_Setter] = ErrorRecord.__dict__["kind"].__set__
_set_retryable: Final[_Setter] = ErrorRecord.__dict__["retryable"].__set__


def _error_record(fields: Any) -> ErrorRecord:
    return ErrorRecord.trusted(
        fields["type"], fields["message"], fields["kind"], fields["retryable"]
    )


class _ErrorFields(TypedDict):
    type: str
    message: str
    kind: str
    retryable: bool


_ERROR_FIELDS: Final = cast("TypeAdapter[dict[str, Any]]", TypeAdapter(_ErrorFields))


class Event:
    """One thing that happened in a run. JSON-serialisable; extra fields are kept.

    ``Event(type=..., ...)`` validates its fields as a pydantic model does; `model_dump`,
    `model_dump_json`, `model_validate`, `model_copy` and `model_extra` work as pydantic's,
    and a pydantic model may have ``Event`` fields. It is not a ``BaseModel`` subclass:
    runs make one per step, and a plain class is 5-10x cheaper to build.
    """

    type: str
    seq: int = 0
    at: float = 0.0
    run_id: str = ""
    agent: str = ""
    parent_run_id: str | None = None
    tool: str | None = None
    call_id: str | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    delay: float | None = None
    error: ErrorRecord | None = None
    reason: str | None = None
    severity: str | None = None
    status: str | int | None = None
    detail: str | None = None
    #: whose tool a ``tool.*`` event is about: ``"agentfaults"`` (our runtime),
    #: ``"pydantic_ai"``, ``"langchain"``, ``"openai_agents"``, ``"mcp"``, ``"anthropic"``,
    #: ``"google_genai"``, ``"openai"`` (the SDK's tool runner) or ``"function"``
    framework: str | None = None
    #: an ``http.request``'s ``x-stainless-retry-count`` (the official SDKs send it): 0 for the
    #: first attempt; the same number `llm_server.requests[i].retry_count` gives
    retry_count: int | None = None

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, **data: Any) -> None:
        self.__dict__.update(_EVENT_FIELDS.validate_python(data))

    @classmethod
    def trusted(cls, data: dict[str, Any]) -> Event:
        """An event holding ``data`` (taken, not copied): the runtime's fast path.

        Every value must already be what validation would make of it (`KEPT` says
        which classes are; the `Recorder` validates the others).
        """
        event = object.__new__(cls)
        event.__dict__ = data
        return event

    # ------------------------------------------------------------------ pydantic's API

    @property
    def model_fields_set(self) -> set[str]:
        """The declared fields this event was given (the others hold their defaults)."""
        return {name for name in self.__dict__ if name in _ORDER}

    @property
    def model_extra(self) -> dict[str, Any]:
        """The fields beyond the declared ones."""
        return {name: v for name, v in self.__dict__.items() if name not in _ORDER}

    @classmethod
    def model_validate(cls, obj: Any) -> Event:
        """An event from a dict (validated), or ``obj`` itself when it is an event."""
        if isinstance(obj, Event):
            return obj
        return cls.trusted(_EVENT_FIELDS.validate_python(obj))

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Event:
        """An event from its JSON."""
        return cls.trusted(_EVENT_FIELDS.validate_json(text))

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON schema of an event."""
        return _EVENT_FIELDS.json_schema()

    def model_dump(
        self,
        *,
        mode: _DumpMode = "python",
        exclude_unset: bool = False,
        exclude_defaults: bool = False,
        **options: Any,
    ) -> dict[str, Any]:
        """The event as a dict, as ``BaseModel.model_dump`` gives it (same options)."""
        fields = self._values(exclude_unset=exclude_unset, exclude_defaults=exclude_defaults)
        return _EVENT_FIELDS.dump_python(fields, mode=mode, **options)  # type: ignore[no-any-return]

    def model_dump_json(
        self, *, exclude_unset: bool = False, exclude_defaults: bool = False, **options: Any
    ) -> str:
        """The event as JSON, as ``BaseModel.model_dump_json`` gives it (same options)."""
        fields = self._values(exclude_unset=exclude_unset, exclude_defaults=exclude_defaults)
        return _EVENT_FIELDS.dump_json(fields, **options).decode()

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Event:
        """A copy (``update`` values are not validated, as in pydantic)."""
        data = dict(self.__dict__)
        if deep:
            data = copy.deepcopy(data)
        if update:
            data.update(update)
        return Event.trusted(data)

    def _values(self, *, exclude_unset: bool = False, exclude_defaults: bool = False) -> Any:
        given = self.__dict__
        if exclude_unset:
            return {k: given[k] for k in _ORDER if k in given} | self.model_extra
        values = {**_ORDER, **given}
        if exclude_defaults:
            values = {k: v for k, v in values.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}
        return values

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return _schema(cls, handler.generate_schema(_EventFields), cls.trusted, cls._values)

    # ------------------------------------------------------------------ a value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return bool(self._values() == other._values())

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._values().items())

    def __repr__(self) -> str:
        return f"Event({', '.join(f'{k}={v!r}' for k, v in self._values().items())})"

    # ------------------------------------------------------------------ reading

    def label(self) -> str:
        """``type`` or ``type:tool``, the form `Trace.assert_sequence` matches."""
        return f"{self.type}:{self.tool}" if self.tool else self.type

    def field(self, name: str) -> Any:
        """A field by name, extra fields included; None when absent."""
        given = self.__dict__
        return given[name] if name in given else _DEFAULTS.get(name)

    def describe(self) -> str:
        """One line: type first, then what matters about this event."""
        parts = [f"{self.type:<15}", f"t={self.at:8.3f}s", f"[{self.agent}]"]
        if self.tool:
            parts.append(self.tool)
        if self.attempt is not None:
            of = f"/{self.max_attempts}" if self.max_attempts is not None else ""
            parts.append(f"attempt {self.attempt}{of}")
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.delay is not None:
            parts.append(f"delay={self.delay:.3f}s")
        if self.error is not None:
            parts.append(str(self.error))
        if self.reason is not None:
            parts.append(f"reason={self.reason!r}")
        if self.severity is not None:
            parts.append(f"severity={self.severity}")
        if self.detail:
            parts.append(self.detail)
        return " ".join(parts)


@with_config(ConfigDict(extra="allow"))
class _EventFields(TypedDict, total=False):
    type: Required[str]
    seq: int
    at: float
    run_id: str
    agent: str
    parent_run_id: str | None
    tool: str | None
    call_id: str | None
    attempt: int | None
    max_attempts: int | None
    delay: float | None
    error: ErrorRecord | None
    reason: str | None
    severity: str | None
    status: str | int | None
    detail: str | None
    framework: str | None
    retry_count: int | None


# The declared fields in order, with their defaults (``type`` has none: it is required).
_DEFAULTS: Final[dict[str, Any]] = {
    name: getattr(Event, name, None) for name in _EventFields.__annotations__
}
_DEFAULTS.pop("type")
# Every declared field in order, with its default: dumps list the fields in this order.
_ORDER: Final[dict[str, Any]] = {"type": None, **_DEFAULTS}

# The one adapter: validates fields (Event(...), model_validate, JSON) and dumps them.
_EVENT_FIELDS: Final = cast("TypeAdapter[dict[str, Any]]", TypeAdapter(_EventFields))

_NONE: Final = type(None)
_STR: Final = frozenset({str, _NONE})
_INT: Final = frozenset({int, _NONE})
# The classes validation returns unchanged, per declared field (bool is not an int here:
# pydantic turns True into 1, so a bool goes through the validator).
KEPT: Final[dict[str, frozenset[object]]] = {
    "type": frozenset({str}),
    "seq": frozenset({int}),
    "at": frozenset({float}),
    "run_id": frozenset({str}),
    "agent": frozenset({str}),
    "parent_run_id": _STR,
    "tool": _STR,
    "call_id": _STR,
    "attempt": _INT,
    "max_attempts": _INT,
    "delay": frozenset({float, _NONE}),
    "error": frozenset({ErrorRecord, _NONE}),
    "reason": _STR,
    "severity": _STR,
    "status": frozenset({str, int, _NONE}),
    "detail": _STR,
    "framework": _STR,
    "retry_count": _INT,
}


def _share_field_names() -> None:
    """Make every declared field one of the names ``Event`` instances share, at import.

    CPython 3.11+ keeps an instance's attributes in an array laid out by names its class
    shares, and an attribute store on the hot path is specialised only for a shared name.
    The class stops taking new names after a few dozen instances, so which names get in
    would depend on which events a process made first (a happy run first: no ``delay``, no
    ``error``, and each ``tool.retry`` of a later failing run builds a dict). One instance
    given every declared field, first, settles it.
    """
    first = object.__new__(Event)
    for name in _ORDER:
        setattr(first, name, None)


_share_field_names()


def validated(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` as validation makes them (raises pydantic's `ValidationError`)."""
    return _EVENT_FIELDS.validate_python(fields)


for _cls in (Event, ErrorRecord):
    _cls.__module__ = _PUBLIC
