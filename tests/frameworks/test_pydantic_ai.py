"""Tool faults reach a real pydantic-ai `Agent`, driven by pydantic-ai's own `FunctionModel`.

The adapter hooks the toolsets' ``call_tool``: each attempt pydantic-ai makes at a tool is one
occurrence, and what a fault injects goes through pydantic-ai's own recovery (tool
``retries``, ``ModelRetry`` fed back to the model).
"""

from __future__ import annotations

import importlib.metadata
import sys
from dataclasses import replace
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry, Tool, UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

import pytest_agentfaults as af


def calls_search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model that calls ``search`` until the tool answers, then repeats the answer."""
    for part in messages[-1].parts:
        if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
            return ModelResponse(parts=[TextPart(f"answer: {part.content}")])
    return ModelResponse(parts=[ToolCallPart("search", {"q": "docs"})])


def feedback(result: Any) -> list[str]:
    """What the model was told after each failed attempt (pydantic-ai's retry prompts)."""
    return [
        str(part.content)
        for message in result.all_messages()
        for part in message.parts
        if getattr(part, "outcome", None) == "retried"
    ]


def make_agent(calls: list[str], retries: int = 3) -> Agent[None, str]:
    agent = Agent(FunctionModel(calls_search))

    @agent.tool_plain(retries=retries)
    def search(q: str) -> str:
        calls.append(q)
        return "the docs"

    return agent


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("index is warming up"), times=2)
def test_raises_goes_through_pydantic_ais_own_tool_retries(trace: af.Trace) -> None:
    calls: list[str] = []
    result = make_agent(calls).run_sync("find the docs")
    assert result.output == "answer: the docs"
    assert calls == ["docs"]  # the two faulted attempts never reached the tool
    assert feedback(result) == ["index is warming up"] * 2
    assert trace.tool_attempts("search") == 3
    assert trace.retries("search") == 2  # pydantic-ai's two retries
    trace.assert_sequence(["tool.fault", "tool.fault", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"pydantic_ai"}
    trace.assert_resilient()


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("down"), times=4)
def test_more_faults_than_retries_exhausts_the_tools_retries(
    trace: af.Trace, faults: af.FaultPlan
) -> None:
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 3"):
        make_agent([]).run_sync("find the docs")
    assert trace.tool_attempts("search") == 4
    assert len(faults.fired) == 4


@pytest.mark.asyncio
async def test_tool_failure_maps_to_model_retry_in_an_async_run(
    faults: af.FaultPlan, trace: af.Trace
) -> None:
    faults.tool("search").returns(
        af.ToolFailure(error="quota exceeded", recommendations=["wait a minute"])
    )
    calls: list[str] = []
    result = await make_agent(calls).run("find the docs")
    assert feedback(result) == ["quota exceeded Recommendations: wait a minute"]
    assert result.output == "answer: the docs"
    trace.assert_sequence("tool.call", "tool.fault", "tool.error", "tool.call", "tool.result")
    assert trace.errors("search")[0].error.type == "ToolFailure"


@pytest.mark.asyncio
async def test_an_async_tool_and_a_value_returned_in_its_place(
    faults: af.FaultPlan, trace: af.Trace
) -> None:
    faults.tool("search").returns("cached docs")
    agent = Agent(FunctionModel(calls_search))

    @agent.tool_plain
    async def search(q: str) -> str:
        raise AssertionError("the fault answers in its place")

    result = await agent.run("find")
    assert result.output == "answer: cached docs"
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.fault", "tool.result"]


def test_another_exception_takes_pydantic_ais_own_path(faults: af.FaultPlan) -> None:
    faults.tool("search").raises(ConnectionError("reset"))
    with pytest.raises(ConnectionError, match="reset"):
        make_agent([]).run_sync("find")  # pydantic-ai does not retry an arbitrary error


def test_a_toolset_given_to_the_agent_is_reached(faults: af.FaultPlan, trace: af.Trace) -> None:
    calls: list[str] = []

    def search(q: str) -> str:
        calls.append(q)
        return "from the toolset"

    faults.tool("search").raises(ModelRetry("retry me"))
    agent = Agent(FunctionModel(calls_search), toolsets=[FunctionToolset([search], max_retries=2)])
    assert agent.run_sync("go").output == "answer: from the toolset"
    assert trace.tool_attempts("search") == 2
    assert calls == ["docs"]


