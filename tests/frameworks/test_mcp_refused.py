"""A call the MCP server refuses before its tool runs takes no ``tool=`` fault.

The SDK's server answers arguments that fail the tool's input schema, and a name it has
no tool of, with an ``is_error`` result, without running anything. A fault spent on such
a call would be an injected error that never happened, and the next call, which reaches
the tool, would run unfaulted: such a call is the server's own refusal, traced, neither
counted by ``times=`` / ``at=`` nor replaced, as the Agents SDK's refused arguments are.
A call the client cannot be sure the server refuses (a text for a number, which the
server's pydantic reads) is faulted as before.
"""

from __future__ import annotations

import mcp
import pytest
from mcp.server.mcpserver import MCPServer

CALLS: list[str] = []
server = MCPServer("docs")


@server.tool()
def search(query: str, limit: int = 3) -> str:
    """Search the docs."""
    CALLS.append(query)
    return f"{limit} pages about {query}"


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def text(result: mcp.types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
async def test_arguments_the_server_refuses_do_not_take_the_fault(trace, faults):
    async with mcp.Client(server) as client:  # the session has listed no tool yet
        refused = await client.call_tool("search", {"q": "retries"})
        faulted = await client.call_tool("search", {"query": "retries"})
        ran = await client.call_tool("search", {"query": "retries"})

    assert text(refused).startswith("Error executing tool search: 1 validation error")
    assert text(faulted) == "Error executing tool search"  # the fault, as the server says it
    assert text(ran) == "3 pages about retries"
    assert CALLS == ["retries"]
    assert [e.error.type for e in trace.of("tool.error")] == [
        "InvalidArgsError",
        "ConnectionError",
    ]
    assert trace.tool_attempts("search") == 3
    assert faults.fired[0].occurrence == 1  # the refused call was no occurrence


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), at=1)
async def test_a_value_of_the_wrong_kind_is_refused_too_after_a_listing(trace, faults):
    async with mcp.Client(server) as client:
        await client.list_tools()
        refused = await client.call_tool("search", {"query": 5})
        faulted = await client.call_tool("search", {"query": "retries"})

    assert "Input should be a valid string" in text(refused)
    assert text(faulted) == "Error executing tool search"
    assert CALLS == []
    assert [e.error.type for e in trace.of("tool.error")] == [
        "InvalidArgsError",
        "ConnectionError",
    ]


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
async def test_arguments_the_server_may_read_still_take_the_fault(trace):
    # "5" for an integer: the server's pydantic reads it, so the client cannot call it
    # refused; the fault hits this call, as it always did.
    async with mcp.Client(server) as client:
        faulted = await client.call_tool("search", {"query": "retries", "limit": "5"})
        ran = await client.call_tool("search", {"query": "retries", "limit": "5"})

    assert text(faulted) == "Error executing tool search"
    assert text(ran) == "5 pages about retries"
    assert [e.error.type for e in trace.of("tool.error")] == ["ConnectionError"]


@pytest.mark.asyncio
async def test_a_tool_the_server_does_not_have_does_not_take_the_fault(trace, faults):
    faults.tool("nope").raises(ConnectionError("reset")).times(1).strict(False)
    async with mcp.Client(server) as client:
        unknown = await client.call_tool("nope", {})

    assert text(unknown) == "Unknown tool: nope"  # the server's answer, not the fault's
    assert faults.fired == []
    (refused,) = trace.errors("nope")
    assert refused.error.type == "UnknownToolError"
    assert not trace.of("tool.fault")


@pytest.mark.asyncio
async def test_a_fault_whose_calls_were_all_refused_says_so(trace, faults):
    fault = faults.tool("nope").raises(ConnectionError("reset")).times(1)
    async with mcp.Client(server) as client:
        await client.call_tool("nope", {})

    with pytest.raises(AssertionError) as unfired:
        faults.check()
    message = str(unfired.value)
    assert "before this fault was declared" not in message  # it was declared first
    assert "every call of nope was refused before the tool ran" in message
    fault.strict(False)  # seen: the test's teardown need not fail over it again
