"""pydantic-ai: tool faults at its toolsets' ``call_tool``, the method every tool call goes through.

pydantic-ai runs a tool by asking the run's toolset ``call_tool(name, args, ctx, tool)``;
wrapper toolsets (prefixed, renamed, filtered, combined) pass the call down to the toolset
that owns the tool: a `FunctionToolset` (``tools=[...]``, ``@agent.tool``, a
``FunctionToolset([...])`` given as ``toolsets=``) or an MCP server's `MCPToolset`. Those
two are hooked, so each attempt is one `arun_attempt`:

- ``raises=`` raises from inside ``call_tool``, as the tool would: a ``ModelRetry`` goes
  through the tool's ``retries`` and back to the model, any other exception takes
  pydantic-ai's own path for it (it ends the run unless a capability handles it);
- ``returns=af.ToolFailure(...)`` raises ``ModelRetry`` with the failure's text;
- ``returns=<value>`` is the tool's result;
- ``delay=`` moves the test's virtual clock; a toolset ``timeout=`` runs on anyio's real
  clock, which the virtual clock does not move, so it does not see the delay.

The name a fault matches is the tool's own name, before a prefixed or renamed toolset (or
a tool's ``prepare`` function) changes what the model sees. Imported only by `install`,
once pydantic-ai is imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._frameworks._core import Site, arun_attempt, failure_text
from pytest_agentfaults.testing._frameworks._refusals import refused_arguments
from pytest_agentfaults.testing._undo import raise_together, run_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "install"]

FRAMEWORK: Final = "pydantic_ai"
_HOOKED: Final = "__agentfaults_hook__"


def install() -> Callable[[], None]:
    """Hook the function and MCP toolsets' ``call_tool``; returns the undo."""
    from pydantic_ai.toolsets.function import FunctionToolset  # noqa: PLC0415 - pydantic-ai is optional, loaded on use

    owners: list[type[Any]] = [FunctionToolset]
    mcp = sys.modules.get("pydantic_ai.mcp")  # only when the test process imported it
    toolset = getattr(mcp, "MCPToolset", None)
    if isinstance(toolset, type):
        owners.append(toolset)
    undos = [_hook(owner, required=owner is FunctionToolset) for owner in owners]

    def undo() -> None:
        steps, undos[:] = list(reversed(undos)), []
        raise_together(run_all(steps), "undoing the pydantic-ai hooks failed")

    return undo


def _hook(owner: type[Any], *, required: bool) -> Callable[[], None]:
    original = owner.__dict__.get("call_tool")
    if original is None and required:
        raise Unhookable(
            f"pydantic-ai's {owner.__name__} has no call_tool of its own in this version"
        )
    if original is None or getattr(original, _HOOKED, False):
        return _nothing  # not its own method, or hooked already (an enclosing session)

    async def call_tool(
        self: Any, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any
    ) -> Any:
        __tracebackhide__ = True
        return await arun_attempt(
            FRAMEWORK,
            _own_name(name, tool),
            tool_args,
            lambda: original(self, name, tool_args, ctx, tool),
            _model_retry,
            _site(ctx),
            faultable=required or not _refused(tool, tool_args),
        )

    setattr(call_tool, _HOOKED, True)
    call_tool.__doc__ = original.__doc__
    call_tool.__wrapped__ = original  # type: ignore[attr-defined]
    owner.call_tool = call_tool

    def undo() -> None:
        if owner.__dict__.get("call_tool") is call_tool:
            owner.call_tool = original

    return undo


def _refused(tool: Any, tool_args: dict[str, Any]) -> bool:
    """Whether an MCP toolset's server surely refuses these arguments before its tool runs.

    pydantic-ai checks an MCP tool's arguments only for being an object: the server
    checks them against the schema the tool was listed with (`refused_arguments`). A
    function tool's arguments are checked before ``call_tool``: never refused here.
    """
    schema = getattr(getattr(tool, "tool_def", None), "parameters_json_schema", None)
    return isinstance(schema, Mapping) and refused_arguments(schema, tool_args)


def _own_name(name: str, tool: Any) -> str:
    """The tool's own name: a ``prepare`` function may show it to the model renamed.

    A `FunctionToolset` is asked for the name the model called, and keeps the name the
    tool was registered under as the tool's ``original_name``.
    """
    own = getattr(tool, "original_name", None)
    return own if isinstance(own, str) and own else name


def _site(ctx: Any) -> Site:
    """The run, its step and the tool call id: the calls of one step are parallel ones."""
    call_id = getattr(ctx, "tool_call_id", None)
    return Site(
        run=getattr(ctx, "run_id", None),
        turn=getattr(ctx, "run_step", None),
        call_id=call_id if isinstance(call_id, str) else None,
    )


def _nothing() -> None:
    return None


def _model_retry(failure: ToolFailure) -> NoReturn:
    """An `af.ToolFailure` as pydantic-ai's own: a ``ModelRetry`` the model reads."""
    from pydantic_ai import ModelRetry  # noqa: PLC0415 - pydantic-ai is loaded by now

    raise ModelRetry(failure_text(failure))
