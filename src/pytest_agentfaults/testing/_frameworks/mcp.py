"""MCP: tool faults at ``mcp.ClientSession.call_tool``, the client's one way to call a tool.

Every ``tools/call`` a client makes goes through ``ClientSession.call_tool(name, ...)``:
an agent that holds a session, the high-level ``mcp.Client`` (``client.call_tool`` calls
its session's) and ``ClientSessionGroup``. The SDK has no client-side hook that could fail
a call (its extensions claim result shapes and observe notifications), so the method is
patched; each call is one attempt. The client sees a faulted attempt as it would see that
tool fail on the SDK's own server (`MCPServer`):

- ``raises=`` gives an ``is_error`` result: ``"Error executing tool <name>"`` for any
  exception (a crash, whose text the server keeps to itself), ``"Error executing tool
  <name>: <text>"`` for the server's ``ToolError``; an ``MCPError`` is a protocol error,
  raised in the client as the session raises it;
- ``returns=af.ToolFailure(...)`` gives an ``is_error`` result with the failure's text;
- ``returns=<value>``: a ``CallToolResult`` as given, any other value as the result of a
  tool that returned it (text content; a mapping is also the structured content);
- ``delay=`` moves the test's virtual clock; the session's ``read_timeout_seconds`` runs
  on anyio's real clock, which the virtual clock does not move, so it does not see it.

What the server answers is read as the client reads it (`_outcome`): an ``is_error``
result is a failed attempt, a ``tool.error`` whose message is the result's text, and a
result that worked shows its text. A server says only that much of a failure, so the
error is classified from the text, as an exception with that message would be: the
schema's refusal of the arguments (the SDK's server answers pydantic's "validation
error") is an `InvalidArgsError` and a name the server has no tool of ("Unknown tool: ")
an `UnknownToolError`, neither retryable, as our runtime records the model's mistakes;
anything else is a `ToolError`, retryable unless its text speaks of credentials (a
crash, whose text the server keeps to itself, is an unexpected failure one more try may
cure, as an exception of a tool is in the other frameworks).

A call the server refuses before its tool runs takes no fault: it is traced, and the
server's answer read, but it is neither counted by ``times=`` / ``at=`` nor replaced,
as the Agents SDK's refused arguments are. The client tells one from the
tool's input schema in the session's last listing (the hook on ``list_tools`` keeps
them; a session that listed nothing is listed once, as the SDK itself does after a
call): a name the full listing lacks, or arguments every reading of the schema refuses,
at any depth (`refused_arguments`): a required property missing in a nested model, an
item of a kind its list never holds, a union no branch of which fits, a value outside an
``enum`` or past a ``minimum`` / ``maxLength`` / ``maxItems``. A value the server's
pydantic may read (``"5"`` for an integer, a text of JSON for a model) is not a refusal
the client can be sure of: faulted.

A call made inside another framework's attempt at the same tool (an Agents SDK agent's
MCP tool, a pydantic-ai MCP toolset's) is that framework's attempt, counted once, there
(`arun_attempt` lets a nested attempt at the same tool through). Its reading of the
result still counts: the Agents SDK turns an ``is_error`` result into the model's text, and
that attempt is a ``tool.error`` from what was read here (`Claim`).
Imported only by `install`, once ``mcp`` is imported.
"""

from __future__ import annotations

import json
import re
import sys
import weakref
from collections.abc import Callable
from typing import Any, Final

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.errors import InvalidArgsError, ToolError, UnknownToolError
from pytest_agentfaults.testing._current import current_plan
from pytest_agentfaults.testing._fault import ToolFault
from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._frameworks._claims import claim_of
from pytest_agentfaults.testing._frameworks._core import arun_attempt, failure_text
from pytest_agentfaults.testing._frameworks._refusals import refused_arguments

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "install"]

FRAMEWORK: Final = "mcp"
_HOOKED: Final = "__agentfaults_hook__"
# pydantic's text for arguments that fail a schema, as the SDK's server sends it back
_REFUSED_ARGUMENTS: Final = re.compile(r"\b\d+ validation errors? for ")
# the SDK's server's text for a name it has no tool of
_UNKNOWN_TOOL: Final = "Unknown tool: "


