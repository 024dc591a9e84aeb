"""The JSON schema `fake_args` reads: the tool's own, plus what pydantic leaves out of it.

A tool's JSON schema says ``"format": "date"`` but not ``gt=date(2030, 1, 1)``, and
``dict[int, str]`` as an object of strings with no word on its keys. Values made from that
schema alone fail the tool's validation; this generator writes those constraints into
extra keys (``x-af-...``) that only `fake_args` reads, never the model.
"""

from __future__ import annotations

import datetime  # noqa: ICN001 - named in full: dates, times and durations
import typing
import weakref
from typing import Annotated, Any, Final, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic.types import PathType
from pydantic_core import core_schema
from typing_extensions import TypeAliasType

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "BOUNDS",
    "KEYS",
    "SCHEMES",
    "TZ",
    "WHEN",
    "check_fakeable",
    "schema_for_fakes",
    "unfakeable",
]

#: ``{"gt": ..., "le": ...}`` of a date / datetime / time (ISO text) or duration (seconds)
BOUNDS: Final = "x-af-bounds"
#: ``"future"`` / ``"past"``: a FutureDate, PastDatetime ...
WHEN: Final = "x-af-when"
#: ``"aware"`` / ``"naive"``: an AwareDatetime, NaiveDatetime
TZ: Final = "x-af-tz"
#: the URL schemes a URL or DSN type allows (``["postgres", "postgresql", ...]``)
SCHEMES: Final = "x-af-schemes"
#: the JSON schema of a dict's keys (``dict[int, str]``: integers written as text)
KEYS: Final = "x-af-keys"

_BOUND_NAMES: Final = ("gt", "ge", "lt", "le")
#: A type alias, whose value pydantic validates: ``type Source = FilePath`` (Python 3.12+'s
#: own class) or typing_extensions' (every Python).
_ALIASES: Final = tuple({TypeAliasType, getattr(typing, "TypeAliasType", TypeAliasType)})
_cache: weakref.WeakKeyDictionary[Tool[Any, Any], dict[str, Any]] = weakref.WeakKeyDictionary()


def schema_for_fakes(tool: Tool[Any, Any]) -> dict[str, Any]:
    """The arguments schema of ``tool`` with the extra keys above (built once per tool)."""
    found = _cache.get(tool)
    if found is None:
        model = tool._args_model
        found = _cache[tool] = model.model_json_schema(by_alias=True, schema_generator=_Schema)
    return found


# Paths checked against the disk when validated: no made-up path names a file that exists.
_PATHS: Final = {
    "file": "FilePath (a file that exists)",
    "dir": "DirectoryPath (a directory that exists)",
    "new": "NewPath (a path that does not exist yet, in a directory that does)",
}


def unfakeable(tool: Tool[Any, Any]) -> dict[str, tuple[str, bool]]:
    """The parameters `fake_args` cannot fill: name -> (where and what, required?).

    ``{"path": ("'path' is a FilePath (...)", True)}``; a nested model's field reads
    ``'item.source'``.
    """
    found: dict[str, tuple[str, bool]] = {}
    for info in tool._args_model.model_fields.values():
        name = info.alias or ""
        what = _path_in(info, name, set())
        if what is not None:
            found[name] = (what, info.is_required())
    return found


def check_fakeable(tool: Tool[Any, Any], where: str) -> None:
    """Raise `UsageError` when a required parameter of ``tool`` cannot be faked."""
    for what, required in unfakeable(tool).values():
        if required:
            raise UsageError(
                f"{where}: tool {tool.name!r} parameter {what}, which fake_args does not fake "
                "(it is checked against the disk); pass the argument explicitly: script that "
                f"call yourself, call_tool({tool.name!r}, ...=<a real path>)"
            )


def _path_in(info: FieldInfo, where: str, seen: set[type]) -> str | None:
    for item in info.metadata:
        if isinstance(item, PathType):
            return f"{where!r} is a {_PATHS[item.path_type]}"
    return _path_in_hint(info.annotation, where, seen)


def _path_in_hint(hint: Any, where: str, seen: set[type]) -> str | None:
    while isinstance(hint, _ALIASES):
        hint = hint.__value__
    if get_origin(hint) is Annotated:
        base, *metadata = get_args(hint)
        return _path_in(FieldInfo.from_annotation(Annotated[(base, *metadata)]), where, seen)
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        if hint in seen:
            return None
        seen.add(hint)
        for name, info in hint.model_fields.items():
            found = _path_in(info, f"{where}.{info.alias or name}", seen)
            if found is not None:
                return found
        return None
    for arg in get_args(hint):
        found = _path_in_hint(arg, where, seen)
        if found is not None:
            return found
    return None


class _Schema(GenerateJsonSchema):
    def date_schema(self, schema: core_schema.DateSchema) -> JsonSchemaValue:
        return _temporal(super().date_schema(schema), schema)

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        return _temporal(super().datetime_schema(schema), schema)

    def time_schema(self, schema: core_schema.TimeSchema) -> JsonSchemaValue:
        return _temporal(super().time_schema(schema), schema)

    def timedelta_schema(self, schema: core_schema.TimedeltaSchema) -> JsonSchemaValue:
        return _temporal(super().timedelta_schema(schema), schema)

    def url_schema(self, schema: core_schema.UrlSchema) -> JsonSchemaValue:
        return _schemes(super().url_schema(schema), schema)

    def multi_host_url_schema(self, schema: core_schema.MultiHostUrlSchema) -> JsonSchemaValue:
        return _schemes(super().multi_host_url_schema(schema), schema)

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        out = super().dict_schema(schema)
        keys = schema.get("keys_schema")
        if keys is not None:
            out[KEYS] = self.generate_inner(keys)
        return out


def _schemes(out: JsonSchemaValue, schema: Any) -> JsonSchemaValue:
    schemes = schema.get("allowed_schemes")
    if schemes:
        out[SCHEMES] = list(schemes)
    return out


def _temporal(out: JsonSchemaValue, schema: Any) -> JsonSchemaValue:
    if out.get("type") != "string":  # ser_json_temporal="seconds": a number, bounds unknown
        return out
    bounds = {name: _text(schema[name]) for name in _BOUND_NAMES if schema.get(name) is not None}
    if bounds:
        out[BOUNDS] = bounds
    if schema.get("now_op") in ("future", "past"):
        out[WHEN] = schema["now_op"]
    if schema.get("tz_constraint") in ("aware", "naive"):
        out[TZ] = schema["tz_constraint"]
    return out


def _text(bound: object) -> object:
    if isinstance(bound, datetime.timedelta):
        return bound.total_seconds()
    if isinstance(bound, datetime.date | datetime.time):
        return bound.isoformat()
    return bound
