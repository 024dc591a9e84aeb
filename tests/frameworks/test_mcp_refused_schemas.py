"""The MCP server's refusal is read through nested schemas, unions and constraints too.

A call the server surely refuses before its tool runs takes no ``tool=`` fault
(tests/frameworks/test_mcp_refused.py has the plain cases). Surely: the server here
(`MCPServer`) reads arguments with pydantic, lax, and another server may check them with a
JSON-schema validator, so a call is refused only where both refuse it. Each refused case
below is checked against both: the real server's answer, and ``jsonschema`` over the
schema the server listed. Each case the server may read is one it does read: faulted, as
before, and then run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import jsonschema
import mcp
import pytest
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field, StringConstraints

CALLS: list[str] = []
server = MCPServer("shop")


class Address(BaseModel):
    street: str
    zip: int


class Person(BaseModel):
    name: str
    address: Address


class Node(BaseModel):
    name: str
    children: list[Node] = []


@server.tool()
def save(person: Person) -> str:
    """A nested model: ``$ref`` into ``$defs``."""
    CALLS.append("save")
    return "saved"


@server.tool()
def tag(ids: list[int]) -> str:
    """A list of one kind of item."""
    CALLS.append("tag")
    return "tagged"


@server.tool()
def ship(to: Address | None = None) -> str:
    """An optional model: ``anyOf`` a ``$ref`` and null."""
    CALLS.append("ship")
    return "shipped"


@server.tool()
def pick(value: int | list[int]) -> str:
    """A union: ``anyOf`` two types."""
    CALLS.append("pick")
    return "picked"


@server.tool()
def order(
    by: Literal["asc", "desc"], rank: Literal[1, 2] = 1, then: Literal["asc", "desc"] | None = None
) -> str:
    """``enum``s of texts and of numbers, and one that may be null."""
    CALLS.append("order")
    return "ordered"


@server.tool()
def page(
    size: Annotated[int, Field(ge=1, le=50)] = 10,
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5,
) -> str:
    """``minimum`` / ``maximum`` and ``exclusiveMinimum`` / ``exclusiveMaximum``."""
    CALLS.append("page")
    return "paged"


@server.tool()
def label(
    text: Annotated[str, Field(min_length=2, max_length=4)] = "ab",
    code: Annotated[str, StringConstraints(strip_whitespace=True, max_length=3)] = "a",
) -> str:
    """``minLength`` / ``maxLength``; the code is stripped before its length is checked."""
    CALLS.append("label")
    return "labelled"


@server.tool()
def batch(
    xs: Annotated[list[int], Field(min_length=1, max_length=2)] = [1],  # noqa: B006
    ys: Annotated[set[int], Field(max_length=2)] = set(),  # noqa: B006
) -> str:
    """``minItems`` / ``maxItems``; a set's duplicates collapse before its length is checked."""
    CALLS.append("batch")
    return "batched"


@server.tool()
def tree(root: Node) -> str:
    """A model that holds itself: a ``$ref`` cycle."""
    CALLS.append("tree")
    return "grown"


@server.tool()
def remind(at: datetime) -> str:
    """A text with a format: pydantic reads a date-time from a number too."""
    CALLS.append("remind")
    return "reminded"


GOOD = {
    "save": {"person": {"name": "Ada", "address": {"street": "Main", "zip": 1}}},
    "tag": {"ids": [1, 2]},
    "ship": {"to": {"street": "Main", "zip": 1}},
    "pick": {"value": 1},
    "order": {"by": "asc"},
    "page": {"size": 5},
    "label": {"text": "abc"},
    "batch": {"xs": [1]},
    "tree": {"root": {"name": "a"}},
    "remind": {"at": "2026-01-01T00:00:00Z"},
}

