"""A ``returns=`` fault on a LangChain tool whose answer is content and an artifact.

``@tool(response_format="content_and_artifact")`` returns ``(content, artifact)``: the
model reads the content, the app keeps the artifact. A fault's value stands in for what
the model reads; LangChain refuses anything but a pair from such a tool, and a ToolNode
that handles tool errors would hand the model that refusal, while the trace recorded the
fault's value as the result.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

import pytest_agentfaults as af


@tool(response_format="content_and_artifact")
def search(query: str) -> tuple[str, dict[str, Any]]:
    """Search the web."""
    return f"3 pages about {query}", {"pages": 3}


def ask(*queries: str) -> dict[str, Any]:
    calls = [{"name": "search", "args": {"query": q}, "id": q} for q in queries]
    return {"messages": [AIMessage(content="", tool_calls=calls)]}


def tools_graph() -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([search], handle_tool_errors=True))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


@pytest.mark.inject_fault(tool="search", returns="cached page")
def test_a_returned_value_is_the_content_the_model_reads(trace: af.Trace) -> None:
    state = tools_graph().invoke(ask("q"))
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "success"
    assert message.content == "cached page"
    assert message.artifact is None  # the tool never ran: nothing for the app to keep
    assert trace.of("tool.result")[0].detail == "cached page"


@pytest.mark.inject_fault(tool="search", returns=("cached page", {"pages": 1}))
def test_a_returned_pair_is_the_content_and_the_artifact(trace: af.Trace) -> None:
    message = search.invoke(
        {"type": "tool_call", "name": "search", "args": {"query": "q"}, "id": "1"}
    )
    assert (message.content, message.artifact) == ("cached page", {"pages": 1})


def test_the_tool_itself_still_answers_with_both() -> None:
    message = search.invoke(
        {"type": "tool_call", "name": "search", "args": {"query": "q"}, "id": "1"}
    )
    assert (message.content, message.artifact) == ("3 pages about q", {"pages": 3})
