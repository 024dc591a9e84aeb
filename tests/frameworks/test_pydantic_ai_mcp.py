"""Tool faults reach the tools of a pydantic-ai MCP toolset (a real MCP server over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import pytest_agentfaults as af

SERVER = Path(__file__).with_name("mcp_search_server.py")


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    for part in messages[-1].parts:
        if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
            return ModelResponse(parts=[TextPart(str(part.content))])
    return ModelResponse(parts=[ToolCallPart("search", {"q": "docs"})])


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("server busy"))
@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="quota"))
def test_an_mcp_toolsets_tool_gets_the_faults_and_pydantic_ais_retries(trace: af.Trace) -> None:
    toolset = MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]), max_retries=2)
    result = Agent(FunctionModel(model), toolsets=[toolset]).run_sync("find")
    assert result.output == "found docs"  # the real server answered the third attempt
    retried = [
        str(p.content)
        for m in result.all_messages()
        for p in m.parts
        if getattr(p, "outcome", None) == "retried"
    ]
    assert retried == ["server busy", "quota"]
    assert trace.tool_attempts("search") == 3
    trace.assert_sequence("tool.fault", "tool.error", "tool.fault", "tool.error", "tool.result")
    assert {e.framework for e in trace.of("tool.*")} == {"pydantic_ai"}


def _wrong_name_first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls search with an argument the server's schema lacks, then as it should."""
    parts = [p for m in messages for p in m.parts]
    answered = [p for p in parts if getattr(p, "part_kind", "") == "tool-return"]
    if answered and answered[-1].outcome != "retried":
        return ModelResponse(parts=[TextPart(str(answered[-1].content))])
    asked = sum(isinstance(p, ToolCallPart) for p in parts)
    return ModelResponse(
        parts=[ToolCallPart("search", {"query": "docs"} if not asked else {"q": "docs"})]
    )


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("server busy"), times=1)
def test_arguments_the_server_refuses_take_no_fault(trace: af.Trace, faults) -> None:
    # pydantic-ai sends an MCP tool's arguments as they are: the server refuses a call
    # without "q" before its tool runs. That call is no occurrence of the fault.
    toolset = MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]), max_retries=3)
    result = Agent(FunctionModel(_wrong_name_first), toolsets=[toolset]).run_sync("find")

    assert result.output == "found docs"
    assert faults.fired[0].occurrence == 1  # the refused call was no occurrence
    assert trace.tool_attempts("search") == 3
    assert [e.type for e in trace.of("tool.*")][:4] == [
        "tool.call",
        "tool.error",
        "tool.retry",
        "tool.call",
    ]
    assert "validation error" in trace.of("tool.error")[0].error.message


def _zip_missing_first(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Ships to an address without its zip, then with it."""
    parts = [p for m in messages for p in m.parts]
    answered = [p for p in parts if getattr(p, "part_kind", "") == "tool-return"]
    if answered and answered[-1].outcome != "retried":
        return ModelResponse(parts=[TextPart(str(answered[-1].content))])
    asked = sum(isinstance(p, ToolCallPart) for p in parts)
    to = {"street": "Main"} if not asked else {"street": "Main", "zip": 1}
    return ModelResponse(parts=[ToolCallPart("ship", {"to": to})])


@pytest.mark.inject_fault(tool="ship", raises=ModelRetry("server busy"), times=1)
def test_nested_arguments_the_server_refuses_take_no_fault(trace: af.Trace, faults) -> None:
    # The zip missing inside the address: pydantic-ai checks only that the arguments are an
    # object, and the server refuses the call against its schema's $defs before the tool
    # runs. That call is no occurrence of the fault, left for the call that reaches the tool.
    toolset = MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]), max_retries=3)
    result = Agent(FunctionModel(_zip_missing_first), toolsets=[toolset]).run_sync("ship")

    assert result.output == "shipped to Main"
    assert faults.fired[0].occurrence == 1  # the refused call was no occurrence
    refused, injected = [e.error for e in trace.of("tool.error")]
    assert "validation error" in refused.message
    assert injected.message == "server busy"
    assert trace.tool_attempts("ship") == 3
