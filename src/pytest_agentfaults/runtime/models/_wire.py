"""Reading provider payloads: JSON bodies and events, and typed access into them.

`decode_json` and `loads_event` are where JSON is parsed: anything unusable, JSON nested
too deeply included, is a `WireFormatError`, which the client raises as
`MalformedResponseError`. The ``get_*`` / ``opt_*`` helpers name the path of what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from pytest_agentfaults.runtime._finite import dumps
from pytest_agentfaults.runtime.models._errors import one_line

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "StreamBrokenError",
    "WireFormatError",
    "arguments_object",
    "arguments_text",
    "as_object",
    "count",
    "decode_json",
    "get_list",
    "get_object",
    "get_str",
    "loads_event",
    "opt_list",
    "opt_str",
]

_DEEP: Final = "JSON nested too deeply to parse"
_ARGUMENTS: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


class WireFormatError(ValueError):
    """A 2xx payload is not what the provider documents; becomes `MalformedResponseError`."""


class StreamBrokenError(Exception):
    """A stream ended early or reported an error mid-way; becomes `ModelStreamError`."""


def decode_json(raw: bytes, content_type: str | Callable[[], str]) -> Any:
    """Parse a response body as JSON, saying precisely what is wrong when it is not.

    ``content_type`` (or a function returning it, read only on failure) goes in the message.
    """
    try:
        return json.loads(raw)
    except ValueError:
        pass
    except RecursionError as exc:  # only the decoder's own recursion, nothing else
        raise WireFormatError(f"the body is {_DEEP} ({len(raw)} bytes)") from exc
    if not isinstance(content_type, str):
        content_type = content_type()
    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        bad = raw[exc.start : exc.start + 1]
        raise WireFormatError(f"the body is not valid UTF-8 (byte {exc.start} is {bad!r})") from exc
    except json.JSONDecodeError as exc:
        if not raw.strip():
            raise WireFormatError("the body is empty, expected a JSON object") from exc
        what = "an HTML page" if _looks_like_html(raw, content_type) else "not JSON"
        raise WireFormatError(
            f"the body is {what} (content-type {content_type or 'missing'!r}; "
            f"{exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except ValueError as exc:  # valid JSON Python refuses, e.g. an int of 4,301+ digits
        raise WireFormatError(
            f"the body is JSON that cannot be read ({one_line(str(exc))})"
        ) from exc


def _looks_like_html(raw: bytes, content_type: str) -> bool:
    return "html" in content_type.lower() or raw.lstrip()[:1] == b"<"


def loads_event(data: str, where: str) -> Any:
    """Parse one stream event's JSON payload."""
    try:
        return json.loads(data)
    except ValueError as exc:
        raise WireFormatError(f"{where} is not JSON ({exc}): {one_line(data)!r}") from exc
    except RecursionError as exc:
        raise WireFormatError(f"{where} is {_DEEP} ({len(data)} characters)") from exc


def as_object(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else a `WireFormatError` naming ``where``."""
    if isinstance(value, dict):
        return value
    raise WireFormatError(f"{where} is {_json_kind(value)}, expected an object")


def get_object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """The object at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    return as_object(_require(obj, key, where), f"{where}.{key}")


def get_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    value = _require(obj, key, where)
    if isinstance(value, list):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a list")


def get_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """The string at ``obj[key]``; missing or of another type is a `WireFormatError`."""
    value = _require(obj, key, where)
    if isinstance(value, str):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a string")


def opt_str(obj: Mapping[str, Any], key: str, where: str) -> str | None:
    """The string at ``obj[key]``, None when absent or null; another type is an error."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a string or null")


def opt_list(obj: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list at ``obj[key]``, empty when absent or null; another type is an error."""
    value = obj.get(key)
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise WireFormatError(f"{where}.{key} is {_json_kind(value)}, expected a list or null")


def count(obj: Mapping[str, Any] | None, *keys: str) -> int:
    """The sum of the integer token counts at ``keys`` (absent or odd values count 0)."""
    if not obj:
        return 0
    total = 0
    for key in keys:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    try:
        return obj[key]
    except KeyError:
        raise WireFormatError(f"{where}.{key} is missing") from None


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__  # pragma: no cover


def arguments_text(value: Any, where: str) -> str:
    """Tool-call arguments as the raw JSON text `ToolCall.arguments` holds.

    A string is kept verbatim, valid JSON or not: whether it parses is the agent's call
    (an `InvalidArgsError` its ``invalid_args`` action can repair), not the transport's.
    """
    if isinstance(value, str):
        return value if value.strip() else "{}"
    if value is None:
        return "{}"
    if isinstance(value, dict):
        return dumps(value, _ARGUMENTS)
    raise WireFormatError(f"{where} is {_json_kind(value)}, expected an object or a string")


def arguments_object(text: str) -> dict[str, Any]:
    """Tool-call arguments as an object, for providers that want one in the history."""
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        return value
    # The model once sent arguments that are not an object; show them to it as they were.
    return {"raw_arguments": text}
