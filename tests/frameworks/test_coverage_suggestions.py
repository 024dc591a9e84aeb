"""Every "to cover next" suggestion for a framework's tool covers its cell when followed.

The matrix suggested the kit's own markers for every tool: ``delay=90`` never times out a
framework's tool (its timeouts run on real clocks) and ``llm="malformed_tool_args"`` never
reaches a framework agent's model, so the cell stayed uncovered after adding exactly the
suggested marker (a new user's audit). Here each suggestion of a session is pasted into a
real test of that framework, and the next session must show the cell covered.
"""

from __future__ import annotations

import json
import re

# Loaded here, before pytester's in-process runs: a module such a run loads is dropped
# after it, and mcp's cryptography cannot be loaded a second time in one process.
import agents  # noqa: F401
import anthropic  # noqa: F401
import google.genai  # noqa: F401
import langchain_openai  # noqa: F401
import langgraph.prebuilt  # noqa: F401
import mcp.server.mcpserver  # noqa: F401
import openai.lib.responses_tool_runner  # noqa: F401
import pydantic_ai.models.openai  # noqa: F401
import pytest

HEAD = """
import asyncio

import openai
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing import call_tool, malformed, say
"""

PYDANTIC_AI = """
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def run(llm_server):
    async def main():
        async with openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as c:
            agent = Agent(OpenAIChatModel("m", provider=OpenAIProvider(openai_client=c)))

            @agent.tool_plain(retries=2)
            def search(query: str) -> str:
                \"\"\"Search.\"\"\"
                return "found"

            return await agent.run("go")

    return asyncio.run(main())
"""

LANGCHAIN = """
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


@tool
def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


def run(llm_server):
    llm = ChatOpenAI(model="m", base_url=llm_server.base_url("openai"), api_key="k")
    model = llm.bind_tools([search])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([search], handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile().invoke({"messages": [("user", "go")]})
"""

OPENAI_AGENTS = """
import agents


@agents.function_tool
def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


def run(llm_server):
    async def main():
        async with openai.AsyncOpenAI(base_url=llm_server.base_url("openai"), api_key="k") as c:
            model = agents.OpenAIChatCompletionsModel(model="m", openai_client=c)
            agent = agents.Agent(name="bot", tools=[search], model=model)
            config = agents.RunConfig(tracing_disabled=True)
            return await agents.Runner.run(agent, "go", run_config=config)

    return asyncio.run(main())
"""

MCP = """
import mcp
from mcp.server.mcpserver import MCPServer

server = MCPServer("docs")


@server.tool()
def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


def run(llm_server):
    async def main():
        async with mcp.Client(server) as client:
            return [await client.call_tool("search", {"query": "x"}) for _ in range(3)]

    return asyncio.run(main())
"""

ANTHROPIC = """
import warnings

import anthropic
from anthropic import beta_tool


@beta_tool
def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


def run(llm_server):
    client = anthropic.Anthropic(base_url=llm_server.base_url("anthropic"), api_key="k")
    # the runner answers a call to a tool it does not have, and warns (UserWarning): under
    # filterwarnings = error that warning would end the run (the how-to says so)
    with client, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tool .* not found in tool runner", UserWarning)
        runner = client.beta.messages.tool_runner(
            model="m", max_tokens=64, tools=[search], messages=[{"role": "user", "content": "go"}]
        )
        return runner.until_done()
"""

GOOGLE_GENAI = """
from google import genai
from google.genai import types


def search(query: str) -> str:
    \"\"\"Search.\"\"\"
    return "found"


def run(llm_server):
    options = types.HttpOptions(base_url=llm_server.base_url("gemini"))
    with genai.Client(api_key="k", http_options=options) as client:
        config = types.GenerateContentConfig(tools=[search])
        return client.models.generate_content(model="m", contents="go", config=config)
"""

OPENAI_RUNNER = """
from openai.lib.responses_tool_runner import RegisteredFunction, ResponsesToolRunner

SEARCH = {
    "type": "function", "name": "search", "description": "Search.", "strict": False,
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
}


def run(llm_server):
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client:
        function = RegisteredFunction(SEARCH, lambda args: "found")
        return ResponsesToolRunner(functions=[function]).run(client, {"model": "m", "input": "go"})
"""

