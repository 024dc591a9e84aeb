"""The fault plan active in this context, and the end-of-test checks it collects.

`FaultPlan.activate` sets it and `deactivate` resets it, so the plan of a pytest test (or
of a ``with plan.active():`` block) is what a `ScriptedModel` built there registers its
leftover-steps check with. A ContextVar, never a process global: threads and async
tasks see the plan of the context they started in.

A module of its own because `scripted` (the models) cannot import `faults` (the plan),
which imports it.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.runtime._pending import PENDING, switch_on
from pytest_agentfaults.runtime._recorder import collect_nothing
from pytest_agentfaults.runtime.clock import set_default_clock

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import FaultPlan

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
_plan: ContextVar[FaultPlan | None] = ContextVar("agentfaults_current_plan", default=None)


def current_plan() -> FaultPlan | None:
    """The plan active in this context (the innermost `FaultPlan.active`), if any."""
    plan = _plan.get()
    if plan is None and switch_on():  # a test's first use of the kit (`runtime._pending`)
        plan = _plan.get()
    return plan


def active_plan() -> FaultPlan | None:
    """The plan active in this context, without switching a pending test on (`current_plan`).

    For the network guard, which also guards tests that never use the kit (ini ``block``):
    refusing their request must not switch the kit on for them.
    """
    return _plan.get()


def enter(plan: FaultPlan) -> Token[FaultPlan | None]:
    """Make ``plan`` the current plan; `leave` with the token undoes it."""
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    return _plan.set(plan)


def leave(plan: FaultPlan, token: Token[FaultPlan | None]) -> None:
    """Undo `enter`, even from another context (a fixture torn down elsewhere)."""
    try:
        _plan.reset(token)
    except (ValueError, RuntimeError):  # another context, or the token already used
        if _plan.get() is plan:
            old = token.old_value
            _plan.set(None if old is Token.MISSING else old)


def add_check(check: Callable[[], None]) -> bool:
    """Run ``check`` when the current plan is checked; False when no plan is active."""
    plan = current_plan()
    if plan is None:
        return False
    plan.add_check(check)
    return True


#: the epoch (`FaultPlan._epoch`) below which plans sit out: see `suspend_earlier_plans`
floor: ContextVar[int] = ContextVar("agentfaults_planfloor", default=0)

#: each `FaultPlan.activate` takes the next: later plans have higher epochs
epochs = itertools.count(1)

#: set in the context of a fixture wider than the function (`sit_out`)
_sitting: ContextVar[bool] = ContextVar("agentfaults_sitting_out", default=False)


def sitting_out() -> bool:
    """Whether this context runs code of no one test's (`sit_out`): a wider fixture's.

    The running test's HTTP layer and routes, patched process-wide, let its requests
    through untouched and unrecorded, as they would go in a plain test.
    """
    return _sitting.get()


def sit_out() -> Callable[[], None]:
    """No test is on in this context until the returned undo: code of no one test's.

    For a fixture wider than the function, set up or torn down while a test runs (the
    plugin's `_plugin_scopes`): the test's faults do not fire in it (nor an http fault
    with ``url=``), its runs are not in the test's trace, nor its waits on the test's
    clock, nor do its HTTP layer and routes answer or record its requests (`sitting_out`),
    and a test not yet switched on stays so. A plan activated after this (a fault_scope,
    a plan the fixture activates itself) is active as usual.
    """
    variables: list[tuple[ContextVar[Any], Token[Any]]] = [(PENDING, PENDING.set(None))]
    variables.append((_plan, _plan.set(None)))
    variables.append((floor, floor.set(next(epochs))))
    variables.extend(collect_nothing())
    variables.append(set_default_clock(None))
    variables.append((_sitting, _sitting.set(True)))

    def undo() -> None:
        for variable, token in reversed(variables):
            with contextlib.suppress(ValueError):  # another context: it never saw these
                variable.reset(token)

    return undo


class suspend_earlier_plans:
    """While entered, only ``plan`` and plans activated after it inject faults.

    `fault_scope` enters this right after activating its fresh plan, so the enclosing
    test's plan sits out the block. A ContextVar: other threads (the loopback server's)
    and other contexts are not affected.
    """

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self._token: object = None

    def __enter__(self) -> None:
        self._token = floor.set(self._plan._epoch)  # noqa: SLF001 - the plan it scopes

    def __exit__(self, *exc_info: object) -> None:
        floor.reset(self._token)  # type: ignore[arg-type]
