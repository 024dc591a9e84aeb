"""What an `Agent` is built from, checked: model, tool table, built-ins, observers.

Shared by `Agent()`, `Agent.override` and the combinators.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Final

from pydantic import BeforeValidator

from pytest_agentfaults.errors import EscalationError, Severity, ToolExecutionError, UsageError
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.events import Observer
from pytest_agentfaults.runtime.models.base import Model
from pytest_agentfaults.runtime.models.resolve import resolve_model
from pytest_agentfaults.runtime.observers import named_observer
from pytest_agentfaults.runtime.tools import Tool, as_tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "BUILTIN_TOOLS",
    "as_model",
    "check_builtins",
    "fallback_model_of",
    "observers",
    "tool_table",
]


def _any_case(value: object) -> object:
    """A severity as a model may write it ("HIGH", "High"), as `Severity.parse` reads it."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _SEVERITIES:
            return lowered
    return value  # the schema's own check says what is wrong


_SEVERITIES: Final = frozenset(member.value for member in Severity)
#: the schema the model is shown stays the four lowercase values
AnyCaseSeverity = Annotated[Severity, BeforeValidator(_any_case)]


def _escalate(reason: str, severity: AnyCaseSeverity = Severity.MEDIUM) -> str:
    """Give up on the task and hand it back, with the reason and how serious it is."""
    raise EscalationError(reason, severity)


def _throw_exception(reason: str) -> str:
    """Stop everything: a failure that must not be retried or worked around."""
    raise ToolExecutionError(reason)


BUILTIN_TOOLS: Final[dict[str, Tool[Any, Any]]] = {
    "escalate": Tool(_escalate, name="escalate"),
    "throw_exception": Tool(_throw_exception, name="throw_exception"),
}


_SEQUENCES: Final = frozenset({list, tuple})


def as_model(model: Model | str) -> Model:
    """``model`` itself when it is an `af.Model`; a model string resolved to its client."""
    if isinstance(model, str):
        resolved: Model = resolve_model(model)
        return resolved
    has_sync = callable(getattr(model, "request", None))
    has_async = callable(getattr(model, "arequest", None))
    if not (has_sync or has_async):
        raise UsageError(
            f"model {model!r} is not an af.Model: it needs request(req) and/or arequest(req), "
            "or pass a string such as 'openai:gpt-4o-mini'"
        )
    return model


#: model strings resolved for a config's ``fallback_model``, by the config's id: (a weak
#: reference to the config, the string, its model). A config is hashed by its fields, and a
#: dict field is not hashable, hence the id; the entry leaves with its config.
_FALLBACKS: Final[dict[int, tuple[weakref.ref[Any], str, Model]]] = {}


def fallback_model_of(config: ResilienceConfig) -> Model:
    """``config.fallback_model`` as a model; a model string is resolved once per config.

    Resolved at each use, every run that fell back built a client (and a connection pool)
    of its own, which nobody closed.
    """
    fallback = config.fallback_model
    if not isinstance(fallback, str):
        return as_model(fallback)
    key = id(config)
    known = _FALLBACKS.get(key)
    if known is not None and known[0]() is config and known[1] == fallback:
        return known[2]
    model = as_model(fallback)
    gone = weakref.ref(config, lambda _: _FALLBACKS.pop(key, None))
    _FALLBACKS[key] = (gone, fallback, model)
    return model


def tool_table(tools: Iterable[Tool[Any, Any] | Callable[..., Any]]) -> dict[str, Tool[Any, Any]]:
    """The agent's tools by name, functions made into tools; two with one name are an error."""
    # A list or a tuple (what nearly every agent gets) skips the check through `Iterable`'s
    # ABC machinery.
    if tools.__class__ not in _SEQUENCES and (
        isinstance(tools, str | bytes) or not isinstance(tools, Iterable)  # type: ignore[unreachable]
    ):
        raise UsageError(f"tools must be a list of tools or functions, got {tools!r}")
    table: dict[str, Tool[Any, Any]] = {}
    for item in tools:
        made = as_tool(item)
        if made.name in table:
            raise UsageError(
                f"two tools are named {made.name!r}; give one of them another name with "
                "@af.tool(name=...)"
            )
        table[made.name] = made
    return table


def check_builtins(names: Iterable[str], tools: Mapping[str, Tool[Any, Any]]) -> tuple[str, ...]:
    """The built-in tools chosen by name, checked against `BUILTIN_TOOLS` and ``tools``."""
    if isinstance(names, str):
        names = (names,)
    chosen: list[str] = []
    for name in names:
        if name not in BUILTIN_TOOLS:
            raise UsageError(
                f"builtin_tools: unknown built-in {name!r}; the built-ins are "
                f"{', '.join(BUILTIN_TOOLS)}"
            )
        if name in tools:
            raise UsageError(
                f"builtin_tools: {name!r} is also the name of one of your tools; rename yours"
            )
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def observers(observer: str | Observer | None) -> tuple[Observer, ...]:
    """The observers an ``observer=`` argument names."""
    if observer is None:
        return ()
    if isinstance(observer, str):
        return (named_observer(observer),)
    if callable(observer):
        return (observer,)
    raise UsageError(
        f"observer must be None, 'progress', 'detailed' or a callable(Event), got {observer!r}"
    )
