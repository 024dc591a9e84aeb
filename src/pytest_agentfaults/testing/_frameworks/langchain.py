"""LangChain tools (``BaseTool`` subclasses, ``@tool`` functions, LangGraph's ``ToolNode``).

The hook point is the one call of the tool's own ``_run`` / ``_arun`` that
``BaseTool.run`` / ``BaseTool.arun`` make per attempt. ``invoke``, ``ainvoke``,
``with_retry`` and LangGraph's ``ToolNode`` all end there, and it sits inside the
``try`` of ``run`` / ``arun``: a fault raised there goes through LangChain's own
``handle_tool_error`` (for a ``ToolException``), the ``on_tool_error`` callbacks and
then ``ToolNode``'s ``handle_tool_errors``, exactly as the tool's own error would.

LangChain has no extension point that fits. Callbacks only observe (one raising in
``on_tool_start`` fails before that ``try``, so ``handle_tool_error`` never runs, and no
callback can stand in for the result); ``ToolNode``'s ``wrap_tool_call`` and an agent's
middleware are set per node by the app, and miss a tool invoked directly. So this is a
monkeypatch, the narrowest one found:

- ``BaseTool.run`` / ``BaseTool.arun`` are wrapped to mark, in a context variable, the
  tool whose attempt is starting, and to wrap the ``_run`` / ``_arun`` its class uses
  (on the class of the MRO that defines it, once per test);
- that wrapper makes the marked call go through `run_attempt` / `arun_attempt`, and
  clears the mark first, so a ``super()._run(...)`` or the executor thread that
  ``BaseTool._arun`` hands a sync tool to is the same attempt, not another one;
- a sync call of a tool built with only a ``coroutine`` is LangChain's own error
  (``NotImplementedError``), raised before the tool runs: no attempt, no fault.

The wrappers keep the wrapped function's signature (``functools.wraps``): ``run``
inspects ``_run`` for its ``run_manager`` and ``RunnableConfig`` parameters.
``install`` imports ``langchain_core`` (never at import of this module); its undo puts
every patched attribute back. A second install in the same process adds no layer over
the first one's (see ``_OURS``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, NoReturn

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._frameworks._core import (
    Site,
    arun_attempt,
    failure_text,
    run_attempt,
)
from pytest_agentfaults.testing._undo import raise_together, run_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["install"]

FRAMEWORK = "langchain"

# The tool whose `run` / `arun` is about to call its `_run` / `_arun` (that call is the
# attempt), and what LangChain said of the call. Cleared by the wrapped `_run` / `_arun`,
# so nested calls are not counted again.
_starting: ContextVar[tuple[object, Site] | None] = ContextVar(
    "agentfaults_langchain_tool", default=None
)

# Set on every function this module puts in place. A second install in the same process
# (pytester's in-process session inside a test that has one) finds ours and adds no layer:
# stacked lazy wraps would be undone out of order, and leave a stale one behind.
_OURS = "__agentfaults_langchain__"

# Keyword arguments LangChain adds to a tool's own: not the tool's input.
_NOT_INPUT = frozenset({"run_manager", "callbacks", "config"})


def install() -> Callable[[], None]:
    """Route every LangChain tool attempt through the active fault plan; return the undo."""
    from langchain_core.tools import BaseTool, ToolException  # noqa: PLC0415 - lazy by design

    patches = _Patches()

    def failure(tf: ToolFailure) -> NoReturn:
        __tracebackhide__ = True
        raise ToolException(failure_text(tf))

    original_run = BaseTool.__dict__.get("run")
    original_arun = BaseTool.__dict__.get("arun")
    if original_run is None or original_arun is None:
        raise Unhookable("LangChain's BaseTool has no run / arun of its own in this version")

    @functools.wraps(original_run)
    def run(tool: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        patches.wrap_method(type(tool), "_run", lambda f: _sync_attempt(f, failure))
        token = _starting.set((tool, _site(kwargs)))
        try:
            return original_run(tool, *args, **kwargs)
        finally:
            _starting.reset(token)

    @functools.wraps(original_arun)
    async def arun(tool: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        patches.wrap_method(type(tool), "_arun", lambda f: _async_attempt(f, failure))
        token = _starting.set((tool, _site(kwargs)))
        try:
            return await original_arun(tool, *args, **kwargs)
        finally:
            _starting.reset(token)

    patches.replace(BaseTool, "run", run)
    patches.replace(BaseTool, "arun", arun)
    return patches.undo


class _Patches:
    """The attributes this install replaced, to put back; safe from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._saved: dict[tuple[type, str], object] = {}

    def replace(self, owner: type, name: str, value: Callable[..., Any]) -> None:
        with self._lock:
            current = owner.__dict__[name]
            if getattr(current, _OURS, False):
                return  # another install's, which its own undo removes
            self._saved[(owner, name)] = current
            setattr(value, _OURS, True)
            setattr(owner, name, value)

    def wrap_method(
        self, cls: type, name: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
    ) -> None:
        """Wrap ``name`` where ``cls``'s MRO defines it, unless done already this install."""
        owner = next((c for c in cls.__mro__ if name in c.__dict__), None)
        if owner is None or (owner, name) in self._saved:
            return
        with self._lock:
            if (owner, name) in self._saved:
                return
            original = owner.__dict__[name]
            if getattr(original, _OURS, False):
                return  # wrapped by another install, which its own undo puts back
            if not callable(original) or isinstance(original, (staticmethod, classmethod)):
                return  # not a plain method: left alone, the attempt runs unobserved
            self._saved[(owner, name)] = original
            wrapped = wrap(original)
            setattr(wrapped, _OURS, True)
            setattr(owner, name, wrapped)

    def undo(self) -> None:
        with self._lock:
            saved, self._saved = self._saved, {}
        steps = [
            functools.partial(_put_back, owner, name, original)
            for (owner, name), original in reversed(saved.items())
        ]
        raise_together(run_all(steps), "undoing the LangChain adapter failed")


