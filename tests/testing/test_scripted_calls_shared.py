"""A scripted tool call is a frozen value: answers may share one, and only an equal one.

`scripted_call` hands back the last `ToolCall` it made when the id, name and arguments
are the ones it was made from (the name and arguments the very same objects, as a step's
are at each of its turns); anything else is validated into a new call.
"""

from __future__ import annotations

import pydantic
import pytest

from pytest_agentfaults.runtime.models.base import ModelRequest, ToolCall, user_message
from pytest_agentfaults.testing import ScriptedModel, call_tool, say
from pytest_agentfaults.testing.steps import scripted_call


def test_the_same_call_again_is_the_call_made_before():
    name, arguments = "add", '{"a": 1}'
    first = scripted_call("call_1", name, arguments)
    assert first == ToolCall(id="call_1", name="add", arguments='{"a": 1}')
    assert scripted_call("call_1", name, arguments) is first


@pytest.mark.parametrize(
    ("call_id", "name", "arguments"),
    [
        ("call_2", "add", '{"a": 1}'),  # another id
        ("call_1", "sub", '{"a": 1}'),  # another tool
        ("call_1", "add", '{"a": 2}'),  # other arguments
    ],
)
def test_a_call_that_differs_in_any_part_is_made_anew(call_id, name, arguments):
    before = scripted_call("call_1", "add", '{"a": 1}')
    made = scripted_call(call_id, name, arguments)
    assert made is not before
    assert (made.id, made.name, made.arguments) == (call_id, name, arguments)


def test_equal_text_that_is_another_object_is_validated_again():
    arguments = '{"a": 1}'
    before = scripted_call("call_1", "add", arguments)
    again = arguments.replace("1", "2").replace("2", "1")  # equal, not the same object
    assert again == arguments
    assert again is not arguments
    made = scripted_call("call_1", "add", again)
    assert made == before
    assert made is not before


def test_a_shared_call_cannot_be_changed():
    call = scripted_call("call_1", "add", "{}")
    with pytest.raises(pydantic.ValidationError):
        call.arguments = '{"a": 2}'  # type: ignore[misc]
    assert scripted_call("call_1", "add", "{}").arguments == "{}"


def test_a_script_replayed_answers_the_same_calls_and_counts_the_same_tokens():
    model = ScriptedModel([call_tool("add", a=1, b=2), say("3")], strict=False)
    request = ModelRequest([user_message("what is 1 + 2?")])
    first = model.request(request)
    model.reset()
    second = model.request(request)
    assert second == first
    assert second.message.tool_calls[0] is first.message.tool_calls[0]
    assert second.message is not first.message  # the message around it is new each turn
    assert (second.usage.input_tokens, second.usage.output_tokens) == (5, 1 + 4)
