"""The anthropic SDK's own tools: faults at ``@beta_tool`` / ``@beta_async_tool``'s ``call``.

``client.beta.messages.tool_runner(tools=[...])`` (the SDK's agent loop, streamed or not,
sync or async) runs each tool the model asks for by its ``call(input)``, and a loop of
the user's own that reads ``tool_use`` blocks calls it the same way. So each ``call`` of a
function tool is one attempt (`run_attempt` / `arun_attempt`, ``framework="anthropic"``):

- ``raises=`` raises from inside ``call``, as the tool would: the runner feeds it back to
  the model as an ``is_error`` tool result (and logs it), and the model may call again;
- ``returns=af.ToolFailure(...)`` raises the SDK's ``ToolError`` with the failure's text,
  which the runner sends as the ``is_error`` result's content;
- ``returns=<value>`` is the tool's result (a text, or content blocks, as a tool returns);
- input the SDK refuses before the tool runs (not an object, a required argument
  missing, a value of a kind its schema never reads) is traced but takes no fault.

The runner's ``_run_tool`` is hooked too, where it exists, for what only the runner knows
of an attempt (`Site`): the runner, its turn and the ``tool_use`` id, so a call the model
makes after a failed one is the model's retry. Toolsets (MCP, the agent toolset) are not
function tools and are not hooked. Imported only by `install`, once anthropic is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final, NoReturn

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.testing._frameworks._core import (
    Site,
    arun_attempt,
    failure_text,
    run_attempt,
)
from pytest_agentfaults.testing._frameworks._hook import Hook, hook_all
from pytest_agentfaults.testing._frameworks._refusals import refused_arguments

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "install"]

FRAMEWORK: Final = "anthropic"
_UNKNOWN: Final = Site()

#: what the runner running a tool now knows of the attempt (`_run_tool`'s hook sets it)
_site: ContextVar[Site] = ContextVar("agentfaults_anthropic_site", default=_UNKNOWN)


def install() -> Callable[[], None]:
    """Hook the function tools' ``call`` and the runners' ``_run_tool``; returns the undo."""
    from anthropic.lib.tools import _beta_functions, _beta_runner  # noqa: PLC0415 - anthropic is optional, loaded on use

    def hooks() -> Iterator[Hook]:
        for name, make in (
            ("BetaFunctionTool", _sync_call),
            ("BetaAsyncFunctionTool", _async_call),
        ):
            missing = f"anthropic's {name} has no call of its own in this version"
            yield _class(_beta_functions, name), "call", make, missing
        # the runners' Site is a refinement: a version without `_run_tool` still has faults
        for name, make in (("BaseSyncToolRunner", _sync_run), ("BaseAsyncToolRunner", _async_run)):
            yield _class(_beta_runner, name), "_run_tool", make, None

    return hook_all(hooks(), "the anthropic hooks")


def _sync_call(original: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, input: object) -> Any:
        __tracebackhide__ = True
        return run_attempt(
            FRAMEWORK,
            self.name,
            input if isinstance(input, Mapping) else None,
            lambda: original(self, input),
            _tool_error,
            _site.get(),
            faultable=not _refused(self, input),
        )

    return call


def _async_call(original: Callable[..., Any]) -> Callable[..., Any]:
    async def call(self: Any, input: object) -> Any:
        __tracebackhide__ = True
        return await arun_attempt(
            FRAMEWORK,
            self.name,
            input if isinstance(input, Mapping) else None,
            lambda: original(self, input),
            _tool_error,
            _site.get(),
            faultable=not _refused(self, input),
        )

    return call


def _sync_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def _run_tool(self: Any, tool: Any, tool_use: Any) -> Any:
        token = _site.set(_runner_site(self, tool_use))
        try:
            return original(self, tool, tool_use)
        finally:
            _site.reset(token)

    return _run_tool


def _async_run(original: Callable[..., Any]) -> Callable[..., Any]:
    async def _run_tool(self: Any, tool: Any, tool_use: Any) -> Any:
        token = _site.set(_runner_site(self, tool_use))
        try:
            return await original(self, tool, tool_use)
        finally:
            _site.reset(token)

    return _run_tool


def _runner_site(runner: Any, tool_use: Any) -> Site:
    """The runner, its turn (how many replies it has asked for) and the call's id."""
    call_id = getattr(tool_use, "id", None)
    return Site(
        run=runner,
        turn=getattr(runner, "_iteration_count", None),
        call_id=call_id if isinstance(call_id, str) else None,
    )


def _refused(tool: Any, input: object) -> bool:
    """Whether the SDK refuses ``input`` before the tool runs (it validates by the schema)."""
    if not isinstance(input, Mapping):
        return True  # "Input must be a dictionary"
    try:
        schema = tool.input_schema
    except Exception:
        return False
    return isinstance(schema, Mapping) and refused_arguments(schema, input)


def _tool_error(failure: ToolFailure) -> NoReturn:
    """An `af.ToolFailure` as the SDK's own ``ToolError``: the ``is_error`` result's content."""
    from anthropic.lib.tools import ToolError  # noqa: PLC0415 - anthropic is loaded by now

    raise ToolError(failure_text(failure))


def _class(module: Any, name: str) -> type[Any] | None:
    found = getattr(module, name, None)
    return found if isinstance(found, type) else None
