"""What the kit says when a fault meant for a framework's agent never fired.

An ``llm=`` fault acts on an `af.Agent`'s model calls only; another framework's agent
calls its model over HTTP. The message must not claim that no model was called, and must
name the fault that reaches such a model.
"""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import pytest_agentfaults as af


def hello(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("hi")])


def test_an_llm_fault_on_a_pydantic_ai_agent_says_to_fault_its_http() -> None:
    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:  # noqa: PT012
        scope.faults.llm.rate_limit()
        assert Agent(FunctionModel(hello)).run_sync("hello").output == "hi"
    message = str(failed.value)
    assert "the model was called 0 times" not in message  # it was called, once
    assert "no af.Agent model call was seen" in message
    assert "http=" in message  # what reaches a pydantic-ai, LangChain or Agents SDK model


def test_an_llm_fault_beside_a_framework_test_model_says_it_cannot_be_faulted() -> None:
    # FunctionModel, TestModel and LangChain's fake chat models make no HTTP call: the
    # message must not say the model "is called over HTTP", and must say where to point it.
    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:  # noqa: PT012
        scope.faults.llm.server_error()
        assert Agent(FunctionModel(hello)).run_sync("hello").output == "hi"
    message = " ".join(str(failed.value).split())
    assert "is called over HTTP" not in message
    assert (
        "a framework's own test model (pydantic-ai's TestModel or FunctionModel, "
        "LangChain's fake chat models) makes no HTTP call, and no fault reaches it"
    ) in message
    assert "point the agent's model at the llm_server fixture" in message
    assert "function=" in message  # the way to make a FunctionModel's function raise


def test_a_framework_version_the_adapter_cannot_hook_is_not_called_watched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An Agents SDK that moved its private tool invoker: its tools run unwatched, and the
    # message must say so instead of naming openai_agents among the frameworks watched.
    import agents.tool

    monkeypatch.delattr(agents.tool, "_FailureHandlingFunctionToolInvoker")
    with pytest.raises(AssertionError) as failed, af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError())
    message = str(failed.value)
    assert "the fault watches the tools of: af.Agent" in message
    assert "openai_agents" not in message.split("the tools of:")[1].split("\n", maxsplit=1)[0]
    assert (
        "agents is imported, but its tools could not be hooked: the Agents SDK has no "
        "_FailureHandlingFunctionToolInvoker.__call__"
    ) in message
    assert "put a function= fault on the function the tool calls instead" in message


FUNCTION_MODEL = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

import fm_models


@pytest.mark.inject_fault(function="fm_models:answer", raises=ConnectionError("model down"))
def test_the_function_of_a_function_model_raises(trace):
    agent = Agent(FunctionModel(fm_models.answer))  # built after the fault replaced it
    with pytest.raises(ConnectionError, match="model down"):
        agent.run_sync("hello")
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.fault", "tool.error"]
"""


def test_a_function_fault_makes_a_function_models_function_raise(
    pytester: pytest.Pytester,
) -> None:
    # What the unfired llm= message suggests for a FunctionModel, checked.
    pytester.makepyfile(
        fm_models="""
from pydantic_ai.messages import ModelResponse, TextPart


def answer(messages, info):
    return ModelResponse(parts=[TextPart("hi")])
""",
        test_fm=FUNCTION_MODEL,
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
