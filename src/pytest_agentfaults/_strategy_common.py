"""What the strategies share: a value-or-strategy argument, and tools given by name or object."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ToolLike", "given_or", "one_or_many", "tool_names"]

T = TypeVar("T")

ToolLike = Tool[Any, Any] | str


def given_or(value: T | SearchStrategy[T] | None, default: SearchStrategy[T]) -> SearchStrategy[T]:
    """A strategy as given, a fixed value as `st.just`, None as the default strategy."""
    if value is None:
        return default
    if isinstance(value, SearchStrategy):
        return value
    return st.just(value)


def one_or_many(value: Any) -> list[Any]:
    """A list of ``value``'s items; a single str (or `Tool`) is one item, not its letters.

    ``tools="fetch"`` iterated as is would give the tools ``f``, ``e``, ``t`` ...: a plan
    whose faults never meet the tool, which a property test passes without a word.
    """
    if isinstance(value, str | Tool):
        return [value]
    return list(value)


def tool_names(tools: ToolLike | Iterable[ToolLike], where: str) -> list[str]:
    names: list[str] = []
    for item in one_or_many(tools):
        if isinstance(item, Tool):
            names.append(item.name)
        elif isinstance(item, str) and item:
            names.append(item)
        else:
            raise UsageError(
                f"{where}(tools=...): give tool names or af.Tool objects, got {item!r}"
            )
    return names
