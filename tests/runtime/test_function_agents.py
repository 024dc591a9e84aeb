"""An agent made with `Agent.from_function` answers a run with its function, no model.

Such an agent is usually a deterministic fixer, but a user can run it as any other agent
(a stand-in for a model-driven one in a test): it gets the last message of the run.
"""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults.runtime.models.base import Message


def test_a_function_agent_answers_the_prompt_with_the_function_s_result():
    seen: list[str] = []

    def shout(text: str) -> str:
        seen.append(text)
        return text.upper()

    result = af.Agent.from_function("shout", shout).run("hello")
    assert seen == ["hello"]
    assert result.output == "HELLO"
    assert result.status == "ok"
    assert result.usage.llm_calls == 0
    start, end = result.trace.events
    assert (start.type, start.detail) == ("run.start", "hello")
    assert (end.type, end.status, end.detail) == ("run.end", "ok", "HELLO")


def test_a_function_agent_given_a_conversation_answers_its_last_message():
    seen: list[str] = []

    def echo(text: str) -> str:
        seen.append(text)
        return f"echo: {text}"

    history = [Message.user("first"), Message.assistant("ok"), Message.user("second")]
    result = af.Agent.from_function("echo", echo).run(messages=history)
    assert seen == ["second"]
    assert result.output == "echo: second"
    assert result.trace.of("run.start")[0].detail == "second"


def test_a_function_agent_s_structured_answer_is_the_output_as_returned():
    answer = {"count": 3}
    result = af.Agent.from_function("fixed", lambda text: answer).run("go")
    assert result.output is answer
    assert result.trace.of("run.end")[0].detail == '{"count":3}'
