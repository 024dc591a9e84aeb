"""A real MCP server's failed tool call is a failure in the trace (a new user's audit).

A server answers a call that failed on its side (arguments that fail the tool's schema,
a tool that raised) with an ``is_error`` result, not a protocol error: the client reads
the result's text. The trace records such an answer as ``tool.error``, with that text,
so ``trace.errors()``, the verdict and the coverage see the failure the client saw; a
result that worked shows its text, not the repr of the result object.
"""

from __future__ import annotations

import mcp
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("docs")
FLAKY: list[bool] = []  # one entry: the next "flaky" search fails, once


@server.tool()
def search(query: str) -> str:
    """Search the docs."""
    if query == "boom":
        raise ConnectionError("the real backend is down")
    if query == "secret":
        raise ToolError("invalid api key for the index")
    if query == "busy" or (query == "flaky" and FLAKY and FLAKY.pop()):
        raise ToolError("index temporarily unavailable")
    return f"3 pages about {query}"


async def call(*calls: dict[str, str]) -> list[mcp.types.CallToolResult]:
    async with mcp.Client(server) as client:
        return [await client.call_tool("search", arguments) for arguments in calls]


@pytest.mark.asyncio
async def test_arguments_the_server_refuses_are_a_validation_error(trace):
    (result,) = await call({"q": "x"})

    assert result.is_error
    (error,) = [e.error for e in trace.errors("search")]
    assert error.type == "InvalidArgsError"
    assert (error.kind, error.retryable) == ("validation", False)
    assert error.message.startswith("Error executing tool search: 1 validation error")
    assert error.message == result.content[0].text
    trace.assert_sequence("tool.call", "tool.error")
    assert [e.field("framework") for e in trace.of("tool.*")] == ["mcp", "mcp"]


@pytest.mark.asyncio
async def test_a_tool_that_raised_on_the_server_is_a_retryable_tool_error(trace):
    (result,) = await call({"query": "boom"})

    assert result.is_error
    (error,) = [e.error for e in trace.errors("search")]
    # The server keeps a crash's text to itself: the client reads the tool's name only.
    assert (error.type, error.message) == ("ToolError", "Error executing tool search")
    assert (error.kind, error.retryable) == ("runtime", True)
    assert trace.of("tool.result") == []


@pytest.mark.asyncio
async def test_the_text_of_an_error_result_is_classified_as_an_exceptions_would_be(trace):
    await call({"query": "secret"}, {"query": "busy"})

    denied, busy = [e.error for e in trace.errors("search")]
    assert denied.message == "Error executing tool search: invalid api key for the index"
    assert denied.retryable is False  # credentials: a retry cannot help
    assert busy.message == "Error executing tool search: index temporarily unavailable"
    assert busy.retryable is True


@pytest.mark.asyncio
async def test_a_result_that_worked_shows_the_text_the_client_read(trace):
    (result,) = await call({"query": "faults"})

    assert not result.is_error
    (event,) = trace.of("tool.result")
    assert event.detail == "3 pages about faults"
    assert trace.errors("search") == []


@pytest.mark.asyncio
async def test_the_same_call_made_again_after_an_error_result_is_a_retry(trace):
    # An agent's loop calling again after the server reported a failure: its retry.
    FLAKY.append(True)
    first, second = await call({"query": "flaky"}, {"query": "flaky"})

    assert first.is_error
    assert not second.is_error
    trace.assert_sequence("tool.call", "tool.error", "tool.retry", "tool.call", "tool.result")
    assert trace.of("tool.retry")[0].error.message.endswith("index temporarily unavailable")


@pytest.mark.asyncio
@pytest.mark.inject_fault(
    tool="search",
    returns=mcp.types.CallToolResult(
        content=[mcp.types.TextContent(type="text", text="quota exceeded")], is_error=True
    ),
)
async def test_an_error_result_given_as_returns_is_a_tool_error(trace):
    (result,) = await call({"query": "x"})

    assert result.is_error
    (error,) = [e.error for e in trace.errors("search")]
    assert (error.type, error.message) == ("ToolError", "quota exceeded")
