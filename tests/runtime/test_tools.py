"""@tool: schemas from signatures, validation, invoke(), ToolFailure."""

from __future__ import annotations

import asyncio
import warnings
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

import pytest_agentfaults as af


@af.tool
def fetch(url: str, retries: int = 2) -> str:
    """Fetch a URL."""
    return f"{url}:{retries}"


def test_decorated_function_stays_callable_as_itself():
    assert fetch("u") == "u:2"
    assert fetch("u", retries=5) == "u:5"
    assert fetch.__name__ == "fetch"
    assert fetch.__doc__ == "Fetch a URL."


def test_schema_and_description_come_from_signature_and_docstring():
    assert fetch.name == "fetch"
    assert fetch.description == "Fetch a URL."
    assert fetch.parameters == {
        "type": "object",
        "properties": {"url": {"type": "string"}, "retries": {"type": "integer", "default": 2}},
        "required": ["url"],
        "additionalProperties": False,
    }
    assert fetch.spec.name == "fetch"


def test_decorator_with_arguments():
    policy = af.OnError(execution=af.retry(max_attempts=3))

    @af.tool(name="parse", description="Parse JSON.", on_error=policy)
    def parse_json(text: str) -> dict:
        return {}

    assert parse_json.name == "parse"
    assert parse_json.description == "Parse JSON."
    assert parse_json.on_error is policy


def test_parameters_shadowing_pydantic_attributes_work_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @af.tool
        def shadow(json: str, schema: int, copy: bool = False, model_fields: str = "") -> str:
            """Parameters named like BaseModel attributes."""
            return f"{json}|{schema}|{copy}|{model_fields}"

    assert set(shadow.parameters["properties"]) == {"json", "schema", "copy", "model_fields"}
    assert shadow.invoke({"json": "{}", "schema": 3}) == "{}|3|False|"
    assert shadow.invoke('{"json": "[1]", "schema": 1, "copy": true}') == "[1]|1|True|"


def test_annotated_constraints_and_nested_models_are_validated():
    class Point(BaseModel):
        x: int
        y: int

    @af.tool
    def place(at: Point, zoom: Annotated[int, Field(ge=1, le=20, description="Zoom.")]) -> str:
        """Place a point."""
        return f"{at.x},{at.y}@{zoom}"

    assert place.parameters["properties"]["zoom"]["description"] == "Zoom."
    assert place.invoke({"at": {"x": 1, "y": 2}, "zoom": 3}) == "1,2@3"
    with pytest.raises(af.InvalidArgsError, match="zoom"):
        place.validate({"at": {"x": 1, "y": 2}, "zoom": 99})


def test_a_decorator_made_before_a_local_class_resolves_it_on_every_python():
    # `@tool(...)` read its caller's locals when it was called, not when it decorated: on
    # Python 3.11 and 3.12 that is a snapshot (a class defined in between was unknown, a
    # UsageError), on 3.13 a live view (PEP 667), so the same code worked on one only.
    only_lookups = af.tool(name="lookup", description="Look up a query.")

    class Query(BaseModel):
        text: str

    @only_lookups
    def lookup(query: Query) -> str:
        return query.text.upper()

    assert lookup.invoke({"query": {"text": "hi"}}) == "HI"
    assert lookup.parameters["properties"]["query"]["$ref"].endswith("Query")


def test_tools_made_in_a_comprehension_resolve_a_local_class_on_every_python():
    # A list comprehension runs in a frame of its own on Python 3.11 (the enclosing
    # function's locals are not its own) and inline on 3.12+ (PEP 709): a local class the
    # hints name resolved on 3.12 and 3.13 only.
    class Query(BaseModel):
        text: str

    def lookup(query: Query) -> str:
        """Look up."""
        return query.text.upper()

    def search(query: Query) -> str:
        """Search."""
        return query.text.lower()

    made = [af.tool(each) for each in (lookup, search)]
    named = {af.tool(name=f"{each.__name__}_v2")(each) for each in (lookup,)}

    assert [each.invoke({"query": {"text": "Hi"}}) for each in made] == ["HI", "hi"]
    assert [each.name for each in named] == ["lookup_v2"]


