"""A framework tool whose body calls an `af.tool` of the same name is one tool attempt.

The other way round from `test_runtime_wraps_framework`: a LangChain ``@tool("search")``
whose body calls ``search.invoke(...)`` of an ``@af.tool`` named ``search``. The
framework's attempt is the call a ``tool="search"`` fault and the trace's counts mean:
the runtime's call inside it is that attempt, neither recorded nor faulted again. Its own
recovery still runs as it would without the kit. A runtime call made outside any
framework attempt of that name is its own, as before.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langchain_core.tools import tool

import pytest_agentfaults as af

RAN: list[str] = []


@af.tool(name="search")
def af_search(query: str) -> str:
    """Search the docs."""
    RAN.append(query)
    return "found"


@af.tool(name="search")
async def af_asearch(query: str) -> str:
    """Search the docs, awaited."""
    RAN.append(query)
    return "found"


@tool("search")
def lc_search(query: str) -> str:
    """Search through the runtime's tool."""
    return str(af_search.invoke({"query": query}))


@tool("search")
async def lc_asearch(query: str) -> str:
    """Search through the runtime's tool, awaited."""
    return str(await af_asearch.ainvoke({"query": query}))


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_the_framework_attempt_is_the_one_counted_and_faulted(trace: af.Trace) -> None:
    for _ in range(2):
        with pytest.raises(ConnectionError, match="reset"):
            lc_search.invoke({"query": "q"})
    assert lc_search.invoke({"query": "q"}) == "found"

    assert RAN == ["q"]  # both faults took LangChain's attempts, the third ran the tool
    assert trace.tool_attempts("search") == 3
    assert [e.framework for e in trace.of("tool.call")] == ["langchain"] * 3
    assert len(trace.of("tool.fault")) == 2


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=2)
def test_the_same_awaited(trace: af.Trace) -> None:
    async def main() -> str:
        for _ in range(2):
            with pytest.raises(ConnectionError, match="reset"):
                await lc_asearch.ainvoke({"query": "q"})
        return str(await lc_asearch.ainvoke({"query": "q"}))

    assert asyncio.run(main()) == "found"
    assert RAN == ["q"]
    assert trace.tool_attempts("search") == 3
    assert [e.framework for e in trace.of("tool.call")] == ["langchain"] * 3


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), times=1)
def test_a_runtime_call_outside_the_framework_attempt_is_its_own(trace: af.Trace) -> None:
    with pytest.raises(ConnectionError, match="reset"):
        lc_search.invoke({"query": "q"})
    assert af_search.invoke({"query": "later"}) == "found"  # outside any LangChain attempt
    assert lc_search.invoke({"query": "q"}) == "found"

    assert RAN == ["later", "q"]
    assert trace.tool_attempts("search") == 3
    assert [e.framework for e in trace.of("tool.call")] == [
        "langchain",
        "agentfaults",
        "langchain",
    ]


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"), at=2)
def test_at_counts_the_framework_attempts_only(trace: af.Trace, faults) -> None:
    assert lc_search.invoke({"query": "q"}) == "found"  # attempt 1: the runtime's call inside
    with pytest.raises(ConnectionError, match="reset"):  # is no attempt 2
        lc_search.invoke({"query": "q"})

    assert RAN == ["q"]
    assert faults.fired[0].occurrence == 2
    assert [e.type for e in trace.of("tool.*")] == [
        "tool.call",
        "tool.result",
        "tool.call",
        "tool.fault",
        "tool.error",
    ]


@af.tool(name="fetch")
def af_fetch(url: str) -> int:
    """Fetch a page."""
    return httpx.get(url).status_code


@tool("fetch")
def lc_fetch(url: str) -> int:
    """Fetch through the runtime's tool."""
    return int(af_fetch.invoke({"url": url}))


def test_a_request_inside_the_runtimes_call_is_still_in_the_trace(trace, http_faults) -> None:
    http_faults.get("https://docs.example.com/page").respond(200)

    assert lc_fetch.invoke({"url": "https://docs.example.com/page"}) == 200
    (request,) = trace.of("http.request")
    assert request.field("status") == 200
    assert [e.framework for e in trace.of("tool.call")] == ["langchain"]
