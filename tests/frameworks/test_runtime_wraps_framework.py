"""An `af.tool` whose body calls a framework tool of the same name is one tool attempt.

A user moving to this runtime often wraps the tool they had: ``@af.tool def search(...)``
calling a LangChain ``@tool("search")``. A ``tool="search"`` fault and the trace's counts
mean the runtime's attempt, made once: the framework's call inside it is that attempt,
neither counted again nor faulted again. A framework call of that name made outside any
attempt of the runtime is its own attempt, as before.
"""

from __future__ import annotations

import pytest
from langchain_core.tools import tool

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

RAN: list[str] = []


@tool("search")
def lc_search(query: str) -> str:
    """Search the docs."""
    RAN.append(query)
    return "found"


@af.tool
def search(query: str) -> str:
    """Search through the LangChain tool."""
    return str(lc_search.invoke({"query": query}))


@af.tool(name="search")
async def asearch(query: str) -> str:
    """Search through the LangChain tool, awaited."""
    return str(await lc_search.ainvoke({"query": query}))


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def _script() -> ScriptedModel:
    return ScriptedModel([call_tool("search", query="q"), say("ok")])


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_a_wrapped_framework_tool_is_the_runtime_attempt_counted_once(trace: af.Trace) -> None:
    agent = af.Agent("bot", model=_script(), tools=[search])
    assert agent.run("go").output == "ok"
    assert RAN == ["q"]  # the fault took the first attempt, the second ran the tool once
    assert trace.tool_attempts("search") == 2
    assert trace.retries("search") == 1
    assert [e.framework for e in trace.of("tool.call")] == ["agentfaults", "agentfaults"]
    assert trace.verdict().passed


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
async def test_the_same_in_an_async_run(trace: af.Trace) -> None:
    agent = af.Agent("bot", model=_script(), tools=[asearch])
    assert (await agent.arun("go")).output == "ok"
    assert RAN == ["q"]
    assert trace.tool_attempts("search") == 2
    assert [e.framework for e in trace.of("tool.call")] == ["agentfaults", "agentfaults"]


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_a_framework_call_after_the_runtime_attempt_is_its_own(trace: af.Trace) -> None:
    agent = af.Agent("bot", model=_script(), tools=[search])
    assert agent.run("go").output == "ok"  # the fault, then the tool ran
    assert lc_search.invoke({"query": "later"}) == "found"  # outside any runtime attempt
    assert RAN == ["q", "later"]
    assert trace.tool_attempts("search") == 3
    assert [e.framework for e in trace.of("tool.call")] == [
        "agentfaults",
        "agentfaults",
        "langchain",
    ]
