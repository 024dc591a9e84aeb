"""An Agents SDK agent's MCP tool that fails on its server is a failure in the trace.

The server answers a call that failed on its side with an ``is_error`` result. The Agents
SDK turns that result into the text the model reads and returns it as the tool's output,
as it would a result that worked: nothing raises. The trace still records the answer as a
``tool.error`` (``framework="openai_agents"``), classified from its text as the MCP
adapter classifies it, so ``trace.errors()``, the verdict and the coverage see the
failure the model was told of. The agent, its SDK and the MCP server are real; the server
runs in-process over the mcp SDK's memory transport, the model is the loopback server.
"""

from __future__ import annotations

import asyncio

import agents
import openai
import pytest
from agents.mcp.server import _MCPServerWithClientSession
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from pytest_agentfaults.testing import call_tool, malformed, say

NO_TRACING = agents.RunConfig(tracing_disabled=True)
server = MCPServer("docs")
FLAKY: list[bool] = []  # one entry: the next "flaky" search fails, once


@pytest.fixture(autouse=True)
def _no_flaky_left():
    yield
    FLAKY.clear()
    SHIPPED.clear()


@server.tool()
def search(query: str) -> str:
    """Search the docs."""
    if query == "boom":
        raise ConnectionError("the real backend is down")
    if query == "secret":
        raise ToolError("invalid api key for the index")
    if query == "flaky" and FLAKY and FLAKY.pop():
        raise ToolError("index temporarily unavailable")
    return f"3 pages about {query}"


class Address(BaseModel):
    street: str
    zip: int


SHIPPED: list[Address] = []


@server.tool()
def ship(to: Address) -> str:
    """Ship to an address: a nested model, which the SDK does not check."""
    SHIPPED.append(to)
    return f"shipped to {to.street}"


class InProcessMCPServer(_MCPServerWithClientSession):
    def __init__(self) -> None:
        super().__init__(cache_tools_list=True, client_session_timeout_seconds=None)

    def create_streams(self):
        return InMemoryTransport(server)

    @property
    def name(self) -> str:
        return "docs"


def run_agent(llm_server, steps, **agent_options):
    llm_server.script([*steps, say("done")])

    async def main():
        async with (
            InProcessMCPServer() as mcp_server,
            openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client,
        ):
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = agents.Agent(name="bot", mcp_servers=[mcp_server], model=model, **agent_options)
            return await agents.Runner.run(agent, "go", run_config=NO_TRACING)

    return asyncio.run(main())


def told(llm_server):
    """The text the model was told of each tool call, in its last request."""
    messages = llm_server.requests[-1].json()["messages"]
    # the SDK sends an MCP tool's text block as a list of content parts
    return [m["content"][0]["text"] for m in messages if m["role"] == "tool"]


def test_an_error_result_of_an_agents_mcp_tool_is_a_tool_error(llm_server, trace):
    # a number where the schema wants text: the server refuses it (the SDK checks only
    # that required arguments are there, and refuses a missing one itself, raising)
    run_agent(llm_server, [call_tool("search", query=5), call_tool("search", query="boom")])

    refused, crashed = [e.error for e in trace.errors("search")]
    assert (refused.type, refused.retryable) == ("InvalidArgsError", False)
    assert refused.message.startswith("Error executing tool search: 1 validation error")
    assert (crashed.type, crashed.message) == ("ToolError", "Error executing tool search")
    assert crashed.retryable is True
    # the model read the same text; the SDK's answer is unchanged
    assert told(llm_server) == [refused.message, crashed.message]
    assert trace.of("tool.result") == []
    assert {e.field("framework") for e in trace.of("tool.*")} == {"openai_agents"}


def test_the_text_is_classified_as_an_exceptions_would_be(llm_server, trace):
    run_agent(llm_server, [call_tool("search", query="secret")])

    (denied,) = [e.error for e in trace.errors("search")]
    assert denied.message == "Error executing tool search: invalid api key for the index"
    assert denied.retryable is False  # credentials: a retry cannot help


