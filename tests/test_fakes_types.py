"""fake_args() against the tool's own validation, one annotated type at a time.

The property: for every type a tool's parameter may have, every value fake_args makes
passes the tool's validation, as the JSON a model sends.
"""

from __future__ import annotations

import datetime
import inspect
import json
from typing import Annotated, Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AwareDatetime, Field, FutureDate, FutureDatetime, PastDate

import pytest_agentfaults as af
from pytest_agentfaults.fakes import fake_args

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def tool_taking(hint: Any, name: str = "x") -> af.Tool:
    """A tool of one parameter ``name`` of type ``hint``."""

    def function(**kwargs: Any) -> str:
        return "ok"

    parameter = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY)
    function.__signature__ = inspect.Signature([parameter])  # type: ignore[attr-defined]
    function.__annotations__ = {name: hint, "return": str}
    function.__name__ = "take"
    return af.tool(function)


def assert_always_valid(hint: Any, seed: int, *, python_too: bool = True) -> dict[str, Any]:
    tool = tool_taking(hint)
    args = fake_args(tool, seed=seed)
    tool.validate(json.dumps(args))  # what a model sends
    if python_too:
        tool.validate(args)
    return args


# --------------------------------------------------------------------------- dates and times

D = datetime.date
DT = datetime.datetime
T = datetime.time
TD = datetime.timedelta

BOUNDED_TIMES = [
    Annotated[D, Field(gt=D(2030, 1, 1))],
    Annotated[D, Field(lt=D(1950, 6, 1))],
    Annotated[D, Field(ge=D(2024, 2, 28), le=D(2024, 3, 1))],
    Annotated[DT, Field(ge=DT(2031, 1, 1))],
    Annotated[DT, Field(gt=DT(2020, 1, 1), lt=DT(2020, 1, 1, 0, 5))],
    Annotated[DT, Field(le=DT(1960, 1, 1))],
    Annotated[T, Field(gt=T(23, 0))],
    Annotated[T, Field(ge=T(9), le=T(9, 30))],
    Annotated[T, Field(lt=T(0, 0, 5))],
    Annotated[TD, Field(gt=TD(days=3))],
    Annotated[TD, Field(lt=TD(seconds=1))],
    Annotated[TD, Field(ge=TD(hours=1), le=TD(hours=2))],
    Annotated[D, Field(gt=D(2030, 1, 1))] | None,
    list[Annotated[D, Field(gt=D(2030, 1, 1))]],
    AwareDatetime,
    FutureDate,
    FutureDatetime,
    PastDate,
]


@SETTINGS
@given(st.sampled_from(BOUNDED_TIMES), seeds)
def test_date_and_time_bounds_are_honoured(hint: Any, seed: int) -> None:
    assert_always_valid(hint, seed)


def test_a_date_bound_moves_the_date_not_just_passes() -> None:
    for seed in range(20):
        value = assert_always_valid(Annotated[D, Field(gt=D(2030, 1, 1))], seed)["x"]
        assert D.fromisoformat(value) > D(2030, 1, 1)
