"""The OpenAI Agents SDK and MCP adapters as a user meets them through pytest (pytester).

- a strict tool fault that no attempt reached fails the test, naming the frameworks watched;
- teardown leaves each framework unpatched, proven after every test of a session, whatever
  way the faulted test failed, and by the next test, which sees no fault and counts anew.
"""

from __future__ import annotations

# Loaded in the outer session, so the in-process inner runs share one copy of each SDK.
import agents  # noqa: F401
import mcp  # noqa: F401
import openai  # noqa: F401
import pytest


@pytest.fixture(autouse=True)
def _inner_ini(pytester):
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )


AGENT = '''
import asyncio

import agents
import openai
import pytest

from pytest_agentfaults.testing import call_tool, say

AGENT_CALLS = []


@agents.function_tool
def search(query: str) -> str:
    """Search."""
    AGENT_CALLS.append(query)
    return "found"


@agents.function_tool
def lookup(query: str) -> str:
    """Look up."""
    return "looked up"


def run(llm_server, steps, tool):
    llm_server.script(steps)

    async def main():
        async with openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as c:
            model = agents.OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=c)
            agent = agents.Agent(name="bot", tools=[tool], model=model)
            return await agents.Runner.run(
                agent, "go", run_config=agents.RunConfig(tracing_disabled=True)
            )

    return asyncio.run(main())
'''

MCP = '''
import asyncio

import mcp
import pytest
from mcp.server.mcpserver import MCPServer

MCP_CALLS = []
server = MCPServer("docs")


@server.tool(name="search")
def mcp_search(query: str) -> str:
    """Search."""
    MCP_CALLS.append(query)
    return "found"


@server.tool(name="lookup")
def mcp_lookup(query: str) -> str:
    """Look up."""
    return "looked up"


async def call(name):
    async with mcp.Client(server) as client:
        return await client.call_tool(name, {"query": "q"})
'''


def test_a_strict_agents_fault_that_never_fired_fails_naming_the_frameworks(pytester):
    pytester.makepyfile(
        AGENT
        + """
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_calls_another_tool(llm_server):
    run(llm_server, [call_tool("lookup", query="q"), say("ok")], lookup)
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*fault on tool 'search' never fired*", "*the fault watches the tools of:*openai_agents*"]
    )


def test_a_strict_mcp_fault_that_never_fired_fails_naming_the_frameworks(pytester):
    pytester.makepyfile(
        MCP
        + """
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_calls_another_tool():
    assert not asyncio.run(call("lookup")).is_error
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*fault on tool 'search' never fired*", "*the fault watches the tools of:*mcp*"]
    )


CONFTEST = """
import mcp
from agents.tool import _FailureHandlingFunctionToolInvoker as Invoker

REAL = {"agents": Invoker.__call__, "mcp": mcp.ClientSession.call_tool}


def hooks():
    return {"agents": Invoker.__call__, "mcp": mcp.ClientSession.call_tool}


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        now = hooks()
        left = sorted(name for name in REAL if now[name] is not REAL[name])
        print(f"\\nAFTER {report.head_line}: patched={left}")
"""

SUITE = (
    AGENT
    + MCP
    + """
import conftest


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_a_agents_test_fails_after_its_fault_fired(llm_server, trace):
    assert conftest.hooks()["agents"] is not conftest.REAL["agents"]
    run(llm_server, [call_tool("search", query="q"), say("ok")], search)
    assert trace.tool_attempts("search") == 1
    raise RuntimeError("the test fails after the fault fired")


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_b_mcp_test_fails_after_its_fault_fired(trace):
    assert conftest.hooks()["mcp"] is not conftest.REAL["mcp"]
    assert asyncio.run(call("search")).is_error
    raise RuntimeError("the test fails after the fault fired")


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_c_errors_in_setup(no_such_fixture):
    pass


def test_z_a_later_test_has_no_fault_and_counts_from_one(trace):
    assert not asyncio.run(call("search")).is_error
    assert MCP_CALLS == ["q"]
    assert AGENT_CALLS == []
    assert trace.tool_attempts("search") == 1
    assert not trace.of("tool.fault")
"""
)


def test_teardown_leaves_both_sdks_unpatched_whatever_the_test_did(pytester):
    """In a subprocess: in this outer session the adapters are installed around this test."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*RuntimeError: the test fails after the fault fired*"])
    after = [line for line in result.outlines if line.startswith("AFTER ")]
    assert len(after) == 4, result.stdout.str()
    assert all(line.endswith("patched=[]") for line in after), after
