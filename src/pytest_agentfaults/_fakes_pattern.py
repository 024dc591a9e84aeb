"""Strings that match a JSON schema's ``pattern``: a small inverter for simple regexes."""

from __future__ import annotations

import importlib
import random
import re
import string
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["from_pattern"]

_sre: Any = importlib.import_module("re._parser")
_PRINTABLE: Final = string.ascii_letters + string.digits
_CATEGORIES: Final = {
    "CATEGORY_DIGIT": string.digits,
    "CATEGORY_NOT_DIGIT": string.ascii_letters,
    "CATEGORY_WORD": string.ascii_letters + string.digits + "_",
    "CATEGORY_NOT_WORD": " -.,",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_SPACE": _PRINTABLE,
}


class _Unsupported(Exception):
    """The pattern uses a construct this small inverter does not handle."""


def from_pattern(pattern: str, rng: random.Random) -> str | None:
    r"""A string that fully matches ``pattern``, for the simple patterns schemas carry.

    Literals, classes (``[a-z]``, ``\d``, ``\w``), groups, alternation, anchors and
    repeats are handled; anything else (look-arounds, back-references) gives None.
    """
    try:
        parsed = _sre.parse(pattern)
        return _emit(parsed, rng)
    except (_Unsupported, re.error, RecursionError):
        return None


def _emit(parsed: Any, rng: random.Random) -> str:
    out: list[str] = []
    for op, av in parsed:
        kind = str(op)
        if kind == "LITERAL":
            out.append(chr(av))
        elif kind == "NOT_LITERAL":
            out.append(rng.choice([c for c in _PRINTABLE if ord(c) != av]))
        elif kind == "ANY":
            out.append(rng.choice(_PRINTABLE))
        elif kind == "IN":
            out.append(_from_class(av, rng))
        elif kind in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, sub = av
            high = low + 3 if high == _sre.MAXREPEAT else min(high, low + 3)
            out.extend(_emit(sub, rng) for _ in range(rng.randint(low, high)))
        elif kind in ("SUBPATTERN", "ATOMIC_GROUP"):
            out.append(_emit(av[-1], rng))
        elif kind == "BRANCH":
            out.append(_emit(rng.choice(av[1]), rng))
        elif kind == "AT":
            continue
        elif kind == "CATEGORY":
            out.append(rng.choice(_CATEGORIES.get(str(av), _PRINTABLE)))
        else:
            raise _Unsupported(kind)
    return "".join(out)


def _from_class(items: Any, rng: random.Random) -> str:
    allowed: list[str] = []
    negate = False
    for op, av in items:
        kind = str(op)
        if kind == "NEGATE":
            negate = True
        elif kind == "LITERAL":
            allowed.append(chr(av))
        elif kind == "RANGE":
            low, high = av
            allowed.extend(chr(c) for c in range(low, min(high, low + 200) + 1))
        elif kind == "CATEGORY":
            allowed.extend(_CATEGORIES.get(str(av), ""))
        else:
            raise _Unsupported(kind)
    if negate:
        allowed = [c for c in _PRINTABLE if c not in set(allowed)]
    if not allowed:
        raise _Unsupported("empty class")
    return rng.choice(allowed)
