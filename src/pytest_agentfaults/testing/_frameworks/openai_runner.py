"""The openai SDK's own tool runner: faults at each ``RegisteredFunction``'s ``execute``.

``openai.lib.responses_tool_runner`` (``ResponsesToolRunner`` and its async twin) is the
official SDK's agent loop over the Responses API. It calls each registered function with
the model's arguments, one at a time or on its thread pool (``max_concurrent_calls``),
through its module's ``invoke(execute, arguments, cancelled=...)``. So each such call is one
attempt (`run_attempt` / `arun_attempt`, ``framework="openai"``), with the SDK's own
handling around it as for a real failure:

- ``raises=`` raises from inside ``execute``, as the function would: the runner reports it
  (``driver_failed``) and stops the run with ``ToolRunnerError``; the app runs again, or not;
- ``returns=af.ToolFailure(...)`` is the function's output: the failure's text, which the
  model reads (the runner has no error result of its own);
- ``returns=<value>`` is the function's result (a text, or input blocks).

The runners' ``_execute_function`` is hooked too, to know which call an ``invoke`` runs
(its name, arguments, call id and model turn: `Site`), so a later turn's call after a
failure is the model's retry, and a parallel call of the same turn is none. Computer and
browser actions are not functions and are not hooked (the Decisions runner's actions have
an adapter of their own: `openai_decisions`). Imported only by `install`, once the user
imported ``openai.lib.responses_tool_runner``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
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

FRAMEWORK: Final = "openai"


class _Call(NamedTuple):
    """The function call a runner is executing now, as its ``_execute_function`` saw it."""

    execute: object  # the registered function's executor, which ``invoke`` is handed
    name: str
    arguments: Mapping[str, Any] | None
    site: Site
    is_async: bool


#: the call the runner running in this context executes (its ``_execute_function`` hook)
_call: ContextVar[_Call | None] = ContextVar("agentfaults_openai_runner_call", default=None)


def install() -> Callable[[], None]:
    """Hook the runners' ``_execute_function`` and the module's ``invoke``; returns the undo."""
    from openai.lib import responses_tool_runner as module  # noqa: PLC0415 - openai is optional, loaded on use

    def hooks() -> Iterator[Hook]:
        for name, is_async in (("ResponsesToolRunner", False), ("AsyncResponsesToolRunner", True)):
            missing = f"openai's {name} has no _execute_function in this version"
            make = _async_execute if is_async else _sync_execute
            yield getattr(module, name, None), "_execute_function", make, missing
        missing = "openai's responses_tool_runner calls no invoke() in this version"
        yield module, "invoke", _invoke, missing

    return hook_all(hooks(), "the openai runner hooks")


def _sync_execute(original: Callable[..., Any]) -> Callable[..., Any]:
    def _execute_function(self: Any, run: Any, item: Any) -> Any:
        token = _call.set(_call_of(self, run, item, is_async=False))
        try:
            return original(self, run, item)
        finally:
            _call.reset(token)

    return _execute_function


def _async_execute(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _execute_function(self: Any, run: Any, item: Any) -> Any:
        token = _call.set(_call_of(self, run, item, is_async=True))
        try:
            return await original(self, run, item)
        finally:
            _call.reset(token)

    return _execute_function


def _invoke(original: Callable[..., Any]) -> Callable[..., Any]:
    def invoke(handler: Any, *args: Any, cancelled: Any) -> Any:
        __tracebackhide__ = True
        call = _call.get()
        if call is None or handler is not call.execute:  # not a registered function's call
            return original(handler, *args, cancelled=cancelled)
        attempt = run_attempt if not call.is_async else arun_attempt
        # async: the coroutine the runner awaits, as it awaits the function's own
        return attempt(
            FRAMEWORK,
            call.name,
            call.arguments,
            lambda: original(handler, *args, cancelled=cancelled),
            failure_text,  # a ToolFailure as the output: its text, which the model reads
            call.site,
        )

    return invoke


def _call_of(runner: Any, run: Any, item: Any, *, is_async: bool) -> _Call | None:
    """What ``runner`` is about to execute for ``item`` (None: what it cannot, its error)."""
    name = getattr(item, "name", None)
    call_id = getattr(item, "call_id", None)
    try:
        function = runner._functions[name]  # noqa: SLF001 - where the runner keeps them
        arguments = run.arguments[call_id]
    except (AttributeError, KeyError, TypeError):
        return None
    if not isinstance(arguments, Mapping):  # a typed function's pydantic model
        dump = getattr(arguments, "model_dump", None)
        arguments = dump() if callable(dump) else None
    turn = _Turn(run.arguments)
    site = Site(run=run, turn=turn, call_id=call_id if isinstance(call_id, str) else None)
    return _Call(getattr(function, "execute", None), str(name), arguments, site, is_async)


class _Turn:
    """One model turn of a run, told by the dict of arguments the run makes afresh for it.

    The calls of one turn (on the runner's pool) share it, so a call after a failed one of
    the same turn is not its retry; a later turn's call is the model's. Compared by
    identity, and holding the dict, whose id could otherwise be a later turn's.
    """

    __slots__ = ("arguments",)

    def __init__(self, arguments: object) -> None:
        self.arguments = arguments

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Turn) and other.arguments is self.arguments

    def __hash__(self) -> int:
        return id(self.arguments)
