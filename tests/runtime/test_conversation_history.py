"""A run continuing a conversation: the history a user passes is what the model is sent.

``run(messages=...)`` continues a conversation the application kept: the agent's
instructions lead it unless it has a system message of its own, and it may end with a
user message or with the results of the tools the model last asked for. A run stopped
between the model's tool calls and their results (a budget, a cancel) answers the calls it
did not run, so the conversation it returns can go on.
"""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime.models.base import Message, ToolCall


def agent_with(model, **kwargs):
    return af.Agent("bot", model=model, clock=af.VirtualClock(), **kwargs)


def sent(model):
    return [(m.role, m.content) for m in model.requests[0].messages]


def test_instructions_lead_a_conversation_that_has_no_system_message():
    model = ScriptedModel([say("fine")])
    history = [Message.user("hi"), Message.assistant("hello"), Message.user("how are you?")]
    agent_with(model, instructions="Be brief.").run(messages=history)
    assert sent(model) == [
        ("system", "Be brief."),
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "how are you?"),
    ]


def test_a_conversation_s_own_system_message_is_kept_instead_of_the_instructions():
    model = ScriptedModel([say("fine")])
    history = [Message.system("Be formal."), Message.user("hi")]
    agent_with(model, instructions="Be brief.").run(messages=history)
    assert sent(model) == [("system", "Be formal."), ("user", "hi")]


def test_a_conversation_may_end_with_the_results_of_the_model_s_tool_calls():
    model = ScriptedModel([say("it is 21C")])
    call = ToolCall(id="call_1", name="weather", arguments='{"city": "Paris"}')
    history = [
        Message.user("weather in Paris?"),
        Message.assistant("", [call]),
        Message.tool_result("21C", tool_call_id="call_1", name="weather"),
    ]
    result = agent_with(model).run(messages=history)
    assert result.output == "it is 21C"
    assert sent(model)[-1] == ("tool", "21C")


def test_a_conversation_ending_with_the_model_s_answer_is_refused_with_the_fix():
    history = [Message.user("hi"), Message.assistant("hello")]
    with pytest.raises(af.UsageError) as refused:
        agent_with(ScriptedModel([say("x")], strict=False)).run(messages=history)
    assert str(refused.value) == "run() needs a prompt (or messages ending with a user message)"


# --------------------------------------------------- a run stopped between call and result


def unanswered_calls(messages: list[Message]) -> list[str]:
    """The tool calls the providers would refuse: an assistant's call with no result after it.

    OpenAI and Anthropic reject a conversation whose assistant tool calls are not each
    answered by a tool result before the next user or assistant message.
    """
    missing: list[str] = []
    for index, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        answered = set()
        for later in messages[index + 1 :]:
            if later.role != "tool":
                break
            answered.add(later.tool_call_id)
        missing += [call.id for call in message.tool_calls if call.id not in answered]
    return missing


@af.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 21C"


def test_calls_past_max_tool_calls_are_answered_as_not_run():
    model = ScriptedModel(
        [af.call_tools([("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"})])]
    )
    agent = agent_with(model, tools=[lookup], budget=af.Budget(max_tool_calls=1))
    result = agent.run("weather in Paris and Rome?")
    assert result.status == "max_iterations"
    assert unanswered_calls(result.messages) == []
    first, second = [m for m in result.messages if m.role == "tool"]
    assert first.content == "Paris: 21C"
    not_run = json.loads(second.content)
    assert not_run["ok"] is False
    assert not_run["tool"] == "lookup"
    assert not_run["error_type"] == "aborted"
    assert not_run["attempts"] == 0
    assert "not run" in not_run["error"]
    assert "max_tool_calls=1" in not_run["error"]
    # the application can go on with the conversation: the stop left it well-formed
    going_on = ScriptedModel([say("Paris is 21C; Rome I did not check.")])
    with agent.override(model=going_on):
        agent.run(messages=[*result.messages, Message.user("and Rome?")])
    assert unanswered_calls(going_on.requests[0].messages) == []


def test_a_call_cancelled_before_it_ran_is_answered_as_not_run():
    token = af.CancelToken()

    def stop_when_the_model_answers(event):
        if event.type == "llm.response":
            token.cancel("user pressed stop")

    model = ScriptedModel([call_tool("lookup", city="Paris")])
    agent = agent_with(model, tools=[lookup], observer=stop_when_the_model_answers)
    result = agent.run("weather?", cancel=token)
    assert result.status == "cancelled"
    assert unanswered_calls(result.messages) == []
    (not_run,) = [json.loads(m.content) for m in result.messages if m.role == "tool"]
    assert not_run["error_type"] == "aborted"
    assert "cancelled" in not_run["error"]
    assert "user pressed stop" in not_run["error"]
    assert result.trace.count("tool.call") == 0  # nothing ran, nothing is traced as run


@pytest.mark.asyncio
async def test_parallel_calls_past_the_cap_are_answered_in_arun_too():
    model = ScriptedModel(
        [af.call_tools([("lookup", {"city": c}) for c in ("Paris", "Rome", "Oslo")])]
    )
    agent = agent_with(model, tools=[lookup], budget=af.Budget(max_tool_calls=2))
    result = await agent.arun("weather?")
    assert result.status == "max_iterations"
    assert unanswered_calls(result.messages) == []
    contents = [m.content for m in result.messages if m.role == "tool"]
    assert contents[:2] == ["Paris: 21C", "Rome: 21C"]
    assert json.loads(contents[2])["error_type"] == "aborted"


def test_a_run_that_ends_normally_adds_nothing():
    model = ScriptedModel([call_tool("lookup", city="Paris"), say("21C")])
    result = agent_with(model, tools=[lookup]).run("weather?")
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
