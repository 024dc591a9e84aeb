"""Broken JSON, the one vocabulary: the ways a model gets JSON wrong, and how each is written.

Both `pytest_agentfaults.strategies.malformed_json` (Hypothesis) and
`AgentFaultsProvider.malformed_json` (Faker) break documents here, so a kind means the
same thing everywhere and each of them really fails `json.loads`.

The kinds, in the order examples shrink towards:

| kind              | what the text looks like                                |
|-------------------|---------------------------------------------------------|
| ``truncated``     | cut off before its end (``{"a": "b``)                   |
| ``trailing_comma``| ``{"a": 1,}``                                            |
| ``single_quotes`` | ``{'a': 'b'}``                                           |
| ``unquoted_keys`` | ``{a: "b"}``                                             |
| ``python_literals``| ``{'a': None, 'b': True}`` (a Python ``repr``)          |
| ``missing_comma`` | ``{"a": 1 "b": 2}``                                      |
| ``undefined``     | ``null`` written as ``undefined``                        |
| ``unbalanced``    | an extra closing bracket                                |
| ``comment``       | ``/* ... */`` and ``//`` comments around it              |
| ``markdown_fence``| inside a ```` ```json ```` fence                         |
| ``prose``         | after a sentence (``Here is the JSON you asked for: ``) |
| ``unescaped_quote``| a string holding a bare ``"`` (objects only)           |
| ``two_objects``   | a second document after the first                       |

``NaN`` and ``Infinity`` are not among them: Python's `json.loads` accepts both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["MALFORMED_JSON_KINDS", "break_json", "can_break", "nodes", "parses", "write"]

MALFORMED_JSON_KINDS: Final = (
    "truncated",
    "trailing_comma",
    "single_quotes",
    "unquoted_keys",
    "python_literals",
    "missing_comma",
    "undefined",
    "unbalanced",
    "comment",
    "markdown_fence",
    "prose",
    "unescaped_quote",
    "two_objects",
)
"""The ways a document is broken, in the order examples shrink towards (see the module)."""

_QUOTED_NOTE: Final = ("note", 'the user said "hurry" twice')


def parses(text: str) -> bool:
    """Whether ``text`` is JSON that `json.loads` reads."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def nodes(value: Any) -> list[Any]:
    """``value``, every key and every value inside it, depth first."""
    return list(_walk(value))


def _walk(value: Any) -> Iterable[Any]:
    yield value
    if isinstance(value, Mapping):
        yield from value.keys()
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _walk(child)


def can_break(kind: str, value: Any, inside: list[Any] | None = None) -> bool:
    """Whether ``kind`` can break ``value`` (``inside``: its `nodes`, when known)."""
    found = nodes(value) if inside is None else inside
    if kind == "truncated":
        return not isinstance(value, int | float) or isinstance(value, bool)
    if kind == "trailing_comma":
        return any(isinstance(n, Mapping | list | tuple) and len(n) > 0 for n in found)
    if kind == "single_quotes":
        return any(isinstance(n, str) for n in found)
    if kind == "unquoted_keys":
        return any(isinstance(n, Mapping) and len(n) > 0 for n in found)
    if kind == "python_literals":
        return any(n is None or isinstance(n, str | bool) for n in found)
    if kind == "missing_comma":
        return any(isinstance(n, Mapping | list | tuple) and len(n) > 1 for n in found)
    if kind == "undefined":
        return any(n is None for n in found)
    if kind == "unescaped_quote":
        return isinstance(value, Mapping)
    return True


def break_json(kind: str, value: Any, cut: int) -> str:
    """``value`` written as JSON broken the ``kind`` way (see `can_break` first).

    ``cut`` places a ``truncated`` cut: after character ``1 + cut % (len - 1)``, so at
    least one character is kept and never the whole document.
    """
    text = write(value)
    if kind == "truncated":
        broken = text[: 1 + cut % (len(text) - 1)] if len(text) > 1 else ""
    elif kind == "trailing_comma":
        broken = write(value, trailing_comma=True)
    elif kind == "single_quotes":
        broken = write(value, quote="'")
    elif kind == "unquoted_keys":
        broken = write(value, bare_keys=True)
    elif kind == "python_literals":
        broken = write(value, quote="'", python=True)
    elif kind == "missing_comma":
        broken = write(value, separator=" ")
    elif kind == "undefined":
        broken = write(value, null="undefined")
    elif kind == "unbalanced":
        broken = text + ("}" if isinstance(value, Mapping) else "]")
    elif kind == "comment":
        broken = "/* arguments */ " + text + " // end"
    elif kind == "markdown_fence":
        broken = f"```json\n{text}\n```"
    elif kind == "prose":
        broken = f"Here is the JSON you asked for: {text}"
    elif kind == "unescaped_quote":
        key, note = _QUOTED_NOTE
        broken = text[:-1] + (", " if len(value) else "") + f'"{key}": "{note}"}}'
    else:  # two_objects: the document, then its first item again (or itself)
        second = (
            dict([next(iter(value.items()))]) if isinstance(value, Mapping) and value else value
        )
        broken = f"{text} {write(second)}"
    if parses(broken):  # pragma: no cover - each kind is built to fail; keep the promise
        broken += "]"
    return broken


def write(
    value: Any,
    *,
    quote: str = '"',
    bare_keys: bool = False,
    python: bool = False,
    separator: str = ", ",
    trailing_comma: bool = False,
    null: str = "null",
) -> str:
    """JSON text of ``value``, written with the requested mistakes."""
    again = partial(
        write,
        quote=quote,
        bare_keys=bare_keys,
        python=python,
        separator=separator,
        trailing_comma=trailing_comma,
        null=null,
    )

    def string(text: str) -> str:
        if quote == '"':
            return json.dumps(text)
        return "'" + json.dumps(text)[1:-1].replace("'", "\\'") + "'"

    if value is None:
        return "None" if python else null
    if isinstance(value, bool):
        return ("True" if value else "False") if python else ("true" if value else "false")
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return string(value)
    tail = "," if trailing_comma and len(value) > 0 else ""
    if isinstance(value, Mapping):
        items = [
            f"{key if bare_keys else string(str(key))}: {again(item)}"
            for key, item in value.items()
        ]
        return "{" + separator.join(items) + tail + "}"
    return "[" + separator.join(again(item) for item in value) + tail + "]"