def install() -> Callable[[], None]:
    """Hook ``ClientSession.call_tool``; returns the undo."""
    from mcp.client.session import ClientSession  # noqa: PLC0415 - lazy: the user imported it
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415

    original = ClientSession.__dict__.get("call_tool")
    listing = ClientSession.__dict__.get("list_tools")
    if original is None or listing is None:
        raise Unhookable("mcp's ClientSession has no call_tool / list_tools in this version")
    if getattr(original, _HOOKED, False):
        return _nothing  # hooked already (an enclosing session)
    # each session's input schemas by tool name, as last listed, and whether in full
    schemas: weakref.WeakKeyDictionary[Any, tuple[dict[str, Any], bool]]
    schemas = weakref.WeakKeyDictionary()

    async def list_tools(self: Any, *args: Any, **kw: Any) -> Any:
        __tracebackhide__ = True
        result = await listing(self, *args, **kw)
        params = kw.get("params", args[0] if args else None)
        full = getattr(params, "cursor", None) is None and result.next_cursor is None
        known = {} if full else dict(schemas.get(self, ({}, False))[0])
        known.update({tool.name: tool.input_schema for tool in result.tools})
        schemas[self] = (known, full or schemas.get(self, ({}, False))[1])
        return result

    async def refused(self: Any, name: str, arguments: Any) -> bool:
        """Whether the server refuses this call before the tool runs (`refused_arguments`)."""
        plan = current_plan()
        if plan is None or claim_of(name) is not None:
            return False  # inside another framework's attempt: that one's to say
        if not any(isinstance(f, ToolFault) and f.tool == name for f in plan.faults):
            return False  # no fault to keep: the server's answer is read all the same
        if self not in schemas:
            try:
                await self.list_tools()  # as the SDK lists after a call; kept by the hook
            except Exception:  # a server that lists nothing: nothing known, nothing refused
                return False
        known, full = schemas.get(self, ({}, False))
        if name not in known:
            return full
        return refused_arguments(known[name], arguments)

    async def call_tool(self: Any, name: str, arguments: Any = None, *args: Any, **kw: Any) -> Any:
        __tracebackhide__ = True
        if current_plan() is None:
            return await original(self, name, arguments, *args, **kw)
        reached = False

        async def call() -> Any:
            nonlocal reached
            reached = True
            return await original(self, name, arguments, *args, **kw)

        faultable = not await refused(self, name, arguments)
        try:
            result = await arun_attempt(
                FRAMEWORK,
                name,
                arguments,
                call,
                _failure_result,
                faultable=faultable,
                outcome=_outcome(name),
            )
        except Exception as exc:
            if reached or isinstance(exc, MCPError):
                raise  # the session's own error, or a protocol error as the session raises it
            return _crash_result(name, exc)
        return result if reached else _as_result(result)

    setattr(call_tool, _HOOKED, True)
    call_tool.__doc__ = original.__doc__
    call_tool.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(ClientSession, "call_tool", call_tool)  # noqa: B010 - a method of the SDK's class
    list_tools.__doc__ = listing.__doc__
    list_tools.__wrapped__ = listing  # type: ignore[attr-defined]
    setattr(ClientSession, "list_tools", list_tools)  # noqa: B010

    def undo() -> None:
        if ClientSession.__dict__.get("call_tool") is call_tool:
            setattr(ClientSession, "call_tool", original)  # noqa: B010
        if ClientSession.__dict__.get("list_tools") is list_tools:
            setattr(ClientSession, "list_tools", listing)  # noqa: B010

    return undo


def _outcome(name: str) -> Callable[[Any], tuple[str, BaseException | None] | None]:
    """How a ``CallToolResult`` of tool ``name`` reads: its text, and its error if any."""

    def read(result: Any) -> tuple[str, BaseException | None] | None:
        from mcp import types  # noqa: PLC0415 - mcp is loaded by now

        if not isinstance(result, types.CallToolResult):
            return None  # another result (input required), or a returns= value to convert
        text = _text(result)
        if not result.is_error:
            return text, None
        if _REFUSED_ARGUMENTS.search(text):
            return text, InvalidArgsError(text, tool=name)
        if text.startswith(_UNKNOWN_TOOL):
            return text, UnknownToolError(text, tool=name, available=[])
        return text, ToolError(text, tool=name)

    return read


def _text(result: Any) -> str:
    """What the client reads of a result: its text blocks, else its structured content."""
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, default=str)
    kinds = [str(getattr(block, "type", "?")) for block in result.content]
    return f"({', '.join(kinds) or 'no'} content)"


def _failure_result(failure: ToolFailure) -> Any:
    return _result(failure_text(failure), is_error=True)


def _crash_result(name: str, exc: Exception) -> Any:
    """The result `MCPServer` sends when the tool raised ``exc``."""
    server_errors = sys.modules.get("mcp.server.mcpserver.exceptions")
    tool_error = getattr(server_errors, "ToolError", None)
    if isinstance(tool_error, type) and isinstance(exc, tool_error):
        return _result(f"Error executing tool {name}: {exc}", is_error=True)
    return _result(f"Error executing tool {name}", is_error=True)


def _as_result(value: Any) -> Any:
    """A ``returns=`` value as the result of a tool that returned it."""
    from mcp import types  # noqa: PLC0415 - mcp is optional; the user's code loaded it

    if isinstance(value, types.CallToolResult):
        return value
    if isinstance(value, str):
        return _result(value, is_error=False)
    text = json.dumps(value, default=str)
    structured = dict(value) if isinstance(value, dict) else None
    return _result(text, is_error=False, structured=structured)


def _result(text: str, *, is_error: bool, structured: dict[str, Any] | None = None) -> Any:
    from mcp import types  # noqa: PLC0415 - mcp is optional; the user's code loaded it

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def _nothing() -> None:
    return None
