"""`peek_answer`: the answer a script's next step gives, the step left in place.

A cut stream sends the start of this answer; the request asked again takes the step.
"""

from __future__ import annotations

from pytest_agentfaults.runtime.models.base import Message, ModelRequest
from pytest_agentfaults.testing import ScriptedModel, call_tool, fail, say
from pytest_agentfaults.testing.scripted import peek_answer

ASK = ModelRequest(messages=[Message.user("Weather in Paris?")])


def test_a_peek_takes_no_step_and_records_no_request():
    model = ScriptedModel([say("Sunny."), say("Rain.")], strict=False)
    peeked = peek_answer(model, ASK)
    assert peeked is not None
    assert peeked.message.content == "Sunny."
    assert (model.remaining, model.calls) == (2, 0)
    assert model.request(ASK).message.content == "Sunny."


def test_a_peeked_tool_call_has_the_ids_the_taken_step_gets():
    model = ScriptedModel([call_tool("get_weather", city="Paris")], strict=False)
    peeked = peek_answer(model, ASK)
    assert peeked is not None
    taken = model.request(ASK)
    assert [c.id for c in peeked.message.tool_calls] == ["call_1"]
    assert [c.id for c in taken.message.tool_calls] == ["call_1"]
    assert peeked.message.tool_calls[0].arguments == taken.message.tool_calls[0].arguments


def test_no_answer_to_peek_without_a_step_a_function_or_for_a_failure_step():
    assert peek_answer(ScriptedModel([], strict=False), ASK) is None
    assert peek_answer(ScriptedModel.from_function(lambda request: say("x")), ASK) is None
    failing = ScriptedModel([fail.http(503)], strict=False)
    assert peek_answer(failing, ASK) is None
    assert failing.remaining == 1


def test_a_repeat_last_model_peeks_its_last_step_once_spent():
    model = ScriptedModel([say("Again.")], on_exhausted="repeat_last")
    model.request(ASK)
    peeked = peek_answer(model, ASK)
    assert peeked is not None
    assert peeked.message.content == "Again."
