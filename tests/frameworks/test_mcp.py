"""Tool faults reach MCP clients: `mcp.ClientSession.call_tool` (issue 16).

The server is a real `MCPServer` (the SDK's high-level server, once FastMCP), connected
in-process by `mcp.Client(server)` over the SDK's in-memory streams: no network. The client
sees a faulted attempt as it would see a failing tool of that server: an `is_error` result.
"""

from __future__ import annotations

import mcp
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

import pytest_agentfaults as af

CALLS: list[str] = []
server = MCPServer("docs")


@server.tool()
def search(query: str) -> str:
    """Search the docs."""
    CALLS.append(query)
    return f"3 pages about {query}"


@pytest.fixture(autouse=True)
def _fresh_calls():
    CALLS.clear()


def text(result: mcp.types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


async def call_until_ok(client: mcp.Client, query: str, tries: int = 5):
    """An agent's own loop around an MCP tool: call again while the tool reports an error."""
    seen = []
    for _ in range(tries):
        result = await client.call_tool("search", {"query": query})
        seen.append(result)
        if not result.is_error:
            break
    return seen


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_raises_is_an_error_result_and_the_callers_retry_recovers(trace):
    async with mcp.Client(server) as client:
        results = await call_until_ok(client, "faults")

    assert [r.is_error for r in results] == [True, True, False]
    # What MCPServer answers for a tool that crashed: the name only, never the exception text.
    assert [text(r) for r in results] == [
        "Error executing tool search",
        "Error executing tool search",
        "3 pages about faults",
    ]
    assert CALLS == ["faults"]
    assert trace.tool_attempts("search") == 3
    trace.assert_sequence("tool.fault", "tool.error", "tool.fault", "tool.error", "tool.result")
    assert {e.field("framework") for e in trace.of("tool.*")} == {"mcp"}
    assert [e.error.type for e in trace.of("tool.error")] == ["ConnectionError"] * 2
    assert len(trace.of("tool.retry")) == 2  # the caller's own retries, as trace.retries sees them


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ToolError("index offline"))
async def test_a_tool_error_keeps_its_text_as_the_server_would(trace):
    async with mcp.Client(server) as client:
        result = await client.call_tool("search", {"query": "x"})
    assert result.is_error
    assert text(result) == "Error executing tool search: index offline"
    assert CALLS == []


@pytest.mark.asyncio
@pytest.mark.inject_fault(
    tool="search",
    returns=af.ToolFailure(error="no results", recommendations=["Try a broader query"]),
)
async def test_tool_failure_is_an_error_result_with_the_failure_text(trace, faults):
    async with mcp.Client(server) as client:
        result = await client.call_tool("search", {"query": "x"})
    assert result.is_error
    assert text(result) == "no results Recommendations: Try a broader query"
    assert CALLS == []
    assert len(faults.fired) == 1
    assert trace.of("tool.error")[0].error.message == "no results"


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=MCPError(code=-32603, message="server gone"))
async def test_a_protocol_error_raises_in_the_client_as_it_would(trace):
    async with mcp.Client(server) as client:
        with pytest.raises(MCPError, match="server gone"):
            await client.call_tool("search", {"query": "x"})
    assert CALLS == []
    assert trace.tool_attempts("search") == 1


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", returns="cached: 1 page")
async def test_returns_a_value_in_place_of_the_result(trace):
    async with mcp.Client(server) as client:
        result = await client.call_tool("search", {"query": "x"})
    # A tool result as the server would send it for a tool that returned that value.
    assert not result.is_error
    assert text(result) == "cached: 1 page"
    assert CALLS == []


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", returns={"pages": 0})
async def test_returns_a_mapping_as_structured_content(trace):
    async with mcp.Client(server) as client:
        result = await client.call_tool("search", {"query": "x"})
    assert not result.is_error
    assert result.structured_content == {"pages": 0}
    assert text(result) == '{"pages": 0}'


@pytest.mark.asyncio
async def test_the_session_itself_with_fluent_faults_and_at(faults, trace):
    faults.tool("search").raises(ConnectionError("reset")).at(2)
    async with mcp.Client(server) as client:
        session = client.session  # an agent that speaks MCP holds a ClientSession
        results = [await session.call_tool("search", {"query": q}) for q in "abc"]
    assert [r.is_error for r in results] == [False, True, False]
    assert CALLS == ["a", "c"]
    # MCP says nothing of runs, turns or call ids: the same call again is told by its
    # arguments, so the search for "c" after the failed one for "b" is a new call
    assert [e.field("attempt") for e in trace.of("tool.call")] == [1, 1, 1]
    assert trace.retries("search") == 0
    assert [e.detail for e in trace.of("tool.call")] == [
        '{"query": "a"}',
        '{"query": "b"}',
        '{"query": "c"}',
    ]


@pytest.mark.asyncio
async def test_the_same_search_asked_again_after_a_failure_is_its_retry(faults, trace):
    faults.tool("search").raises(ConnectionError("reset")).at(2)
    async with mcp.Client(server) as client:
        session = client.session
        results = [await session.call_tool("search", {"query": q}) for q in "abbc"]
    assert [r.is_error for r in results] == [False, True, False, False]
    assert CALLS == ["a", "b", "c"]
    assert [e.field("attempt") for e in trace.of("tool.call")] == [1, 1, 2, 1]
    assert trace.retries("search") == 1
    assert trace.of("tool.retry")[0].error.type == "ConnectionError"


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", delay=30.0)
async def test_delay_moves_virtual_time_which_the_read_timeout_cannot_see(virtual_clock, trace):
    before = virtual_clock.now()
    async with mcp.Client(server) as client:
        result = await client.call_tool("search", {"query": "q"}, read_timeout_seconds=1.0)
    assert virtual_clock.now() - before >= 30.0
    # The session's read timeout runs on the event loop's clock, not the virtual one.
    assert not result.is_error
    assert CALLS == ["q"]


@pytest.mark.asyncio
async def test_unknown_tools_and_plain_calls_are_traced(trace):
    async with mcp.Client(server) as client:
        await client.call_tool("search", {"query": "q"})
        unknown = await client.call_tool("nope", {})
    assert unknown.is_error  # the server's own answer, untouched
    assert trace.tool_attempts("search") == 1
    assert trace.tool_attempts("nope") == 1
    assert [e.tool for e in trace.of("tool.result")] == ["search"]
    # the server's answer is a failure the client reads: the model named no such tool
    (refused,) = trace.errors("nope")
    assert refused.error.type == "UnknownToolError"
    assert (refused.error.message, refused.error.retryable) == ("Unknown tool: nope", False)


def test_the_adapter_is_registered_under_the_sdks_module():
    from pytest_agentfaults.testing._frameworks import ADAPTERS

    assert ADAPTERS["mcp"] == "pytest_agentfaults.testing._frameworks.mcp:install"