def test_a_field_written_as_the_default_constrains_the_arguments():
    # `x: int = Field(gt=0)` is how FastAPI and pydantic models write a constraint: it was
    # taken as a default of a FieldInfo, so x was optional, unchecked, and a missing y
    # reached the function as a FieldInfo.
    @af.tool
    def pick(
        x: int = Field(gt=0, description="How many."),
        y: int = Field(default=3, le=5),
        tags: list[str] = Field(default_factory=list),  # noqa: B008 - the form under test
    ) -> str:
        """Pick."""
        return f"{x} {y} {tags}"

    assert pick.parameters["required"] == ["x"]
    assert pick.parameters["properties"]["x"]["description"] == "How many."
    for bad in ({"x": 0}, {"x": 1, "y": 6}, {}):
        with pytest.raises(af.InvalidArgsError):
            pick.validate(bad)
    assert pick.validate({"x": 1}) == {"x": 1, "y": 3, "tags": []}
    assert pick.invoke({"x": 2}) == "2 3 []"
    assert pick.invoke('{"x": 2, "y": 5, "tags": ["a"]}') == "2 5 ['a']"
    with pytest.raises(af.InvalidArgsError, match="x"):
        pick.invoke({"x": -1})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{url: x}", "not valid JSON"),
        ('{"url": 3}', "url"),
        ("{}", "url: Field required"),
        ('{"url": "x", "extra": 1}', "extra"),
        ('["x"]', "JSON object"),
    ],
)
def test_invalid_arguments_raise_invalid_args_error_naming_the_problem(raw, message):
    with pytest.raises(af.InvalidArgsError, match=message) as caught:
        fetch.validate(raw)
    assert caught.value.tool == "fetch"
    assert caught.value.raw_arguments == raw
    assert "fetch" in str(caught.value)


def test_invalid_args_error_lists_each_validation_error():
    with pytest.raises(af.InvalidArgsError) as caught:
        fetch.validate('{"url": 3, "extra": 1}')
    assert caught.value.errors == [
        {"type": "string_type", "loc": ["url"], "msg": "Input should be a valid string"},
        {"type": "extra_forbidden", "loc": ["extra"], "msg": "Extra inputs are not permitted"},
    ]
    with pytest.raises(af.InvalidArgsError) as caught:
        fetch.validate("{url: x}")
    assert [e["type"] for e in caught.value.errors] == ["json_invalid"]


def test_an_invalid_args_error_built_by_hand_keeps_the_errors_it_was_given():
    given = [{"type": "custom", "loc": ["a"], "msg": "no"}]
    assert af.InvalidArgsError("bad", errors=given).errors == given
    assert af.InvalidArgsError("bad").errors == []


def test_a_tool_without_parameters_accepts_an_empty_string():
    @af.tool
    def now() -> str:
        """The time."""
        return "noon"

    assert now.validate("") == {}
    assert now.invoke("") == "noon"


def test_missing_type_hint_is_a_usage_error_with_the_fix():
    def untyped(url, count: int) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(af.UsageError, match=r"parameter 'url' has no type hint; annotate it"):
        af.tool(untyped)


def test_var_args_are_refused():
    def star(*urls: str) -> str:
        return ""

    with pytest.raises(af.UsageError, match="list the parameters explicitly"):
        af.tool(star)


def test_bad_tool_name_is_refused():
    with pytest.raises(af.UsageError, match="not usable"):
        af.tool(name="has space")(lambda: None)


def test_invoke_runs_through_the_tools_own_policy():
    calls = []

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=3, strategy="fixed")))
    def flaky(n: int) -> int:
        """Fails twice."""
        calls.append(n)
        if len(calls) < 3:
            raise ConnectionError("reset")
        return n * 2

    clock = af.VirtualClock()
    assert flaky.invoke({"n": 4}, clock=clock) == 8
    assert calls == [4, 4, 4]
    assert clock.sleeps == [1.0, 1.0]


def test_invoke_raises_what_recovery_could_not_cure():
    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=2, strategy="none")))
    def broken() -> str:
        """Always fails."""
        raise ConnectionError("down")

    with pytest.raises(ConnectionError, match="down"):
        broken.invoke({}, clock=af.VirtualClock())


def test_invoke_raises_invalid_args():
    with pytest.raises(af.InvalidArgsError):
        fetch.invoke('{"nope": 1}')


def test_tool_failure_is_returned_not_raised():
    @af.tool
    def read(path: str) -> str | af.ToolFailure:
        """Read a file."""
        return af.ToolFailure(error="File not found", recommendations=["list first"])

    result = read.invoke({"path": "x"})
    assert isinstance(result, af.ToolFailure)
    assert result.error == "File not found"


def test_async_tools_work_with_invoke_and_ainvoke():
    @af.tool
    async def aping(host: str) -> str:
        """Ping asynchronously."""
        await asyncio.sleep(0)
        return f"pong {host}"

    assert aping.is_async
    assert aping.invoke({"host": "a"}) == "pong a"
    assert asyncio.run(aping.ainvoke('{"host": "b"}')) == "pong b"
