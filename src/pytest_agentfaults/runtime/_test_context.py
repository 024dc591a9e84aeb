"""A test's runtime context switched on and off in one call each (the plugin's, per test).

`enter_test` does what entering ``use_default_clock(clock)``, ``seeded_jitter(seed)``,
``collecting(trace, fresh_run_ids=True)`` and ``use_snapshots(snapshots)`` one after the
other does, through the same setters those context managers use, and `leave_test` what
leaving them does, in reverse. Every test of a session pays for this, and the four context
managers cost four objects and eight method calls more.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.runtime._recorder import start_collecting
from pytest_agentfaults.runtime.backoff import set_jitter_seed
from pytest_agentfaults.runtime.clock import set_default_clock
from pytest_agentfaults.runtime.snapshot import set_snapshot_settings

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.events import Trace
    from pytest_agentfaults.runtime.snapshot import SnapshotSettings

__all__ = ["Entered", "enter_test", "leave_test"]

#: what `enter_test` set, in order: each context variable with the token that resets it
Entered = list[tuple[ContextVar[Any], Token[Any]]]


def enter_test(
    clock: Clock | None, seed: int | None, trace: Trace, snapshots: SnapshotSettings | None
) -> Entered:
    """Switch a test's runtime context on; returns what `leave_test` needs to undo it.

    ``clock`` becomes the default clock (None: real time), ``seed`` the jitter seed,
    ``trace`` a collector of every run (numbered from ``run-1``), ``snapshots`` the
    snapshot settings.
    """
    entered: Entered = []
    try:
        entered.append(set_default_clock(clock))
        entered.append(set_jitter_seed(seed))
        entered.extend(start_collecting(trace, fresh_run_ids=True))
        entered.append(set_snapshot_settings(snapshots))
    except BaseException:
        leave_test(entered)
        raise
    return entered


def leave_test(entered: Entered) -> list[Exception]:
    """Undo `enter_test`, last set first; returns the resets that failed (each is tried).

    A reset fails when the context is not the one `enter_test` ran in, or ran twice.
    """
    errors: list[Exception] = []
    while entered:
        variable, token = entered.pop()
        try:
            variable.reset(token)
        except Exception as error:
            errors.append(error)
    return errors
