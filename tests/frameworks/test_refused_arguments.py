"""`refused_arguments` on the schema shapes pydantic does not emit, each checked against jsonschema.

tests/frameworks/test_mcp_refused_schemas.py runs the shapes a real `MCPServer` lists. These
are the JSON-schema shapes another server may list: references without a value between
them, ``allOf``, ``oneOf``, the draft-4 forms. A call is refused only where a JSON-schema
validator refuses it too; a shape the reader cannot be sure of refuses nothing.
"""

from __future__ import annotations

import jsonschema
import pytest

from pytest_agentfaults.testing._frameworks._refusals import refused_arguments

ZIP = {"type": "object", "properties": {"zip": {"type": "integer"}}, "required": ["zip"]}


DRAFT_4 = {"$schema": "http://json-schema.org/draft-04/schema#"}


def obj(**properties):
    return {"type": "object", "properties": properties}


REFUSED = [
    pytest.param(
        {**obj(a={"$ref": "#/definitions/Zip"}), "definitions": {"Zip": ZIP}, **DRAFT_4},
        {"a": {}},
        {"a": {"zip": 1}},
        id="draft-4-definitions",
    ),
    pytest.param(
        {**obj(a={"$ref": "#/$defs/A"}), "$defs": {"A": {"$ref": "#/$defs/B"}, "B": ZIP}},
        {"a": {}},
        {"a": {"zip": 1}},
        id="a-ref-to-a-ref",
    ),
    pytest.param(
        {**obj(next={"$ref": "#"}), "required": ["id"]},
        {"id": 1, "next": {"id": 2, "next": {}}},
        {"id": 1, "next": {"id": 2}},
        id="a-ref-to-the-root",
    ),
    pytest.param(
        obj(a={"allOf": [{"type": "integer"}, {"minimum": 3}]}),
        {"a": 2},
        {"a": 3},
        id="allof-one-part",
    ),
    pytest.param(
        obj(a={"oneOf": [{"type": "integer"}, {"type": "array"}]}),
        {"a": {}},
        {"a": []},
        id="oneof-none",
    ),
    pytest.param(obj(a={"const": "x"}), {"a": "y"}, {"a": "x"}, id="const"),
    pytest.param(
        {**obj(a={"type": "number", "minimum": 1, "exclusiveMinimum": True}), **DRAFT_4},
        {"a": 0.5},
        {"a": 1.5},
        id="draft-4-exclusive-minimum",
    ),
    pytest.param(
        {**obj(a={"type": "array", "items": [{"type": "integer"}, {"type": "string"}]}), **DRAFT_4},
        {"a": [1, []]},
        {"a": [1, "x"]},
        id="draft-4-tuple-items",
    ),
    pytest.param(
        obj(a={"type": "array", "prefixItems": [{"type": "integer"}], "items": ZIP}),
        {"a": [1, {}]},
        {"a": [1, {"zip": 1}]},
        id="prefix-items-then-items",
    ),
    pytest.param(
        obj(a={"type": "object", "additionalProperties": ZIP}),
        {"a": {"home": {}}},
        {"a": {"home": {"zip": 1}}},
        id="additional-properties-schema",
    ),
]

NOT_SURE = [
    pytest.param(
        {**obj(a={"$ref": "#/$defs/A"}), "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}},
        {"a": {}},
        id="a-cycle-of-refs",
    ),
    pytest.param(obj(a={"$ref": "other.json#/Zip"}), {"a": {}}, id="a-ref-to-another-document"),
    pytest.param(obj(a={"$ref": "#/$defs/Missing"}), {"a": {}}, id="a-ref-to-nothing"),
    pytest.param(
        obj(a={"oneOf": [{"type": "integer"}, {"type": "number"}]}), {"a": 1}, id="oneof-both-fit"
    ),
    pytest.param(
        obj(a={"type": "object", "additionalProperties": ZIP, "patternProperties": {"^x": {}}}),
        {"a": {"x1": {}}},
        id="a-pattern-may-name-it",
    ),
    pytest.param(obj(a={"type": "string", "pattern": "^x"}), {"a": "y"}, id="a-pattern"),
    pytest.param(obj(a={"type": "integer", "multipleOf": 2}), {"a": 3}, id="multiple-of"),
    pytest.param(obj(a={"type": "integer"}), {"a": "5"}, id="a-text-for-a-number"),
    pytest.param(obj(a={"type": "object"}), {"a": '{"b": 1}'}, id="json-text-for-an-object"),
    pytest.param(
        obj(a={"type": "string", "format": "date-time"}), {"a": 0}, id="a-number-for-a-date-time"
    ),
    # pydantic's bytes count the text's bytes: "é" is two
    pytest.param(
        obj(a={"type": "string", "format": "binary", "minLength": 2}), {"a": "é"}, id="bytes"
    ),
    pytest.param({**obj(), "required": [["a"]]}, {}, id="a-required-that-is-no-name"),
]  # fmt: skip


@pytest.mark.parametrize(("schema", "arguments", "taken"), REFUSED)
def test_what_every_reading_refuses_is_refused(schema, arguments, taken):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, schema)
    assert refused_arguments(schema, arguments)
    jsonschema.validate(taken, schema)  # the same schema, and arguments it takes
    assert not refused_arguments(schema, taken)


@pytest.mark.parametrize(("schema", "arguments"), NOT_SURE)
def test_what_a_reading_may_take_is_not_refused(schema, arguments):
    assert not refused_arguments(schema, arguments)


def test_a_value_nested_deeper_than_python_recurses_is_the_servers_to_judge():
    schema = {**obj(next={"$ref": "#"}), "required": ["id"]}
    deep: dict = {"id": 1}
    for _ in range(5000):
        deep = {"id": 1, "next": deep}
    assert not refused_arguments(schema, deep)
