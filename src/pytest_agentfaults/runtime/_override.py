"""`Agent.override`: swap an agent's model, tools or instructions within a block.

The overrides in force live in one context variable, so a block affects only the code that
runs in its context: the thread or asyncio task that entered it (and tasks started from
it), never another test, thread or task. A run reads them once, when it starts.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._components import as_model, check_builtins, tool_table

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.agent import Agent
    from pytest_agentfaults.runtime.models.base import Model
    from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Override", "effective"]

# (agent, its overridden attributes) pairs, innermost last; agents compared by identity.
_Overrides = tuple[tuple["Agent[Any]", dict[str, Any]], ...]
A = TypeVar("A", bound="Agent[Any]")
_active: ContextVar[_Overrides] = ContextVar("agentfaults_agent_overrides", default=())


class Override:
    """The context manager `Agent.override` returns; ``with`` and ``async with`` both work."""

    __slots__ = ("_agent", "_changes", "_tokens")

    def __init__(
        self,
        agent: Agent[Any],
        model: Model | str | None,
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] | None,
        instructions: str | None,
    ) -> None:
        changes: dict[str, Any] = {}
        where = f"agent {agent.name!r}.override"
        if model is not None:
            try:
                changes["model"] = as_model(model)
            except UsageError as exc:
                raise UsageError(f"{where}(model=...): {exc}") from None
        if tools is not None:
            table = tool_table(tools)
            check_builtins(agent.builtin_tools, table)
            changes["tools"] = table
        if instructions is not None:
            if not isinstance(instructions, str):
                raise UsageError(
                    f"{where}(instructions={instructions!r}): give a str (or None to keep them)"
                )
            changes["instructions"] = instructions
        self._agent = agent
        self._changes = changes
        self._tokens: list[Token[_Overrides]] = []

    def __enter__(self) -> Agent[Any]:
        current = _active.get()
        merged = {**_changes_for(self._agent, current), **self._changes}
        self._tokens.append(_active.set((*current, (self._agent, merged))))
        return self._agent

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _active.reset(self._tokens.pop())

    async def __aenter__(self) -> Agent[Any]:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, traceback)


def _changes_for(agent: Agent[Any], overrides: _Overrides) -> dict[str, Any]:
    for overridden, changes in reversed(overrides):
        if overridden is agent:
            return changes
    return {}


def effective(agent: A) -> A:
    """``agent`` itself, or a shallow copy with the overrides in force in this context."""
    overrides = _active.get()
    if not overrides:
        return agent
    changes = _changes_for(agent, overrides)
    if not changes:
        return agent
    view = copy.copy(agent)
    for name, value in changes.items():
        setattr(view, name, value)
    if "tools" in changes:
        view.refresh_specs()
    return view
