"""A tool parameter's own `Field(alias=...)` is the name the model sees and sends.

`def search(from_: Annotated[str, Field(alias="from")])` is how a parameter gets a name
Python cannot spell (pydantic-ai's tools read it the same way). It used to be dropped
silently: the schema said `from_`, and a model sending `from` was refused.
"""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

import pytest_agentfaults as af


@af.tool
def search(
    from_: Annotated[str, Field(alias="from", description="Where to start.")],
    limit: int = Field(3, alias="max", ge=1),
    query: str = "",
) -> str:
    """Search."""
    return f"{from_}:{limit}:{query}"


def test_the_schema_names_the_alias():
    assert set(search.parameters["properties"]) == {"from", "max", "query"}
    assert search.parameters["required"] == ["from"]
    assert search.parameters["properties"]["from"]["description"] == "Where to start."
    assert search.parameters["properties"]["max"]["minimum"] == 1


@pytest.mark.parametrize(
    "arguments",
    [{"from": "a", "max": 5, "query": "q"}, '{"from": "a", "max": 5, "query": "q"}'],
    ids=["dict", "json"],
)
def test_the_model_sends_the_alias_and_the_function_gets_its_parameter(arguments):
    assert search.invoke(arguments) == "a:5:q"
    assert search.validate(arguments) == {"from_": "a", "limit": 5, "query": "q"}
    # invoke's happy path outside a test that collects a trace
    assert search.quick_check(arguments) == {"from_": "a", "limit": 5, "query": "q"}


def test_a_left_out_aliased_parameter_keeps_its_default():
    assert search.invoke({"from": "a"}) == "a:3:"
    assert search.validate({"from": "a"})["limit"] == 3
    assert search.quick_check({"from": "a"}) == {"from_": "a", "limit": 3}


def test_the_parameter_name_is_not_the_wire_name():
    with pytest.raises(af.InvalidArgsError, match="from: Field required") as caught:
        search.invoke({"from_": "a"})
    assert "from_: Extra inputs are not permitted" in str(caught.value)


def test_a_bad_aliased_value_is_named_by_its_alias():
    with pytest.raises(af.InvalidArgsError, match="max: Input should be greater than or equal"):
        search.invoke({"from": "a", "max": 0})


def test_an_agent_calls_the_tool_by_its_alias():
    model = af.ScriptedModel([af.call_tool("search", **{"from": "x", "max": 2}), af.say("ok")])
    result = af.Agent("bot", model=model, tools=[search]).run("go")
    assert result.output == "ok"
    assert [e.detail for e in result.trace.of("tool.result")] == ["x:2:"]


def test_two_parameters_sent_under_one_name_are_refused():
    def clash(a: int = Field(alias="b"), b: int = 0) -> int:
        return a + b

    with pytest.raises(af.UsageError, match=r"'a' and 'b' are both sent as 'b'"):
        af.tool(clash)


def test_a_validation_alias_is_refused_with_the_fix():
    def odd(a: Annotated[int, Field(validation_alias="x")]) -> int:
        return a

    with pytest.raises(af.UsageError, match=r"validation_alias.*use Field\(alias='x'\)"):
        af.tool(odd)


def test_made_up_arguments_use_the_alias():
    from pytest_agentfaults.fakes import fake_args

    arguments = fake_args(search, seed=3)
    assert {"from", "max"} <= set(arguments)
    assert search.invoke(arguments).startswith(f"{arguments['from']}:{arguments['max']}:")