def calls_tool_named(name: str) -> FunctionModel:
    """A model that calls the tool the model sees as ``name`` until it answers."""

    def call(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        for part in messages[-1].parts:
            if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
                return ModelResponse(parts=[TextPart(f"answer: {part.content}")])
        return ModelResponse(parts=[ToolCallPart(name, {"q": "docs"})])

    return FunctionModel(call)


def plain_search(q: str) -> str:
    return f"found {q}"


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("busy"), times=2)
def test_a_fault_matches_the_tools_own_name_under_prefixed_and_renamed_toolsets(
    trace: af.Trace,
) -> None:
    own = FunctionToolset([Tool(plain_search, name="search")])
    for toolset, seen in (
        (own.prefixed("web"), "web_search"),
        (own.renamed({"find": "search"}), "find"),
    ):
        agent = Agent(calls_tool_named(seen), toolsets=[toolset], retries=2)
        assert agent.run_sync("go").output == "answer: found docs"
    assert [e.type for e in trace.of("tool.fault")] == ["tool.fault"] * 2
    assert {e.tool for e in trace.of("tool.*")} == {"search"}


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("busy"), times=1)
def test_a_fault_matches_the_tools_own_name_when_prepare_renames_it(trace: af.Trace) -> None:
    async def rename(ctx: Any, tool_def: ToolDefinition) -> ToolDefinition:
        return replace(tool_def, name="find_docs")  # what the model sees

    tool = Tool(plain_search, name="search", prepare=rename, max_retries=2)
    agent = Agent(calls_tool_named("find_docs"), tools=[tool])
    assert agent.run_sync("go").output == "answer: found docs"
    assert trace.tool_attempts("search") == 2  # the faulted attempt and pydantic-ai's retry
    assert trace.retries("search") == 1


def test_delay_moves_the_virtual_clock(
    faults: af.FaultPlan, trace: af.Trace, virtual_clock: af.VirtualClock
) -> None:
    faults.tool("search").delay(12)
    make_agent([]).run_sync("go")
    assert virtual_clock.now() >= 12
    assert trace.of("tool.fault")[0].status == "delay"


def test_an_unfaulted_tool_is_traced_too(trace: af.Trace) -> None:
    make_agent([]).run_sync("go")
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.result"]
    assert trace.of("tool.call")[0].detail == '{"q": "docs"}'


SUITE = """
import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.toolsets.function import FunctionToolset

ORIGINAL = FunctionToolset.__dict__["call_tool"]


def model(messages, info):
    for part in messages[-1].parts:
        if getattr(part, "part_kind", "") == "tool-return" and part.outcome != "retried":
            return ModelResponse(parts=[TextPart(str(part.content))])
    return ModelResponse(parts=[ToolCallPart("search", {"q": "x"})])


def agent():
    a = Agent(FunctionModel(model))

    @a.tool_plain(retries=2)
    def search(q: str) -> str:
        return "real"

    return a


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("no"))
def test_a_faulted():
    assert FunctionToolset.__dict__["call_tool"] is not ORIGINAL
    assert agent().run_sync("go").output == "real"
    raise RuntimeError("fails after the fault fired")


def test_b_next_test_sees_nothing_of_it(trace):
    assert agent().run_sync("go").output == "real"  # the fault of test_a is gone
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.result"]


@pytest.mark.inject_fault(tool="never_called", raises=ModelRetry("no"))
def test_c_strict_fault_never_fired():
    assert agent().run_sync("go").output == "real"


def test_d_after_the_strict_failure():
    assert agent().run_sync("go").output == "real"
"""


def test_teardown_unpatches_and_a_strict_fault_names_the_frameworks_watched(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    # After each test's teardown (logfinish runs after it), whether pydantic-ai is itself again
    pytester.makeconftest(
        """
        from pydantic_ai.toolsets.function import FunctionToolset

        ORIGINAL = FunctionToolset.__dict__["call_tool"]

        def pytest_runtest_logfinish(nodeid):
            same = FunctionToolset.__dict__["call_tool"] is ORIGINAL
            with open("unpatched.txt", "a") as out:
                out.write(f"{nodeid.split('::')[-1]} {same}\\n")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-q")
    result.assert_outcomes(passed=3, failed=1, errors=1)
    assert (pytester.path / "unpatched.txt").read_text().split() == [
        "test_a_faulted", "True",
        "test_b_next_test_sees_nothing_of_it", "True",
        "test_c_strict_fault_never_fired", "True",
        "test_d_after_the_strict_failure", "True",
    ]  # fmt: skip
    result.stdout.fnmatch_lines(
        [
            "*fault on tool 'never_called' never fired*",
            "*the fault watches the tools of: af.Agent, pydantic_ai*",
        ]
    )


def test_the_plugin_never_imports_pydantic_ai_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
        import sys
        import pytest

        @pytest.mark.inject_fault(tool="search", raises=ConnectionError(), strict=False)
        def test_kit_in_use(trace):
            assert "pydantic_ai" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "pydantic_ai" in sys.modules  # this process imported it: the subprocess did not
    # the header names the adapter pydantic-ai can get, without importing pydantic-ai
    version = importlib.metadata.version("pydantic-ai-slim")
    result.stdout.fnmatch_lines([f"agentfaults: tool faults also reach pydantic-ai {version}*"])
