"""JSON text without the NaN and Infinity tokens: a non-finite float is written as null.

``json.dumps`` writes float NaN and infinities as ``NaN`` / ``Infinity``, which no other
JSON reader accepts: a provider refuses the request, a trace file cannot be loaded. What
the runtime sends to a model or writes for a person goes through `dumps`; the common case
(every float finite) costs one strict encode.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["dumps", "finite"]

_STRICT: Final = json.JSONEncoder(allow_nan=False)


def dumps(value: Any, encoder: json.JSONEncoder = _STRICT) -> str:
    """``value`` as JSON text by ``encoder`` (built with ``allow_nan=False``), NaN as null."""
    try:
        return encoder.encode(value)
    except ValueError:  # a non-finite float (or a cycle, which the second encode reports)
        return encoder.encode(finite(value))


def finite(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """``value`` with each non-finite float in its dicts, lists and tuples made None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict | list | tuple):
        if id(value) in _seen:
            return value  # a cycle: left for the encoder to report
        seen = _seen | {id(value)}
        if isinstance(value, dict):
            return {key: finite(item, seen) for key, item in value.items()}
        return [finite(item, seen) for item in value]
    return value
