"""VirtualClock refuses a wait it cannot keep (tester's report C): not a number, nan,
inf. A nan would poison every later time; a str failed with a bare TypeError."""

from __future__ import annotations

import asyncio
import math
import re
from decimal import Decimal
from fractions import Fraction

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError


@pytest.mark.parametrize("method", ["sleep", "advance"])
@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        ("1", "not a number"),
        (None, "not a number"),
        ([1], "not a number"),
        (float("nan"), "not a number"),
        (float("inf"), "infinite"),
    ],
)
def test_a_wait_that_is_not_a_finite_number_is_refused(method, seconds, said):
    clock = af.VirtualClock()
    shown = re.escape(f"VirtualClock.{method}({seconds!r})")
    with pytest.raises(UsageError, match=rf"{shown}: .*{said}"):
        getattr(clock, method)(seconds)
    assert clock.now() == 0.0
    assert clock.sleeps == []


def test_the_async_sleep_refuses_it_too():
    clock = af.VirtualClock()
    with pytest.raises(UsageError, match=r"VirtualClock\.asleep\('1'\)"):
        asyncio.run(clock.asleep("1"))  # type: ignore[arg-type]
    assert clock.now() == 0.0


def test_a_negative_wait_still_names_the_fix():
    with pytest.raises(UsageError, match="negative"):
        af.VirtualClock().sleep(-1)
    with pytest.raises(UsageError, match="backwards"):
        af.VirtualClock().advance(-0.5)


def test_ints_floats_and_other_real_numbers_are_waits():
    clock = af.VirtualClock()
    clock.sleep(1)
    clock.sleep(0.5)
    clock.sleep(True)  # a bool is an int: 1 s, as time.sleep(True) waits
    clock.advance(Fraction(1, 2))
    clock.sleep(Decimal("0.25"))
    assert clock.sleeps == [1, 0.5, True, Decimal("0.25")]
    assert math.isclose(clock.now(), 3.25)
    assert isinstance(clock.now(), float)


def test_the_start_must_be_a_finite_number_too():
    with pytest.raises(UsageError, match=r"VirtualClock\(start=nan\)"):
        af.VirtualClock(start=float("nan"))
    with pytest.raises(UsageError, match=r"VirtualClock\(start='0'\)"):
        af.VirtualClock(start="0")  # type: ignore[arg-type]