# A test of the harness: the script's steps, then a run that may fail (the fault may end
# it; what counts is that the test passes with the fault fired).
TEST = """
{marker}
def test_{name}(llm_server, trace):
    llm_server.script({script}, strict=False)
    try:
        run(llm_server)
    except Exception:
        pass
"""
PLAIN = "[call_tool('search', query='x'), call_tool('search', query='x'), say('done')]"

# What nothing of the kit covers: an MCP client's call has no model of the kit behind it;
# the Agents SDK ends its run on a call to an unknown tool, recording no tool event, and
# google-genai's automatic function calling raises KeyError on one; the openai SDK's tool
# runner stops its run on one, before any function.
UNREACHABLE = {
    ("mcp", "invalid_args"),
    ("mcp", "unknown_tool"),
    ("openai_agents", "unknown_tool"),
    ("google_genai", "unknown_tool"),
    ("openai", "unknown_tool"),
}

FRAMEWORKS = {
    "pydantic_ai": PYDANTIC_AI,
    "langchain": LANGCHAIN,
    "openai_agents": OPENAI_AGENTS,
    "mcp": MCP,
    "anthropic": ANTHROPIC,
    "google_genai": GOOGLE_GENAI,
    "openai": OPENAI_RUNNER,
}


def _session(pytester: pytest.Pytester, harness: str, name: str, marker: str, script: str):
    source = HEAD + harness + TEST.format(marker=marker, name=name, script=script)
    path = pytester.makepyfile(**{f"test_{name}": source})
    # the flag after the test path: before it, it would take the path as its JSON path
    result = pytester.runpytest("-p", "no:randomly", path.name, "--agentfaults-coverage=cov.json")
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "cov.json").read_text())


def _row(data: dict, framework: str) -> dict:
    [row] = [
        r
        for r in data["rows"]
        if r["kind"] == "tool" and r["name"] == "search" and r["framework"] == framework
    ]
    return row


def _followed(suggestion: str) -> tuple[str, str]:
    """The suggestion as a test's marker and script; the ``...`` of a script filled in."""
    if suggestion.startswith("@pytest.mark.inject_fault("):
        return suggestion, PLAIN
    script = re.match(r"llm_server\.script\((\[.*\])\) \(", suggestion)
    assert script, suggestion
    steps = script.group(1).replace('call_tool("search", ...)', 'call_tool("search", query="x")')
    return "", steps.replace("...]", "say('done')]")


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_each_suggestion_for_a_framework_tool_covers_its_cell(
    pytester: pytest.Pytester, framework: str
) -> None:
    harness = FRAMEWORKS[framework]
    before = _session(pytester, harness, "plain", "", PLAIN)
    suggestions = {
        s["fault"]: s["marker"]
        for s in before["suggestions"]
        if s["row"] == f"tool search ({framework})"
    }
    assert set(suggestions) == set(_row(before, framework)["cells"])  # nothing covered yet
    for fault_class, suggestion in suggestions.items():
        assert "delay=" not in suggestion  # virtual: never times out a framework's tool
        assert 'llm="' not in suggestion  # never reaches a framework agent's model
        if (framework, fault_class) in UNREACHABLE:
            # nothing of the kit reaches it: said so, with the exclusion to write
            assert not suggestion.startswith(("@", "llm_server")), suggestion
            assert f"= search ({framework}):{fault_class}" in suggestion
            continue
        marker, script = _followed(suggestion)
        after = _session(pytester, harness, fault_class, marker, script)
        cell = _row(after, framework)["cells"][fault_class]
        assert cell["covered"], (framework, fault_class, suggestion)
        if fault_class == "invalid_args":  # the server's row: the same script covers it
            [host] = [r for r in after["rows"] if r["name"] == "llm_server"]
            assert host["cells"]["malformed_tool_args"]["covered"]
    if framework != "mcp":
        [host] = [
            s["marker"]
            for s in before["suggestions"]
            if (s["row"], s["fault"]) == ("host llm_server", "malformed_tool_args")
        ]
        assert host.startswith("llm_server.script([malformed.tool_args(), ...])")


def test_the_mcp_exclusion_the_suggestion_names_excludes_the_cell(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
        "agentfaults_coverage_exclude = search (mcp):invalid_args\n",
    )
    data = _session(pytester, MCP, "plain", "", PLAIN)
    cells = _row(data, "mcp")["cells"]
    assert cells["invalid_args"]["excluded"]
    assert not cells["unknown_tool"]["excluded"]
