"""Undoing: every step runs, whatever an earlier one raised."""

from __future__ import annotations

import pytest

from pytest_agentfaults.testing._undo import raise_together, run_all


def test_every_step_runs_and_the_errors_come_back_in_order():
    ran: list[int] = []

    def fails(n: int) -> None:
        ran.append(n)
        raise ValueError(n)

    errors = run_all([lambda: fails(1), lambda: ran.append(2), lambda: fails(3)])
    assert ran == [1, 2, 3]
    assert [e.args for e in errors] == [(1,), (3,)]


def test_an_interrupt_lets_the_other_steps_run_then_goes_on():
    ran: list[str] = []

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_all([interrupted, lambda: ran.append("restored")])
    assert ran == ["restored"]


def test_one_error_is_raised_as_it_is_several_together():
    raise_together([], "nothing")
    with pytest.raises(ValueError, match="only"):
        raise_together([ValueError("only")], "one")
    with pytest.raises(ExceptionGroup, match="two layers") as caught:
        raise_together([ValueError("a"), OSError("b")], "two layers")
    assert len(caught.value.exceptions) == 2
