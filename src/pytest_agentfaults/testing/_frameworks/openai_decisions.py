"""The openai SDK's Decisions runner: faults at each execution of a chosen action.

``openai.lib.decisions_tool_runner`` (``DecisionsToolRunner`` and its async twin) asks the
model at each step to choose one of the caller's candidates (``client.decisions.create``)
and executes the chosen action's ``execute()`` through its module's
``invoke(execute, cancelled=...)``: no arguments, and its result unread (the next step
observes the world afresh). So each such execution is one attempt (`run_attempt` /
`arun_attempt`, ``framework="openai"`` as the SDK's other runner, the fault's name the
candidate's ``id``), with the SDK's own handling around it as for a real action:

- ``raises=`` raises from inside ``execute``, as the action would: the runner reports it
  (``driver_failed``) and stops with ``DecisionsToolRunnerError("failed")``, the candidate
  attempted and not completed (an ``asyncio.CancelledError``: its cancelled error);
- ``returns=af.ToolFailure(...)`` is what the action returned (the failure's text), and
  ``returns=<value>`` that value: either way the action did not run, and the runner, which
  reads no result, counts the step completed. The model learns of it only from what
  ``observe()`` shows next (the world unchanged), and choosing the action again in a
  later step is its retry.

Three things are hooked: the runners' ``run``, to scope what this module keeps to one run
(a context variable, reset as the run ends); ``_Run.select``, to know which candidate the
model chose (its id, its ``execute``, the step: `Site`), and ``invoke``, to make the
attempt. A candidate chosen as done runs nothing and takes no fault. Imported only by
`install`, once the user imported ``openai.lib.decisions_tool_runner``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Final, NamedTuple

from pytest_agentfaults.testing._frameworks._core import (
    Site,
    arun_attempt,
    failure_text,
    run_attempt,
)
from pytest_agentfaults.testing._frameworks._hook import Hook, hook_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "install"]

#: one name per SDK: its Responses runner's functions and its Decisions runner's actions
FRAMEWORK: Final = "openai"


class _Choice(NamedTuple):
    """The action the model chose at one step of a run, as ``_Run.select`` returned it."""

    run: object  # the SDK's per-run state (``_Run``): another run is no retry of this one
    id: str
    execute: object  # what ``invoke`` is handed to execute it
    step: int  # the model's decisions so far in the run: a later step's choice is its retry


class _Running:
    """One run of a Decisions runner in this context: the action it is about to execute."""

    __slots__ = ("choice", "is_async")

    def __init__(self, *, is_async: bool) -> None:
        self.is_async = is_async
        self.choice: _Choice | None = None


#: the run of a Decisions runner going on in this context (its ``run`` hook)
_running: ContextVar[_Running | None] = ContextVar("agentfaults_openai_decisions", default=None)


def install() -> Callable[[], None]:
    """Hook the runners' ``run``, ``_Run.select`` and the module's ``invoke``; returns the undo."""
    from openai.lib import decisions_tool_runner as module  # noqa: PLC0415 - openai is optional, loaded on use

    def hooks() -> Iterator[Hook]:
        for name, is_async in (("DecisionsToolRunner", False), ("AsyncDecisionsToolRunner", True)):
            make = _async_run if is_async else _sync_run
            yield getattr(module, name, None), "run", make, f"openai's {name} has no run"
        missing = "openai's Decisions runner keeps no _Run.select in this version"
        yield getattr(module, "_Run", None), "select", _select, missing
        missing = "openai's decisions_tool_runner calls no invoke() in this version"
        yield module, "invoke", _invoke, missing

    return hook_all(hooks(), "the openai Decisions runner hooks")


def _sync_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        token = _running.set(_Running(is_async=False))
        try:
            return original(self, *args, **kwargs)
        finally:
            _running.reset(token)

    return run


def _async_run(original: Callable[..., Any]) -> Callable[..., Any]:
    async def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        token = _running.set(_Running(is_async=True))
        try:
            return await original(self, *args, **kwargs)
        finally:
            _running.reset(token)

    return run


def _select(original: Callable[..., Any]) -> Callable[..., Any]:
    def select(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        chosen = original(self, *args, **kwargs)
        running = _running.get()
        if running is not None:
            running.choice = _choice_of(self, chosen)
        return chosen

    return select


def _invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    def invoke(handler: Any, *args: Any, cancelled: Any) -> Any:
        __tracebackhide__ = True
        running = _running.get()
        choice = None if running is None else running.choice
        if running is None or choice is None or handler is not choice.execute or args:
            return original(handler, *args, cancelled=cancelled)  # not a chosen action
        running.choice = None  # executed once: the next step chooses again
        if not running.is_async and _is_async(handler):
            # the sync runner refuses what returns an awaitable: no action ran
            return original(handler, cancelled=cancelled)
        attempt = arun_attempt if running.is_async else run_attempt
        # async: the coroutine the runner awaits, as it awaits the action's own
        return attempt(
            FRAMEWORK,
            choice.id,
            {},  # an action takes no arguments
            lambda: original(handler, cancelled=cancelled),
            failure_text,  # a ToolFailure as the output: its text, which the model reads
            Site(run=choice.run, turn=choice.step),
        )

    return invoke


def _choice_of(run: Any, chosen: Any) -> _Choice | None:
    """The action ``_Run.select`` returned, ``(candidate, usage)`` (None: a refusal, done)."""
    candidate = chosen[0] if isinstance(chosen, tuple) and chosen else None
    name = getattr(candidate, "id", None)
    execute = getattr(candidate, "execute", None)
    if not isinstance(name, str) or execute is None or getattr(candidate, "done", False):
        return None
    decisions = getattr(run, "decisions", None)
    step = len(decisions) if isinstance(decisions, list) else 0
    return _Choice(run, name, execute, step)


def _is_async(handler: Any) -> bool:
    """Whether ``handler`` is known to return an awaitable (an ``async def``, or its object)."""
    target = inspect.unwrap(handler)
    if inspect.iscoroutinefunction(target):
        return True
    call = getattr(type(target), "__call__", None)  # noqa: B004 - a callable object's method
    return not inspect.isroutine(target) and inspect.iscoroutinefunction(call)
