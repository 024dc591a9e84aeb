"""The OpenAI Agents SDK: tool faults inside its failure-handling tool invoker.

A ``@function_tool`` tool's ``on_invoke_tool`` is the SDK's failure-handling invoker: it
awaits the tool's implementation (argument parsing, the function itself, output checks)
and, when that raises, asks the tool's ``failure_error_function`` for the message the
model reads (``None`` re-raises and ends the run). The SDK has no hook that can fail a
tool from the inside (``RunHooks`` only observe; a tool guardrail rejects or halts, which
is not a failing tool), so its invoker's ``__call__`` is patched: each call is one
attempt, and the implementation it awaits runs through `arun_attempt`. So:

- ``raises=`` raises where the tool would, and the SDK's failure function turns it into
  the model's message (the default one: "An error occurred while running the tool...");
- ``returns=af.ToolFailure(...)`` raises `ToolFailureError` there, the same way: a custom
  failure function receives it (``str(error)`` is the failure's text), the default one
  answers its fixed message, and ``failure_error_function=None`` ends the run with it;
- ``returns=<value>`` is the tool's output;
- ``delay=`` moves the test's virtual clock; the SDK's tool ``timeout=`` runs
  ``asyncio.wait_for`` on the event loop's clock, which the virtual clock does not move,
  so it does not see the delay.

Every tool the SDK builds with that invoker is covered: ``@function_tool``, the tools of
an agent's ``mcp_servers`` and agents used as tools (``agent.as_tool``). A
``FunctionTool(on_invoke_tool=...)`` built by hand has no failure handling of the SDK and
is not hooked. The name a fault matches is the tool's name as the model sees it
(``name_override`` included; an MCP tool's server-prefixed name, with
``include_server_in_tool_names``, whose session call is the same attempt). An MCP tool's
server answering with an ``is_error`` result is a failed attempt: the SDK gives the model
that result's text as the tool's output, so the MCP adapter's hook on the session call,
inside this attempt, reads the result for it. Imported only by `install`, once the SDK is
imported.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NoReturn

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.testing._current import current_plan
from pytest_agentfaults.testing._fault import ToolFault
from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._frameworks._core import Site, arun_attempt, failure_text
from pytest_agentfaults.testing._frameworks._refusals import refused_arguments

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "ToolFailureError", "install"]

FRAMEWORK: Final = "openai_agents"
_HOOKED: Final = "__agentfaults_hook__"


class ToolFailureError(Exception):
    """A ``returns=af.ToolFailure(...)`` fault, raised in the tool for the SDK to report.

    ``str(error)`` is the failure's text; ``failure`` is the `ToolFailure` itself.
    """

    def __init__(self, failure: ToolFailure) -> None:
        super().__init__(failure_text(failure))
        self.failure = failure


def install() -> Callable[[], None]:
    """Hook the SDK's failure-handling tool invoker; returns the undo."""
    from agents import tool as sdk_tool  # noqa: PLC0415 - lazy: the user imported the SDK

    owner: Any = getattr(sdk_tool, "_FailureHandlingFunctionToolInvoker", None)
    original = owner.__dict__.get("__call__") if isinstance(owner, type) else None
    if original is None:
        raise Unhookable(
            "the Agents SDK has no _FailureHandlingFunctionToolInvoker.__call__ (its "
            "failure-handling tool invoker) in this version"
        )
    if getattr(original, _HOOKED, False):
        return _nothing  # hooked already (an outer session)

    async def __call__(self: Any, ctx: Any, input: str) -> Any:  # noqa: N807 - the invoker's
        __tracebackhide__ = True
        if current_plan() is None:
            return await original(self, ctx, input)
        shim = copy.copy(self)  # the same invoker, awaiting its implementation as one attempt
        implementation = self._invoke_tool_impl
        shim._invoke_tool_impl = _attempt(
            _tool_name(self, ctx), implementation, _mcp_name(implementation)
        )
        return await original(shim, ctx, input)

    setattr(__call__, _HOOKED, True)
    __call__.__doc__ = original.__doc__
    __call__.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(owner, "__call__", __call__)  # noqa: B010 - a dunder, set on the class

    def undo() -> None:
        if owner.__dict__.get("__call__") is __call__:
            setattr(owner, "__call__", original)  # noqa: B010

    return undo


