"""Dates, datetimes, times and durations inside the bounds a tool's parameter sets."""

from __future__ import annotations

import datetime  # noqa: ICN001 - named in full: dates, times and durations
import math
import random
from collections.abc import Mapping
from typing import Any, Final

from pytest_agentfaults._fakes_schema import BOUNDS, TZ, WHEN
from pytest_agentfaults._fakes_values import DATES_END

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["bounded_temporal"]

_DAY: Final = 86_400
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# The span drawn from when one side is open: ten years of days or seconds, an hour of a
# duration.
_SPANS: Final = {"date": 3650, "date-time": 3650 * _DAY, "time": _DAY - 1, "duration": 3600}


def bounded_temporal(fmt: str, schema: Mapping[str, Any], rng: random.Random) -> str | None:
    """A value of ``fmt`` (date, date-time, time, duration) inside the schema's bounds.

    None when the schema sets no bound (the plain fakers then do), or no value fits.
    """
    bounds: Mapping[str, Any] = schema.get(BOUNDS) or {}
    when = schema.get(WHEN)
    aware = schema.get(TZ) == "aware" or _any_aware(bounds)
    if not bounds and when is None and not aware:
        return None
    to_number, from_number, default = _UNITS[fmt]
    low, high = _int_bounds({k: to_number(v) for k, v in bounds.items()})
    if when in ("future", "past"):
        # Checked against the clock: a margin either side of now (a date's today is local).
        now = int(to_number(datetime.datetime.now(datetime.UTC).replace(tzinfo=None).isoformat()))
        margin = 2 if fmt == "date" else _DAY
        if when == "future":
            low = max(low, now + margin) if low is not None else now + margin
        else:
            high = min(high, now - margin) if high is not None else now - margin
    low, high = _span(low, high, default, _SPANS[fmt])
    if fmt == "time":  # within one day
        low, high = max(low, 0), min(high, _DAY - 1)
    if low > high:
        return None
    text = from_number(rng.randint(low, high))
    return text + "+00:00" if aware and fmt in ("date-time", "time") else text


def _int_bounds(bounds: Mapping[str, float]) -> tuple[int | None, int | None]:
    lows = [math.ceil(bounds["ge"])] if "ge" in bounds else []
    if "gt" in bounds:
        lows.append(math.floor(bounds["gt"]) + 1)
    highs = [math.floor(bounds["le"])] if "le" in bounds else []
    if "lt" in bounds:
        highs.append(math.ceil(bounds["lt"]) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _span(
    low: int | None, high: int | None, default: tuple[int, int], span: int
) -> tuple[int, int]:
    if low is None and high is None:
        return default
    if low is None:
        assert high is not None
        return max(high - span, min(default[0], high)), high
    if high is None:
        return low, low + span
    return low, high


def _any_aware(bounds: Mapping[str, Any]) -> bool:
    return any(isinstance(v, str) and ("+" in v[10:] or v.endswith("Z")) for v in bounds.values())


# ---------------------------------------------------------------- each format as a number


def _date_number(value: object) -> float:
    return datetime.date.fromisoformat(str(value)[:10]).toordinal()


def _date_text(number: int) -> str:
    return datetime.date.fromordinal(number).isoformat()


def _datetime_number(value: object) -> float:
    moment = datetime.datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return (moment - _EPOCH).total_seconds()


def _datetime_text(number: int) -> str:
    return (_EPOCH + datetime.timedelta(seconds=number)).replace(tzinfo=None).isoformat()


def _time_number(value: object) -> float:
    moment = datetime.time.fromisoformat(str(value))
    return moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6


def _time_text(number: int) -> str:
    return datetime.time(number // 3600, number // 60 % 60, number % 60).isoformat()


def _duration_number(value: object) -> float:
    return float(str(value))


def _duration_text(number: int) -> str:
    return f"-PT{-number}S" if number < 0 else f"PT{number}S"


_END: Final = DATES_END.replace(tzinfo=datetime.UTC)
_UNITS: Final = {
    "date": (_date_number, _date_text, (730_120, DATES_END.toordinal())),
    "date-time": (
        _datetime_number,
        _datetime_text,
        (946_684_800, int((_END - _EPOCH).total_seconds())),
    ),
    "time": (_time_number, _time_text, (0, _DAY - 1)),
    "duration": (_duration_number, _duration_text, (1, 3600)),
}