def _sync_attempt(
    original: Callable[..., Any], failure: Callable[[ToolFailure], NoReturn]
) -> Callable[..., Any]:
    @functools.wraps(original)
    def _run(tool: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        starting = _starting.get()
        if starting is None or starting[0] is not tool or _async_only(tool, original):
            return original(tool, *args, **kwargs)  # not an attempt, or LangChain refuses it
        name = str(getattr(tool, "name", "?"))
        token = _starting.set(None)
        ran = False

        def call() -> Any:
            nonlocal ran
            ran = True
            return original(tool, *args, **kwargs)

        try:
            result = run_attempt(
                FRAMEWORK, name, _tool_input(args, kwargs), call, failure, starting[1]
            )
        finally:
            _starting.reset(token)
        return result if ran else _in_place(tool, result)

    return _run


def _async_attempt(
    original: Callable[..., Any], failure: Callable[[ToolFailure], NoReturn]
) -> Callable[..., Any]:
    @functools.wraps(original)
    async def _arun(tool: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        starting = _starting.get()
        if starting is None or starting[0] is not tool:
            return await original(tool, *args, **kwargs)
        name = str(getattr(tool, "name", "?"))
        token = _starting.set(None)
        ran = False

        async def call() -> Any:
            nonlocal ran
            ran = True
            return await original(tool, *args, **kwargs)

        try:
            result = await arun_attempt(
                FRAMEWORK, name, _tool_input(args, kwargs), call, failure, starting[1]
            )
        finally:
            _starting.reset(token)
        return result if ran else _in_place(tool, result)

    return _arun


def _async_only(tool: Any, run: Callable[..., Any]) -> bool:
    """Whether LangChain's own ``_run`` refuses ``tool``: one built with only a coroutine.

    ``StructuredTool`` / ``Tool`` raise ``NotImplementedError`` in ``_run`` when they have
    no ``func``: the sync call never reaches the tool, so it is no attempt, and a fault
    must neither stand in for LangChain's error nor be spent on it.
    """
    return getattr(tool, "func", True) is None and str(getattr(run, "__module__", "")).startswith(
        "langchain_core."
    )


def _in_place(tool: Any, value: Any) -> Any:
    """A ``returns=`` value as the tool's own answer would be.

    A ``response_format="content_and_artifact"`` tool answers ``(content, artifact)``,
    and LangChain refuses anything else from it: a lone value is the content the model
    reads, with no artifact (the tool never ran); a pair is both.
    """
    if getattr(tool, "response_format", None) != "content_and_artifact":
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return value
    return (value, None)


def _site(run_kwargs: Mapping[str, Any]) -> Site:
    """What ``run`` / ``arun`` were told of the call: its id, and LangGraph's step.

    A ``ToolNode`` passes the model's tool call id and the graph's config, whose metadata
    holds the superstep (``langgraph_step``): the calls of one step are parallel, a call
    of a later step answers the errors before it, and the same id again is a retry.
    """
    call_id = run_kwargs.get("tool_call_id")
    metadata = run_kwargs.get("metadata")
    step = metadata.get("langgraph_step") if isinstance(metadata, Mapping) else None
    return Site(turn=step, call_id=call_id if isinstance(call_id, str) else None)


def _tool_input(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The tool's input as the ``tool.call`` event shows it, without LangChain's extras."""
    shown = {k: v for k, v in kwargs.items() if k not in _NOT_INPUT}
    if len(args) == 1:
        shown.setdefault("input", args[0])
    elif args:
        shown.setdefault("args", list(args))
    return shown


def _put_back(owner: type, name: str, original: object) -> None:
    """Restore ``original``, unless ours was replaced since: then its replacer restores."""
    if getattr(owner.__dict__.get(name), _OURS, False):
        setattr(owner, name, original)
