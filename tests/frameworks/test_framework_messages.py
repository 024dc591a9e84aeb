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