def test_a_result_that_worked_stays_a_result(llm_server, trace):
    run_agent(llm_server, [call_tool("search", query="faults")])

    assert trace.errors() == []
    (result,) = trace.of("tool.result")
    assert "3 pages about faults" in result.detail


def test_the_models_call_after_an_error_result_is_its_retry(llm_server, trace):
    FLAKY.append(True)
    run_agent(llm_server, [call_tool("search", query="flaky"), call_tool("search", query="flaky")])

    trace.assert_sequence("tool.call", "tool.error", "tool.retry", "tool.call", "tool.result")
    (retry,) = trace.of("tool.retry")
    assert retry.field("by") == "model"
    assert retry.error.message.endswith("index temporarily unavailable")
    trace.assert_resilient()


def test_an_error_under_the_server_prefixed_name_is_that_tools(llm_server, trace):
    run_agent(
        llm_server,
        [call_tool("mcp_docs__search", query="boom")],
        mcp_config={"include_server_in_tool_names": True},
    )

    (error,) = trace.errors()
    assert error.tool == "mcp_docs__search"
    assert (error.error.type, error.error.message) == ("ToolError", "Error executing tool search")


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_an_injected_fault_is_still_recorded_as_what_was_injected(llm_server, trace):
    run_agent(llm_server, [call_tool("search", query="a"), call_tool("search", query="boom")])

    injected, served = [e.error for e in trace.errors("search")]
    assert (injected.type, injected.message) == ("ConnectionError", "reset")
    assert (served.type, served.message) == ("ToolError", "Error executing tool search")


def test_the_verdict_sees_the_failure(llm_server, trace):
    run_agent(llm_server, [call_tool("search", query="boom")])

    verdict = trace.verdict()
    assert verdict.judged  # a failure to judge, which the model was told of
    assert verdict.failures == 1
    assert verdict.passed, verdict.render()


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_arguments_refused_before_the_tool_runs_take_no_fault(llm_server, trace, faults):
    # A required argument missing: the SDK's MCP server wrapper refuses the call against
    # the tool's listed schema (UserError) before the session sends it. That call is no
    # occurrence of the fault, which is left for the call that reaches the tool.
    run_agent(
        llm_server,
        [
            malformed.tool_args('{"q": "x"}', tool="search"),  # JSON, not the tool's arguments
            call_tool("search", query="x"),
            call_tool("search", query="x"),
        ],
    )

    told = told_text(llm_server)
    assert told[1:] == [
        "An error occurred while running the tool. Please try again.",
        "3 pages about x",
    ]
    assert faults.fired[0].occurrence == 1
    errors = [e.error for e in trace.of("tool.error")]
    assert [error.type for error in errors] == ["UserError", "ConnectionError"]
    assert "missing required parameters: query" in errors[0].message


@pytest.mark.inject_fault(tool="ship", raises=ConnectionError("reset"), times=1)
def test_nested_arguments_the_server_refuses_take_no_fault(llm_server, trace, faults):
    # The zip missing inside the address: the SDK checks only the top-level "to", so the
    # call reaches the server, which refuses it before the tool runs (the same decision
    # as the MCP session's). The fault is left for the call that reaches the tool.
    main = {"street": "Main", "zip": 1}
    run_agent(
        llm_server,
        [
            call_tool("ship", to={"street": "Main"}),
            call_tool("ship", to=main),
            call_tool("ship", to=main),
        ],
    )

    refused, injected = [e.error for e in trace.errors("ship")]
    assert (refused.type, injected.type) == ("InvalidArgsError", "ConnectionError")
    assert "validation error" in refused.message
    assert told_text(llm_server)[1:] == [
        "An error occurred while running the tool. Please try again.",
        "shipped to Main",
    ]
    assert faults.fired[0].occurrence == 1
    assert len(SHIPPED) == 1


def told_text(llm_server):
    """The text of each tool message in the last request, whatever its shape."""
    messages = llm_server.requests[-1].json()["messages"]
    return [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
        for m in messages
        if m["role"] == "tool"
    ]