REFUSED = [
    pytest.param("save", {"person": {"name": "Ada", "address": {"street": "Main"}}}, id="nested"),
    pytest.param("tag", {"ids": [1, {"id": 2}]}, id="item-of-the-wrong-kind"),
    pytest.param("tag", {"ids": [1.5]}, id="a-fraction-for-an-integer"),
    pytest.param("ship", {"to": {"street": "Main"}}, id="optional-no-branch-fits"),
    pytest.param("pick", {"value": [1, {}]}, id="anyof-no-branch-fits"),
    pytest.param("pick", {"value": {}}, id="anyof-no-type-fits"),
    pytest.param("order", {"by": "up"}, id="enum-of-texts"),
    pytest.param("order", {"by": "asc", "rank": 3}, id="enum-of-numbers"),
    pytest.param("order", {"by": "asc", "then": "up"}, id="optional-enum"),
    pytest.param("ship", {"to": "Main street"}, id="text-no-json-for-a-model"),
    pytest.param("page", {"size": 0}, id="minimum"),
    pytest.param("page", {"size": 51}, id="maximum"),
    pytest.param("page", {"ratio": 0}, id="exclusive-minimum"),
    pytest.param("page", {"ratio": 1.0}, id="exclusive-maximum"),
    pytest.param("label", {"text": "a"}, id="min-length"),
    pytest.param("label", {"text": "abcde"}, id="max-length"),
    pytest.param("batch", {"xs": []}, id="min-items"),
    pytest.param("batch", {"xs": [1, 2, 3]}, id="max-items"),
    pytest.param("tree", {"root": {"name": "a", "children": [{"children": []}]}}, id="recursive"),
]

MAY_READ = [
    pytest.param("save", {"person": {"name": "Ada", "address": {"street": "M", "zip": "1"}}}, id="text-for-a-number"),
    pytest.param("save", {"person": '{"name": "Ada", "address": {"street": "M", "zip": 1}}'}, id="json-text-for-a-model"),
    pytest.param("tag", {"ids": [1, True, 2.0]}, id="items-pydantic-reads"),
    pytest.param("ship", {"to": None}, id="optional-null-fits"),
    pytest.param("pick", {"value": [1, 2]}, id="anyof-a-branch-fits"),
    pytest.param("order", {"by": "asc", "rank": True}, id="true-for-enum-1"),
    pytest.param("page", {"size": True}, id="true-for-a-number-in-range"),
    pytest.param("label", {"code": "  ab  "}, id="stripped-before-max-length"),
    pytest.param("batch", {"ys": [1, 1, 2]}, id="set-duplicates-before-max-items"),
    pytest.param("order", {"by": "asc", "then": "null"}, id="json-null-text-for-optional"),
    pytest.param("ship", {"to": '{"street": "M", "zip": 1}'}, id="json-text-for-optional-model"),
    pytest.param("remind", {"at": 1700000000}, id="number-for-a-date-time"),
]  # fmt: skip


def text(result: mcp.types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


@pytest.mark.asyncio
@pytest.mark.parametrize(("tool", "arguments"), REFUSED)
async def test_arguments_every_reading_refuses_take_no_fault(tool, arguments, faults, trace):
    faults.tool(tool).raises(ConnectionError("reset")).times(1)
    async with mcp.Client(server) as client:
        listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        refused = await client.call_tool(tool, arguments)
        faulted = await client.call_tool(tool, GOOD[tool])
        ran = await client.call_tool(tool, GOOD[tool])

    # every reading refuses these arguments: the real server, and a JSON-schema validator
    assert refused.is_error
    assert "validation error" in text(refused)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, listed[tool])
    # so the fault is left for the call that reaches the tool
    assert text(faulted) == f"Error executing tool {tool}"
    assert not ran.is_error
    assert [tool] == CALLS
    assert faults.fired[0].occurrence == 1  # the refused call was no occurrence
    assert [e.error.type for e in trace.of("tool.error")] == ["InvalidArgsError", "ConnectionError"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("tool", "arguments"), MAY_READ)
async def test_arguments_the_server_may_read_still_take_the_fault(tool, arguments, faults):
    faults.tool(tool).raises(ConnectionError("reset")).times(1)
    async with mcp.Client(server) as client:
        await client.list_tools()
        faulted = await client.call_tool(tool, arguments)
        ran = await client.call_tool(tool, arguments)

    assert text(faulted) == f"Error executing tool {tool}"
    assert not ran.is_error, text(ran)  # the server read them: refusing would have lied
    assert [tool] == CALLS
