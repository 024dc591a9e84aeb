"""A run continuing a conversation: the history a user passes is what the model is sent.

``run(messages=...)`` continues a conversation the application kept: the agent's
instructions lead it unless it has a system message of its own, and it may end with a
user message or with the results of the tools the model last asked for.
"""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, say
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
