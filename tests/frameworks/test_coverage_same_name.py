"""Tools of one name in different frameworks are rows of their own in the fault coverage.

Rows were keyed by (kind, name): a LangChain ``search`` and an MCP ``search`` became one
row, labelled with one framework, and the cells one covered showed on the other (a new
user's audit). Real frameworks, real tools, through pytester.
"""

from __future__ import annotations

import json

# Loaded here, before pytester's runs: a module pytester's in-process run loads is dropped
# after it, and mcp's cryptography cannot be loaded a second time in one process.
import langchain_core.tools  # noqa: F401
import mcp.server.mcpserver  # noqa: F401
import pytest

LANGCHAIN = '''
import pytest
from langchain_core.tools import tool

@tool
def search(query: str) -> str:
    """Search."""
    return "ok"

@pytest.mark.inject_fault(tool="search", returns="faked")
def test_langchain_search():
    assert search.invoke({"query": "x"}) == "faked"
'''

MCP = '''
import asyncio

import mcp
import pytest
from mcp.server.mcpserver import MCPServer

server = MCPServer("docs")

@server.tool()
def search(query: str) -> str:
    """Search."""
    return "ok"

@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_mcp_search_fails_once(trace):
    async def main():
        async with mcp.Client(server) as client:
            return [await client.call_tool("search", {"query": "x"}) for _ in range(2)]

    first, second = asyncio.run(main())
    assert first.is_error and not second.is_error
'''

KIT = '''
import pytest
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

@af.tool
def search(query: str) -> str:
    """Search."""
    return "ok"

@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="no index"))
def test_kit_search(trace):
    model = ScriptedModel([call_tool("search", query="x"), say("none")])
    agent = af.Agent("bot", model=model, tools=[search], clock=af.VirtualClock())
    assert agent.run("go").output == "none"
'''


def _suite(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_lc=LANGCHAIN, test_mcp_search=MCP, test_kit=KIT)


def _rows(data: dict) -> dict[tuple[str, str], dict]:
    return {(row["name"], row["framework"]): row for row in data["rows"] if row["kind"] == "tool"}


def _covered(row: dict) -> set[str]:
    return {name for name, cell in row["cells"].items() if cell["covered"]}


def test_each_frameworks_search_is_a_row_with_its_own_cells(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    result = pytester.runpytest("-p", "no:randomly", "--agentfaults-coverage=cov.json")
    result.assert_outcomes(passed=3)
    rows = _rows(json.loads((pytester.path / "cov.json").read_text()))
    assert set(rows) == {("search", "langchain"), ("search", "mcp"), ("search", "agentfaults")}
    assert _covered(rows[("search", "langchain")]) == set()  # returns= a value covers nothing
    assert _covered(rows[("search", "mcp")]) == {"retryable"}
    assert rows[("search", "mcp")]["cells"]["retryable"]["tests"] == [
        "test_mcp_search.py::test_mcp_search_fails_once"
    ]
    assert _covered(rows[("search", "agentfaults")]) == {"tool_failure"}
    table = [line.split() for line in result.outlines if line.startswith("tool search")]
    assert [line[:3] for line in table] == [
        ["tool", "search", "·"],  # the kit's own tool: no framework shown
        ["tool", "search", "(langchain)"],
        ["tool", "search", "(mcp)"],
    ]
    assert table[2][3] == "✓"  # MCP's retry column
    assert table[1][3] == "·"  # ...not LangChain's


def test_the_suggestions_and_the_html_name_each_frameworks_row(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    pytester.runpytest(
        "-p", "no:randomly", "--agentfaults-coverage=cov.json", "--agentfaults-html=r.html"
    ).assert_outcomes(passed=3)
    data = json.loads((pytester.path / "cov.json").read_text())
    labels = {s["row"] for s in data["suggestions"] if s["row"].startswith("tool")}
    assert labels == {"tool search", "tool search (langchain)", "tool search (mcp)"}
    assert not any(
        s["row"] == "tool search (mcp)" and s["fault"] == "retryable" for s in data["suggestions"]
    )
    section = (pytester.path / "r.html").read_text().split('<section id="fault-coverage">')[1]
    for label in ("tool search", "tool search (langchain)", "tool search (mcp)"):
        assert f"<tr><th>{label}</th>" in section


def test_an_exclusion_can_name_one_frameworks_tool(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
        "agentfaults_coverage_exclude =\n    search (mcp):timeout\n    search:unknown_tool\n",
    )
    result = pytester.runpytest("-p", "no:randomly", "--agentfaults-coverage=cov.json")
    result.assert_outcomes(passed=3)
    rows = _rows(json.loads((pytester.path / "cov.json").read_text()))
    excluded = {
        key: {n for n, c in row["cells"].items() if c["excluded"]} for key, row in rows.items()
    }
    assert excluded == {
        ("search", "mcp"): {"timeout", "unknown_tool"},
        ("search", "langchain"): {"unknown_tool"},  # the bare name is every framework's
        ("search", "agentfaults"): {"unknown_tool"},
    }


@pytest.mark.slow
def test_xdist_workers_rows_merge_by_framework_too(pytester: pytest.Pytester) -> None:
    _suite(pytester)
    alone = pytester.runpytest_subprocess("-p", "no:randomly", "--agentfaults-coverage=a.json")
    alone.assert_outcomes(passed=3)
    spread = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "--agentfaults-coverage=b.json"
    )
    spread.assert_outcomes(passed=3)
    a = json.loads((pytester.path / "a.json").read_text())
    b = json.loads((pytester.path / "b.json").read_text())
    assert len(_rows(b)) == 3
    assert a["rows"] == b["rows"]
    assert a["total"] == b["total"]
