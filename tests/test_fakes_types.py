"""fake_args() against the tool's own validation, one annotated type at a time.

The property: for every type a tool's parameter may have, every value fake_args makes
passes the tool's validation, as the JSON a model sends.
"""

from __future__ import annotations

import datetime
import inspect
import ipaddress
import json
import uuid
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import (
    AmqpDsn,
    AnyUrl,
    AwareDatetime,
    Base64Bytes,
    Base64Str,
    Base64UrlStr,
    BaseModel,
    ConfigDict,
    EmailStr,
    Field,
    FileUrl,
    FtpUrl,
    FutureDate,
    FutureDatetime,
    HttpUrl,
    IPvAnyInterface,
    IPvAnyNetwork,
    Json,
    KafkaDsn,
    MongoDsn,
    MySQLDsn,
    NameEmail,
    PastDate,
    PostgresDsn,
    RedisDsn,
    WebsocketUrl,
)

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


# --------------------------------------------------------------------------- awkward types


class StrictBooking(BaseModel):
    model_config = ConfigDict(strict=True)

    nights: int
    check_in: datetime.date
    ref: uuid.UUID
    rooms: dict[int, str]


AWKWARD_TYPES = [
    dict[int, str],
    dict[int, list[float]],
    Json[list[int]],
    Json[dict[str, int]],
    Json,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    IPvAnyNetwork,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
    IPvAnyInterface,
    NameEmail,
    Base64Str,
    Base64Bytes,
    Base64UrlStr,
    Annotated[float, Field(multiple_of=0.1)],
    Annotated[float, Field(multiple_of=0.01, gt=0, lt=1)],
    Annotated[float, Field(multiple_of=0.25, gt=0, lt=1)],
    dict[str, Any],
    Annotated[dict[str, Any], Field(min_length=5)],
    Annotated[EmailStr, Field(max_length=15)],
    Annotated[EmailStr, Field(min_length=40)],
    EmailStr,
]


@SETTINGS
@given(st.sampled_from(AWKWARD_TYPES), seeds)
def test_awkward_types_get_values_their_validation_accepts(hint: Any, seed: int) -> None:
    assert_always_valid(hint, seed)


@SETTINGS
@given(seeds)
def test_a_strict_model_gets_what_a_model_would_send(seed: int) -> None:
    # strict=True refuses "2024-01-01" for a date in Python, but a model sends JSON, where
    # a date is text: fake_args' result is checked as that JSON.
    args = assert_always_valid(StrictBooking, seed, python_too=False)
    assert json.loads(json.dumps(args)) == args


def test_float_multiples_are_written_as_people_write_them() -> None:
    for seed in range(30):
        value = assert_always_valid(Annotated[float, Field(multiple_of=0.1)], seed)["x"]
        assert len(repr(value).split(".")[-1]) <= 1, value


def test_a_range_with_no_multiple_in_it_is_refused_naming_the_tool() -> None:
    with pytest.raises(af.UsageError, match="take"):
        fake_args(tool_taking(Annotated[int, Field(multiple_of=5, gt=0, lt=5)]), seed=1)


URL_TYPES = [
    PostgresDsn,
    MySQLDsn,
    RedisDsn,
    MongoDsn,
    AmqpDsn,
    KafkaDsn,
    FileUrl,
    FtpUrl,
    WebsocketUrl,
    HttpUrl,
    AnyUrl,
]


@SETTINGS
@given(st.sampled_from(URL_TYPES), seeds)
def test_urls_and_dsns_get_a_scheme_they_allow(hint: Any, seed: int) -> None:
    assert_always_valid(hint, seed)


def test_constraints_written_as_the_default_are_honoured() -> None:
    @af.tool
    def pick(
        count: int = Field(gt=5, lt=8),
        when: datetime.date = Field(ge=datetime.date(2040, 1, 1)),  # noqa: B008 - the form under test
    ) -> str:
        """Pick."""
        return str(count)

    for seed in range(20):
        args = fake_args(pick, seed=seed)
        assert 5 < args["count"] < 8
        assert datetime.date.fromisoformat(args["when"]) >= datetime.date(2040, 1, 1)
