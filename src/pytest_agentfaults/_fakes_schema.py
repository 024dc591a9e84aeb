"""The JSON schema `fake_args` reads: the tool's own, plus what pydantic leaves out of it.

A tool's JSON schema says ``"format": "date"`` but not ``gt=date(2030, 1, 1)``, and
``dict[int, str]`` as an object of strings with no word on its keys. Values made from that
schema alone fail the tool's validation; this generator writes those constraints into
extra keys (``x-af-...``) that only `fake_args` reads, never the model.
"""

from __future__ import annotations

import datetime  # noqa: ICN001 - named in full: dates, times and durations
import weakref
from typing import Any, Final

from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from pytest_agentfaults.runtime.tools import Tool

__all__ = ["BOUNDS", "KEYS", "TZ", "WHEN", "schema_for_fakes"]

#: ``{"gt": ..., "le": ...}`` of a date / datetime / time (ISO text) or duration (seconds)
BOUNDS: Final = "x-af-bounds"
#: ``"future"`` / ``"past"``: a FutureDate, PastDatetime ...
WHEN: Final = "x-af-when"
#: ``"aware"`` / ``"naive"``: an AwareDatetime, NaiveDatetime
TZ: Final = "x-af-tz"
#: the JSON schema of a dict's keys (``dict[int, str]``: integers written as text)
KEYS: Final = "x-af-keys"

_BOUND_NAMES: Final = ("gt", "ge", "lt", "le")
_cache: weakref.WeakKeyDictionary[Tool[Any, Any], dict[str, Any]] = weakref.WeakKeyDictionary()


def schema_for_fakes(tool: Tool[Any, Any]) -> dict[str, Any]:
    """The arguments schema of ``tool`` with the extra keys above (built once per tool)."""
    found = _cache.get(tool)
    if found is None:
        model = tool._args_model
        found = _cache[tool] = model.model_json_schema(by_alias=True, schema_generator=_Schema)
    return found


class _Schema(GenerateJsonSchema):
    def date_schema(self, schema: core_schema.DateSchema) -> JsonSchemaValue:
        return _temporal(super().date_schema(schema), schema)

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        return _temporal(super().datetime_schema(schema), schema)

    def time_schema(self, schema: core_schema.TimeSchema) -> JsonSchemaValue:
        return _temporal(super().time_schema(schema), schema)

    def timedelta_schema(self, schema: core_schema.TimedeltaSchema) -> JsonSchemaValue:
        return _temporal(super().timedelta_schema(schema), schema)

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        out = super().dict_schema(schema)
        keys = schema.get("keys_schema")
        if keys is not None:
            out[KEYS] = self.generate_inner(keys)
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
