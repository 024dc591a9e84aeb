"""The verdict judges a framework's tool retries as it judges our runtime's (a new user's audit).

A retry the code around the tool makes (LangChain's ``with_retry``, a LangGraph
``RetryPolicy``, an app's own loop over an MCP client) is judged for its wait: the wait
since the failed attempt, on the test's virtual clock, is the retry's ``delay``, so a
retry made at once is ``no_backoff`` and one that backed off passes; and a retry of an
error classified as not retryable is ``retried_non_retryable``, whatever the wait.

A retry the model makes (pydantic-ai asking the model again after ``ModelRetry``, a
later turn's call) is the error fed back to the model, which is the cure even of a
non-retryable failure, and the model's turn is no wait owed: it is judged by the attempt
cap only.
"""

from __future__ import annotations

import asyncio

import mcp
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import RetryPolicy
from mcp.server.mcpserver import MCPServer
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import pytest_agentfaults as af


@tool
def search(query: str) -> str:
    """Search the docs."""
    return f"3 pages about {query}"


# ---------------------------------------------------------------- LangChain: the code retries


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=4)
def test_langchain_with_retry_that_never_waits_is_no_backoff(trace: af.Trace) -> None:
    retrying = search.with_retry(stop_after_attempt=5, wait_exponential_jitter=False)

    assert retrying.invoke({"query": "docs"}) == "3 pages about docs"

    verdict = trace.verdict()
    assert verdict.codes == ["no_backoff"], verdict.render()
    assert len(verdict.of("no_backoff")) == 4
    assert [e.field("by") for e in trace.of("tool.retry")] == ["code"] * 4
    assert trace.delays("search") == [0.0] * 4


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=3)
def test_langchain_with_retry_backing_off_exponentially_passes(
    trace: af.Trace, virtual_clock: af.VirtualClock
) -> None:
    retrying = search.with_retry(stop_after_attempt=4)  # exponential wait with jitter

    assert retrying.invoke({"query": "docs"}) == "3 pages about docs"

    trace.assert_resilient()
    assert trace.delays("search") == pytest.approx(virtual_clock.sleeps)  # tenacity's waits
    assert all(wait >= 1 for wait in trace.delays("search"))


@pytest.mark.inject_fault(tool="search", raises=ValueError("bad input"), times=2)
def test_langchain_with_retry_of_a_value_error_is_retried_non_retryable(
    trace: af.Trace,
) -> None:
    retrying = search.with_retry(stop_after_attempt=3)  # it retries any Exception

    assert retrying.invoke({"query": "docs"}) == "3 pages about docs"

    verdict = trace.verdict()
    assert verdict.codes == ["retried_non_retryable"], verdict.render()
    assert "ValueError, which is not retryable" in verdict.findings[0].message


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_a_langgraph_retry_policy_that_waits_passes(trace: af.Trace) -> None:
    graph = StateGraph(MessagesState)
    graph.add_node(
        "tools",
        ToolNode([search], handle_tool_errors=False),
        retry_policy=RetryPolicy(max_attempts=2, initial_interval=0.5, jitter=False),
    )
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    calls = [{"name": "search", "args": {"query": q}, "id": q} for q in "ab"]

    await graph.compile().ainvoke({"messages": [AIMessage(content="", tool_calls=calls)]})

    trace.assert_resilient()
    assert trace.delays("search") == [0.5, 0.5]


# ---------------------------------------------------------------- MCP: the app's own loop


server = MCPServer("docs")


@server.tool(name="search")
def mcp_search(query: str) -> str:
    """Search the docs."""
    return f"3 pages about {query}"


async def call_until_ok(*, wait: float) -> list[bool]:
    errors = []
    async with mcp.Client(server) as client:
        for _ in range(4):
            result = await client.call_tool("search", {"query": "docs"})
            errors.append(result.is_error)
            if not result.is_error:
                break
            await asyncio.sleep(wait)
    return errors


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_an_mcp_loop_calling_again_at_once_is_no_backoff(trace: af.Trace) -> None:
    assert await call_until_ok(wait=0) == [True, True, False]
    assert trace.verdict().codes == ["no_backoff"]


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
async def test_an_mcp_loop_that_waits_passes(trace: af.Trace) -> None:
    assert await call_until_ok(wait=2) == [True, True, False]
    trace.assert_resilient()
    assert trace.delays("search") == [2.0, 2.0]


# ---------------------------------------------------------------- pydantic-ai: the model retries


def search_until_it_answers(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls ``lookup`` until a call of it returns, then answers."""
    for part in messages[-1].parts:
        if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
            return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("lookup", {"q": "a"})])


def lookup_agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(search_until_it_answers))

    @agent.tool_plain(retries=3)
    def lookup(q: str) -> str:
        return "the docs"

    return agent


@pytest.mark.inject_fault(tool="lookup", raises=ModelRetry("busy, try again"), times=2)
def test_pydantic_ai_asking_the_model_again_owes_no_wait(trace: af.Trace) -> None:
    assert lookup_agent().run_sync("go").output == "done"

    retries = trace.of("tool.retry")
    assert [(e.field("by"), e.delay) for e in retries] == [("model", None)] * 2
    trace.assert_resilient()


@pytest.mark.inject_fault(
    tool="lookup", returns=af.ToolFailure(error="no such page", recommendations=["ask"])
)
def test_pydantic_ai_feeding_a_tool_failure_back_is_not_retrying_it(trace: af.Trace) -> None:
    assert lookup_agent().run_sync("go").output == "done"

    (retry,) = trace.of("tool.retry")
    assert retry.error is not None
    assert retry.error.retryable is False  # a ToolFailure: the model must change course
    trace.assert_resilient()
