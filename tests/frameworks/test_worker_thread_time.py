"""A framework's worker thread, running the test's context, waits in virtual time.

pydantic-ai runs a sync tool on a worker thread (``anyio.to_thread.run_sync``, the
test's context copied): the tool's own backoff is the test's wait, virtual and recorded
(tests/plugin/test_virtual_time_workers.py has the rule itself).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import pytest_agentfaults as af


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    if isinstance(messages[-1].parts[-1], ToolReturnPart):
        return ModelResponse(parts=[TextPart("done")])
    return ModelResponse(parts=[ToolCallPart("lookup", {"q": "x"})])


def backing_off_agent(threads: list[int]) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(respond))

    @agent.tool_plain
    def lookup(q: str) -> str:
        threads.append(threading.get_ident())
        time.sleep(20)  # the tool's own backoff
        return "found"

    return agent


def test_a_pydantic_ai_sync_tool_backs_off_in_virtual_time(virtual_clock: Any) -> None:
    threads: list[int] = []
    started = time.perf_counter()
    assert backing_off_agent(threads).run_sync("go").output == "done"
    assert time.perf_counter() - started < 5
    assert virtual_clock.sleeps == [20]
    assert threads
    assert threads[0] != threading.get_ident()  # a worker's wait


@pytest.mark.asyncio
async def test_the_same_in_an_async_run(virtual_clock: Any, trace: af.Trace) -> None:
    threads: list[int] = []
    assert (await backing_off_agent(threads).run("go")).output == "done"
    assert virtual_clock.sleeps == [20]
    assert virtual_clock.now() == 20


def test_langgraph_tool_node_runs_two_calls_on_workers_in_virtual_time(virtual_clock: Any) -> None:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    threads: list[int] = []

    @tool
    def slow(query: str) -> str:
        """Search, backing off first."""
        threads.append(threading.get_ident())
        time.sleep(5)
        return "ok"

    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([slow]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    calls = [{"name": "slow", "args": {"query": q}, "id": q} for q in ("a", "b")]
    started = time.perf_counter()
    graph.compile().invoke({"messages": [AIMessage(content="", tool_calls=calls)]})
    assert time.perf_counter() - started < 3
    assert virtual_clock.sleeps == [5, 5]  # workers' waits follow one another
    assert virtual_clock.now() == 10
    assert threading.get_ident() not in threads
