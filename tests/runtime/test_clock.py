"""RealClock and VirtualClock."""

from __future__ import annotations

import asyncio

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.runtime.clock import default_clock, use_default_clock


def test_virtual_clock_starts_at_zero_and_records_every_sleep():
    clock = af.VirtualClock()
    assert clock.now() == 0.0
    clock.sleep(1.5)
    clock.sleep(0)
    clock.sleep(600)
    assert clock.sleeps == [1.5, 0, 600]
    assert clock.now() == 601.5
    assert clock.total_slept == 601.5


def test_virtual_async_sleep_advances_too():
    clock = af.VirtualClock()

    async def main():
        await clock.asleep(2)
        await asyncio.gather(clock.asleep(1), clock.asleep(3))

    asyncio.run(main())
    assert clock.sleeps == [2, 1, 3]
    assert clock.now() == 6


def test_advance_moves_time_without_recording_a_sleep():
    clock = af.VirtualClock(start=10)
    clock.advance(5)
    assert clock.now() == 15
    assert clock.sleeps == []


@pytest.mark.parametrize("call", ["sleep", "advance"])
def test_virtual_clock_never_goes_backwards(call):
    clock = af.VirtualClock()
    with pytest.raises(af.UsageError, match="negative|backwards"):
        getattr(clock, call)(-1)


def test_real_clock_is_monotonic_and_ignores_zero_waits():
    clock = af.RealClock()
    first = clock.now()
    clock.sleep(0)
    asyncio.run(clock.asleep(0))
    assert clock.now() >= first


def test_both_clocks_satisfy_the_protocol():
    assert isinstance(af.RealClock(), af.Clock)
    assert isinstance(af.VirtualClock(), af.Clock)


@pytest.mark.real_time
def test_default_clock_can_be_overridden_in_a_context():
    clock = af.VirtualClock()
    assert isinstance(default_clock(), af.RealClock)
    with use_default_clock(clock):
        assert default_clock() is clock
    assert isinstance(default_clock(), af.RealClock)
