"""Which arguments a tool's server surely refuses: what every reading of its input schema refuses.

An MCP server checks a call's arguments against the input schema its tool was listed with,
before the tool runs. The SDK's own server (`MCPServer`) reads them with pydantic, lax;
another may check them with a JSON-schema validator. A client is sure of a refusal only
where both refuse, at any depth:

- a required property missing;
- a value of a kind the declared type never reads from: a list for a number, a fraction
  for an integer, a text for an object or null unless JSON of that kind is in it (the
  SDK's server parses it). A text is never refused for a text, a number or a truth
  (pydantic reads ``"5"`` as ``5``), nor a number for a text with a ``format`` (pydantic
  reads a date-time or a duration from a number);
- ``anyOf`` / ``oneOf`` with no branch that fits, ``allOf`` with a part that refuses;
- a value not in ``enum`` (not ``const``): a text only where every choice is a text;
- a number under ``minimum`` / over ``maximum``, or at an ``exclusive*`` bound;
- a text shorter than ``minLength`` / longer than ``maxLength`` however pydantic may have
  stripped or cased it (not with a ``format``: pydantic counts a ``bytes``' bytes);
- an array with fewer items than ``minItems`` / more than ``maxItems`` (unless its items
  are unique: a set's duplicates collapse before pydantic counts them).

A ``$ref`` is followed from the schema's root (``#/$defs/...``), once per value: a model
that holds itself is read as deep as the value goes. Everything else (patterns, formats,
``multipleOf``, ``not``, conditionals, properties the schema does not name) is the
server's to judge. The schema is taken at its word: a pydantic validator that reads more
than its schema says (``mode="before"``) is not seen, nor a model that takes its fields
by name as well as by their aliases.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["refused_arguments"]

_ANY: Final = "*"
# The JSON kinds of value a server's pydantic reads as each schema type (lax, as the SDK's
# server validates): a "fraction" is a number with a fractional part, which no integer is.
_READS: Final = {
    "string": frozenset({"string"}),
    "integer": frozenset({"integer", "number", "boolean"}),
    "number": frozenset({"integer", "number", "fraction", "boolean"}),
    "boolean": frozenset({"boolean", "integer", "number"}),
    "array": frozenset({"array"}),
    "object": frozenset({"object"}),
    "null": frozenset({"null"}),
}


def refused_arguments(schema: Mapping[str, Any], arguments: Any) -> bool:
    """Whether a server surely refuses ``arguments`` for a tool of input ``schema``.

    Sure only of what any reading refuses, pydantic's lax one and a JSON-schema
    validator's, through nested objects, items, unions and constraints (this module's
    docstring lists them). The MCP session's hook asks it, and so do the Agents SDK's and
    pydantic-ai's MCP tools: neither checks an MCP tool's arguments before its server does.
    """
    given = arguments if arguments is not None else {}
    if not isinstance(given, Mapping):
        return False  # the session's own request model refuses it, in the client
    try:
        return _Schema(schema).refuses(schema, given, frozenset())
    except RecursionError:  # a value nested deeper than we read: the server's to judge
        return False


class _Schema:
    """One tool's input schema, read from its root (where its ``$ref``s point)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def refuses(self, node: Any, value: Any, followed: frozenset[str]) -> bool:
        """Whether every reading of ``node`` refuses ``value``.

        ``followed`` holds the ``$ref``s already followed for this value: a cycle of
        references with no value between them says nothing more.
        """
        if not isinstance(node, Mapping):
            return False  # a true / false schema, or no schema: the server's to judge
        ref = node.get("$ref")
        if (
            isinstance(ref, str)
            and ref not in followed
            and self.refuses(self._target(ref), value, followed | {ref})
        ):
            return True
        if any(self.refuses(part, value, followed) for part in _schemas(node, "allOf")):
            return True
        for union in ("anyOf", "oneOf"):  # oneOf's "only one" is not ours to judge
            branches = _schemas(node, union)
            if branches and all(self.refuses(b, value, followed) for b in branches):
                return True
        return (
            _refused_kind(node, value) or _refused_value(node, value) or self._inside(node, value)
        )

    def _inside(self, node: Mapping[str, Any], value: Any) -> bool:
        """Whether an object's properties or an array's items are refused (a new value each)."""
        if isinstance(value, Mapping):
            required = node.get("required")
            if isinstance(required, list) and any(
                isinstance(key, str) and key not in value for key in required
            ):
                return True
            properties = node.get("properties")
            properties = properties if isinstance(properties, Mapping) else {}
            # the schema of a property it does not name, unless a pattern may name it
            extra = None if "patternProperties" in node else node.get("additionalProperties")
            return any(
                self.refuses(properties.get(key, extra), item, frozenset())
                for key, item in value.items()
            )
        if isinstance(value, list):
            items = node.get("items")
            # the first items' own schemas: prefixItems, or items as a list (drafts 4 to 7)
            first = items if isinstance(items, list) else node.get("prefixItems")
            first = first if isinstance(first, list) else []
            rest = node.get("additionalItems") if isinstance(items, list) else items
            return any(
                self.refuses(first[i] if i < len(first) else rest, item, frozenset())
                for i, item in enumerate(value)
            )
        return False

    def _target(self, ref: str) -> Any:
        """What a ``$ref`` into this schema points at (``#`` or ``#/...``), else None."""
        if ref != "#" and not ref.startswith("#/"):
            return None  # another document: not ours to fetch
        node: Any = self.root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")  # noqa: PLW2901 - JSON pointer
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node