def _attempt(
    name: str, implementation: Callable[[Any, str], Awaitable[Any]], nested: tuple[str, ...]
) -> Callable[[Any, str], Awaitable[Any]]:
    async def attempt(ctx: Any, input: str) -> Any:
        __tracebackhide__ = True
        arguments = _arguments(input)
        return await arun_attempt(
            FRAMEWORK,
            name,
            arguments,
            lambda: implementation(ctx, input),
            _raise_failure,
            _site(ctx),
            nested,
            # arguments that are not a JSON object, or that the tool's schema refuses: the
            # SDK refuses the call before the tool runs, as pydantic-ai and LangChain do
            # before their hooked call
            faultable=arguments is not None and not _refused(implementation, input, name),
        )

    return attempt


def _refused(implementation: object, input: str, name: str) -> bool:
    """Whether the SDK refuses these arguments before the tool runs (its schema's check).

    Asked only of a tool some fault names: the check is the SDK's own argument
    preparation (the ``owner`` of what its approval step prepares), run once more here.
    An MCP tool's server checks, against the input schema the tool was listed with
    (`refused_arguments`); another implementation without a preparation refuses nothing.
    """
    plan = current_plan()
    if plan is None or not any(
        isinstance(fault, ToolFault) and fault.tool == name for fault in plan.faults
    ):
        return False
    schema = _mcp_schema(implementation)
    if schema is not None:  # the SDK sends an MCP tool's arguments as they are: its server checks
        return refused_arguments(schema, _arguments(input))
    prepare = getattr(implementation, "__agents_prepare_arguments__", None)
    try:  # the approval step's preparation never raises: it falls back to a placeholder
        check = getattr(prepare(input, name), "owner", None) if callable(prepare) else None
    except Exception:  # another SDK's shape: it has no say, and the fault may hit
        return False
    if not callable(check):
        return False
    try:
        check(input, name)
    except Exception:  # whatever it raises, the SDK raises before the tool runs
        return True
    return False


def _mcp_schema(implementation: object) -> Any:
    """The input schema of an MCP tool's implementation (see `_mcp_name`), else None."""
    if not _is_mcp(implementation):
        return None
    schema = getattr(implementation.args[1], "input_schema", None)  # type: ignore[attr-defined]
    return schema if isinstance(schema, Mapping) else None


def _is_mcp(implementation: object) -> bool:
    return (
        isinstance(implementation, functools.partial)
        and getattr(implementation.func, "__name__", None) == "invoke_mcp_tool"
        and len(implementation.args) > 1
    )


def _mcp_name(implementation: object) -> tuple[str, ...]:
    """An MCP tool's own name, when the SDK shows it to the model under another one.

    With ``mcp_config={"include_server_in_tool_names": True}`` the model calls
    ``mcp_docs__search`` and the MCP session is asked for ``search``: that session call is
    the same attempt. The SDK's MCP tool runs ``partial(MCPUtil.invoke_mcp_tool, server,
    tool, ...)``, whose ``tool`` is the MCP tool.
    """
    if not _is_mcp(implementation):
        return ()
    own = getattr(implementation.args[1], "name", None)  # type: ignore[attr-defined]
    return (own,) if isinstance(own, str) else ()


def _tool_name(invoker: Any, ctx: Any) -> str:
    tool = getattr(invoker, "_function_tool", None)
    name = getattr(tool, "name", None) or getattr(ctx, "tool_name", None)
    return str(name)


def _site(ctx: Any) -> Site:
    """The run (its usage, one object a run), its model turn and the call's id.

    Calls asked for in one model answer are parallel ones; a call of a later answer is the
    model's retry of a failed one. The turn is told by the run's count of model requests
    and the length of the turn's model input (which grows each turn), each of which alone
    can stay put: a streamed answer without usage counts no request.
    """
    usage = getattr(ctx, "usage", None)
    requests = getattr(usage, "requests", None)
    turn_input = getattr(ctx, "turn_input", None)
    turn = (
        requests if isinstance(requests, int) else None,
        len(turn_input) if isinstance(turn_input, list) else None,
    )
    call_id = getattr(ctx, "tool_call_id", None)
    return Site(
        run=usage,
        turn=None if turn == (None, None) else turn,
        call_id=call_id if isinstance(call_id, str) else None,
    )


def _arguments(raw: str) -> dict[str, Any] | None:
    """The call's arguments for the trace; None when the model sent no JSON object."""
    try:
        parsed = json.loads(raw) if raw else {}
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _raise_failure(failure: ToolFailure) -> NoReturn:
    raise ToolFailureError(failure)


def _nothing() -> None:
    return None
