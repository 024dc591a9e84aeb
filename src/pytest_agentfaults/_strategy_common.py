"""What the strategies share: a value-or-strategy argument, and tools given by name or object."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._fakes_foreign import read_tool
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ToolLike", "given_or", "one_or_many", "tool_names"]

T = TypeVar("T")

#: a tool's name, an ``af.Tool``, or another framework's tool (see `_fakes_foreign`)
ToolLike = Tool[Any, Any] | str | Any


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
    if isinstance(value, str | Tool) or hasattr(value, "name") or callable(value):
        return [value]  # one tool (a LangChain tool, a pydantic model, iterates its fields)
    return list(value)


def tool_names(tools: ToolLike | Iterable[ToolLike], where: str) -> list[str]:
    names: list[str] = []
    for item in one_or_many(tools):
        if isinstance(item, Tool):
            names.append(item.name)
        elif isinstance(item, str) and item:
            names.append(item)
        elif not isinstance(item, str | Mapping) and (hasattr(item, "name") or callable(item)):
            found = read_tool(item)  # another framework's tool, or a function
            names.append(found.name if isinstance(found, Tool) else found[0])
        else:
            raise UsageError(
                f"{where}(tools=...): give tool names, af.Tool objects or other frameworks' "
                f"tools (a function, a LangChain or pydantic-ai tool ...), got {item!r}"
            )
    return names
