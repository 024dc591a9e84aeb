"""How a run reads a model's answer and builds its messages, whatever class they come in.

A run reads an exact `ModelResponse` field by field from each model's ``__dict__`` (an
attribute read of a pydantic model is slow), and any other class through its attributes:
both give the same events, usage and soft failures. The messages a run makes go through
the models' own validators as they are now, never a copy kept from earlier.
"""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime.models import base
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ModelResponse
from pytest_agentfaults.runtime.output import soft_failure


class Reply(ModelResponse):
    """A client's own response class: a run reads it through its attributes."""


class RepliesModel:
    """Answers with `Reply` instances built from a script's answers."""

    name = "replies"

    def __init__(self, script: ScriptedModel) -> None:
        self.script = script

    def request(self, request: ModelRequest) -> ModelResponse:
        answer = self.script.request(request)
        return Reply.model_validate(answer.model_dump())


@af.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def run_with(model: object) -> af.RunResult[str]:
    agent = af.Agent("bot", model=model, tools=[add], clock=af.VirtualClock())
    return agent.run("what is 1 + 2?")


@pytest.mark.parametrize("subclass", [False, True], ids=["ModelResponse", "its subclass"])
def test_an_answer_gives_the_same_events_and_usage_in_either_class(subclass):
    script = ScriptedModel([call_tool("add", a=1, b=2), say("three, it is")])
    result = run_with(RepliesModel(script) if subclass else script)
    assert result.output == "three, it is"
    responses = result.trace.of("llm.response")
    assert [(e.status, e.detail) for e in responses] == [
        ("tool_calls", "tool calls: add"),
        ("stop", "three, it is"),
    ]
    # Words as tokens: the prompt (5), then the prompt, the call (1 + 4) and its result (1);
    # out, the call (1 + 4), then the answer (3)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (5 + 11, 5 + 3)


@pytest.mark.parametrize("subclass", [False, True], ids=["ModelResponse", "its subclass"])
def test_an_empty_answer_is_a_soft_failure_in_either_class(subclass):
    script = ScriptedModel([say("  ")])
    agent = af.Agent(
        "bot", model=RepliesModel(script) if subclass else script, clock=af.VirtualClock()
    )
    with pytest.raises(af.MalformedResponseError, match="returned an empty answer"):
        agent.run("hi")


def test_a_blocked_answer_of_a_subclass_is_a_soft_failure_naming_its_reason():
    blocked = Reply.model_validate(
        {"message": {"role": "assistant", "content": "no"}, "finish_reason": "content_filter"}
    )

    class Blocking:
        name = "blocking"

        def request(self, request: ModelRequest) -> ModelResponse:
            return blocked

    with pytest.raises(af.MalformedResponseError, match="finish_reason='content_filter'"):
        af.Agent("bot", model=Blocking(), clock=af.VirtualClock()).run("hi")


def test_the_message_constructors_build_what_the_classmethods_build():
    assert base.user_message("hi") == Message.user("hi")
    assert base.tool_message("3", "call_1", "add") == Message.tool_result(
        "3", tool_call_id="call_1", name="add"
    )
    data = {"message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
    assert base.validate_response(data) == ModelResponse.model_validate(data)


@pytest.mark.parametrize(
    ("model", "build"),
    [
        (Message, lambda: base.user_message("hi")),
        (Message, lambda: base.tool_message("3", "call_1", "add")),
        (ModelResponse, lambda: base.validate_response({"message": {"role": "assistant"}})),
    ],
    ids=["user_message", "tool_message", "validate_response"],
)
def test_the_constructors_use_the_validator_the_class_holds_now(monkeypatch, model, build):
    validator = model.__pydantic_validator__
    seen = []

    class Spy:
        def validate_python(self, data):
            seen.append(data)
            return validator.validate_python(data)

    monkeypatch.setattr(model, "__pydantic_validator__", Spy())
    built = build()
    assert isinstance(built, model)
    assert len(seen) == 1  # the class's validator of now, not one kept from before


def test_an_answer_that_calls_a_tool_is_never_a_soft_failure():
    calling = ModelResponse.model_validate(
        {
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "add", "arguments": "{}"}],
            },
            "finish_reason": "content_filter",
        }
    )
    assert soft_failure(calling, "m") is None
    assert soft_failure(calling.model_copy(update={"message": Message.assistant("")}), "m")


def test_a_look_alike_answer_may_carry_look_alike_tool_calls():
    # A client's own classes, with no __dict__: the run reads a call's fields as attributes.
    from dataclasses import dataclass

    @dataclass(frozen=True, slots=True)
    class Call:
        id: str
        name: str
        arguments: str

    @dataclass(frozen=True, slots=True)
    class Said:
        content: str
        tool_calls: list[Call]

    @dataclass(frozen=True, slots=True)
    class Usage:
        input_tokens: int = 1
        output_tokens: int = 1

    @dataclass(frozen=True, slots=True)
    class Answer:
        message: Said
        finish_reason: str
        usage: Usage

    class LookAlike:
        name = "look-alike"

        def __init__(self) -> None:
            self.turns = 0

        def request(self, request: ModelRequest) -> Answer:
            self.turns += 1
            if self.turns == 1:
                return Answer(
                    Said("", [Call("c1", "add", '{"a": 1, "b": 2}')]), "tool_calls", Usage()
                )
            return Answer(Said("3", []), "stop", Usage())

    result = run_with(LookAlike())
    assert result.output == "3"
    [done] = result.trace.of("tool.result")
    assert (done.tool, done.call_id) == ("add", "c1")
    assert result.messages[-2].content == "3"
