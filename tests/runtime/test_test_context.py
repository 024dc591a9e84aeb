"""A test's runtime context in one call: the same as the four context managers it replaces."""

from __future__ import annotations

import contextvars

from pytest_agentfaults.runtime._recorder import active_collectors, collecting, new_run_id
from pytest_agentfaults.runtime._test_context import enter_test, leave_test
from pytest_agentfaults.runtime.backoff import active_seed
from pytest_agentfaults.runtime.clock import RealClock, VirtualClock, default_clock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.runtime.snapshot import SnapshotSettings, _settings


def _now() -> tuple[object, ...]:
    return (default_clock(), active_seed(), active_collectors(), _settings.get())


def test_entering_sets_the_clock_seed_trace_and_snapshots_and_leaving_restores_them():
    outer, trace, clock, snapshots = Trace(), Trace(), VirtualClock(), SnapshotSettings()
    with collecting(outer):
        before = _now()
        entered = enter_test(clock, 7, trace, snapshots)
        assert before[2][-1] is outer
        # the enclosing collectors (``outer``, the plugin's) collect too
        assert _now() == (clock, 7, (*before[2], trace), snapshots)
        assert new_run_id() == "run-1"  # runs numbered from 1 in the test
        assert leave_test(entered) == []
        assert _now() == before
        assert leave_test(entered) == []  # undone once: a second leave does nothing


def test_no_clock_means_real_time_even_inside_a_virtual_default():
    entered = enter_test(VirtualClock(), 1, Trace(), None)
    inner = enter_test(None, 2, Trace(), None)
    assert isinstance(default_clock(), RealClock)
    leave_test(inner)
    leave_test(entered)


def test_every_reset_is_tried_and_each_failure_returned():
    # left from another context: every reset fails (ValueError), none is skipped
    entered = contextvars.copy_context().run(enter_test, VirtualClock(), 3, Trace(), None)
    errors = leave_test(entered)
    assert [type(e) for e in errors] == [ValueError] * 5
    assert entered == []