def _schemas(node: Mapping[str, Any], key: str) -> list[Any]:
    found = node.get(key)
    return found if isinstance(found, list) else []


def _refused_kind(node: Mapping[str, Any], value: Any) -> bool:
    """A value of a kind none of the declared types reads from."""
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or ("string" in kinds and "format" in node):
        return False  # no type; or pydantic's dates, times, durations: they read numbers too
    reads = set().union(*(_READS.get(kind, {_ANY}) for kind in kinds))
    if isinstance(value, str) and reads & {"string", "integer", "number", "boolean", _ANY}:
        return False  # pydantic reads a number or a truth from a text
    return _ANY not in reads and _kind(value) not in reads


def _refused_value(node: Mapping[str, Any], value: Any) -> bool:
    """A value outside ``enum`` / ``const``, or past the bounds of its own kind."""
    choices = node.get("enum") if "const" not in node else [node["const"]]
    if isinstance(choices, list) and not any(_may_be(value, choice) for choice in choices):
        return True
    if isinstance(value, bool):
        return False  # bounds are a number's, a text's, an array's
    if isinstance(value, (int, float)):
        return (
            _past(node, "minimum", lambda bound: value < bound)
            or _past(node, "exclusiveMinimum", lambda bound: value <= bound)
            or _past(node, "maximum", lambda bound: value > bound)
            or _past(node, "exclusiveMaximum", lambda bound: value >= bound)
        )
    if isinstance(value, str) and "format" not in node:  # bytes: a length may count bytes
        lengths = {len(reading) for reading in _readings(value)}
        return _past(node, "minLength", lambda least: max(lengths) < least) or _past(
            node, "maxLength", lambda most: min(lengths) > most
        )
    if isinstance(value, list):
        unique = node.get("uniqueItems") is True  # a set: duplicates collapse before counting
        return _past(node, "minItems", lambda least: len(value) < least) or (
            not unique and _past(node, "maxItems", lambda most: len(value) > most)
        )
    return False


def _past(node: Mapping[str, Any], key: str, past: Callable[[float], bool]) -> bool:
    """Whether a value is ``past`` the bound ``node[key]``, when that bound is a number."""
    bound = node.get(key)
    return isinstance(bound, (int, float)) and not isinstance(bound, bool) and bool(past(bound))


def _may_be(value: Any, choice: Any) -> bool:
    """Whether a server may read ``value`` as the ``enum`` choice ``choice``.

    Python's equality is pydantic's lax one: ``True`` is ``1``, ``1.0`` is ``1``. A text
    may be read as any choice that is not a text (a number in it).
    """
    if isinstance(value, str) and not isinstance(choice, str):
        return True
    return bool(value == choice)  # a value's __eq__ may not give a bool


def _readings(text: str) -> set[str]:
    """The texts pydantic may check a length of: as given, stripped, lower- or upper-cased."""
    return {
        cased for plain in (text, text.strip()) for cased in (plain, plain.lower(), plain.upper())
    }


def _kind(value: object) -> str:
    """The JSON kind of ``value``: a number with a fractional part is a "fraction".

    A text is the kind of the JSON in it: the SDK's server parses a text given for an
    argument that is no text (an object, an array, null) before pydantic reads it.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return "string"
        if isinstance(value, str):
            return "string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if value.is_integer() else "fraction"
    if isinstance(value, Mapping):
        return "object"
    return "array" if isinstance(value, (list, tuple)) else _ANY
