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
    before = _now()
    entered = enter_test(VirtualClock(), 3, Trace(), None)
    for variable, token, _ in entered[:2]:  # reset already: their tokens are used
        variable.reset(token)
    errors = leave_test(entered)
    assert [type(e) for e in errors] == [RuntimeError] * 2
    assert entered == []
    assert _now() == before  # the others were reset all the same


def test_left_from_another_context_that_never_saw_it_nothing_fails_or_changes():
    # entered in a copy of this context (a kit fixture asked for inside an async test's
    # task), left in this one (the plugin's teardown)
    before = dict(contextvars.copy_context())
    entered = contextvars.copy_context().run(enter_test, VirtualClock(), 3, Trace(), None)
    assert leave_test(entered) == []
    assert entered == []
    assert dict(contextvars.copy_context()) == before


def _copied_back_and_left() -> None:
    task = contextvars.copy_context()
    entered = task.run(enter_test, VirtualClock(), 3, Trace(), SnapshotSettings())
    for variable, _, _ in entered:  # copied back, as pytest-asyncio does an async fixture's
        variable.set(task[variable])
    assert leave_test(entered) == []


def test_left_from_another_context_whose_values_came_here_they_are_undone():
    outer = Trace()
    with collecting(outer):
        before = dict(contextvars.copy_context())
        _copied_back_and_left()
        assert dict(contextvars.copy_context()) == before
        assert active_collectors()[-1] is outer


def test_one_that_was_unset_before_reads_as_its_default_again():
    def fresh() -> None:
        _copied_back_and_left()
        clock, *rest = _now()
        assert isinstance(clock, RealClock)
        assert rest == [None, (), None]
        for variable, value in contextvars.copy_context().items():  # run ids too
            assert value is contextvars.Context().run(variable.get), variable.name

    contextvars.Context().run(fresh)
