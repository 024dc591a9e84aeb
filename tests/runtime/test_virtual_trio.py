"""The trio side of virtual time, piece by piece (`runtime._virtual_trio`).

tests/plugin/test_virtual_time_trio.py runs it as users meet it, in kit tests; these pin
what an inner session cannot reach: a test that ends while a sleep of its trio run is
pending, and a driver that breaks.
"""

from __future__ import annotations

import pytest

pytest.importorskip("trio")
import trio.testing

from pytest_agentfaults.runtime._virtual_trio import TrioTimers, running_trio


def test_no_trio_run_here():
    assert running_trio() is None


def test_in_a_trio_task_it_names_trio():
    async def main():
        return running_trio()

    assert trio.run(main) is trio


def test_a_sleep_pending_when_its_test_ends_finishes_in_real_time():
    """``close`` hands each pending sleeper the real seconds left of its wait."""
    forgotten = []

    async def main():
        timers = TrioTimers(trio, forgotten.append)
        left = []

        async def sleeper():
            left.append(await timers.until(500.0, lambda: 0.0))

        # a real deadline (60 s) before the virtual end (500 s): the driver holds the timer
        with trio.move_on_after(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(sleeper)
                await trio.testing.wait_all_tasks_blocked()  # the sleeper waits on its timer
                timers.close(499.75)  # the test ended at virtual 499.75
        assert await timers.until(501.0, lambda: 499.75) == 1.25  # a sleep after: real
        return left, timers

    left, timers = trio.run(main)
    assert left == [0.25]
    assert timers.next_end() is None
    assert forgotten == [timers]  # its run's table drops it


def test_closing_after_its_run_finished_is_harmless():
    async def main():
        return TrioTimers(trio, lambda timers: None)

    timers = trio.run(main)
    timers.close(1.0)  # the run is over: nothing left to release
    assert timers.closed


def test_a_driver_that_breaks_raises_in_the_sleeper_not_in_trio(monkeypatch):
    """A system task's error would end the run as TrioInternalError, far from its cause."""

    def broken(*args):
        raise RuntimeError("statistics unavailable")

    async def main():
        timers = TrioTimers(trio, lambda done: None)
        monkeypatch.setattr(trio.lowlevel, "current_statistics", broken)
        await timers.until(1.0, lambda: 0.0)

    with pytest.raises(RuntimeError, match="statistics unavailable"):
        trio.run(main)
