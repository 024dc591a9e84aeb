"""An async-only LangChain tool invoked synchronously fails as LangChain makes it fail.

A ``StructuredTool`` (or ``Tool``) built with only a ``coroutine`` cannot run in
``.invoke`` / ``.run``: its ``_run`` raises LangChain's own ``NotImplementedError``
before anything runs. That call is no attempt at the tool: a ``tool=`` fault neither
replaces LangChain's error (a ``returns=af.ToolFailure`` would have become a
``ToolException`` the tool's ``handle_tool_error`` hands the model) nor is spent on it,
and the trace records no attempt that never was.
"""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.tools import StructuredTool, Tool

import pytest_agentfaults as af

RAN: list[str] = []


async def _search(query: str) -> str:
    RAN.append(query)
    return f"results for {query}"


def structured() -> StructuredTool:
    return StructuredTool.from_function(
        coroutine=_search, name="search", description="Search.", handle_tool_error=True
    )


def simple() -> Tool:
    return Tool(
        name="search", description="Search.", func=None, coroutine=_search, handle_tool_error=True
    )


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


@pytest.mark.parametrize("make", [structured, simple])
def test_a_sync_call_of_an_async_only_tool_takes_no_fault(make, faults, trace) -> None:
    faults.tool("search").raises(ConnectionError("reset")).times(1)
    search = make()
    arguments = {"query": "q"} if make is structured else "q"

    with pytest.raises(NotImplementedError, match="does not support sync invocation"):
        search.invoke(arguments)
    assert not trace.of("tool.*")  # no attempt was made

    # the fault is still there for the first call that reaches the tool
    with pytest.raises(ConnectionError, match="reset"):
        asyncio.run(search.ainvoke(arguments))
    assert asyncio.run(search.ainvoke(arguments)) == "results for q"
    assert RAN == ["q"]
    assert faults.fired[0].occurrence == 1
    assert trace.tool_attempts("search") == 2


@pytest.mark.parametrize("make", [structured, simple])
def test_a_tool_failure_fault_does_not_hide_langchains_error(make, faults, trace) -> None:
    # handle_tool_error=True would hand the model a ToolFailure's text as the tool's
    # answer: the run would go on where LangChain itself stops it.
    faults.tool("search").returns(af.ToolFailure(error="index down")).strict(False)

    with pytest.raises(NotImplementedError, match="does not support sync invocation"):
        make().run({"query": "q"} if make is structured else "q")
    assert faults.fired == []
    assert not trace.of("tool.*")
