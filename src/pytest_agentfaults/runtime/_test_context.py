"""A test's runtime context switched on and off in one call each (the plugin's, per test).

`enter_test` does what entering ``use_default_clock(clock)``, ``seeded_jitter(seed)``,
``collecting(trace, fresh_run_ids=True)`` and ``use_snapshots(snapshots)`` one after the
other does, through the same setters those context managers use, and `leave_test` what
leaving them does, in reverse. Every test of a session pays for this, and the four context
managers cost four objects and eight method calls more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import Context, ContextVar, Token
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.runtime._recorder import start_collecting
from pytest_agentfaults.runtime.backoff import set_jitter_seed
from pytest_agentfaults.runtime.clock import set_default_clock
from pytest_agentfaults.runtime.snapshot import set_snapshot_settings

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.events import Trace
    from pytest_agentfaults.runtime.snapshot import SnapshotSettings

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Entered", "enter_test", "leave_test"]

#: what `enter_test` set, in order: each context variable, the token that resets it, and
#: the value it set (to tell, from another context, whether that value is there)
Entered = list[tuple[ContextVar[Any], Token[Any], Any]]


def enter_test(
    clock: Clock | None,
    seed: int | None,
    trace: Trace,
    snapshots: SnapshotSettings | None,
    numbering: Iterator[int] | None = None,
) -> Entered:
    """Switch a test's runtime context on; returns what `leave_test` needs to undo it.

    ``clock`` becomes the default clock (None: real time), ``seed`` the jitter seed,
    ``trace`` a collector of every run (numbered from ``run-1``, or by ``numbering``, the
    counter of the test's runs in another context), ``snapshots`` the snapshot settings.
    """
    entered: Entered = []
    variable: ContextVar[Any]
    token: Token[Any]
    # Unrolled, each pair noted as it is set (`leave_test` undoes what got set, if one
    # setter raises): every test of a session comes here.
    try:
        variable, token = set_default_clock(clock)
        entered.append((variable, token, variable.get()))
        variable, token = set_jitter_seed(seed)
        entered.append((variable, token, variable.get()))
        for variable, token in start_collecting(trace, fresh_run_ids=True, numbering=numbering):
            entered.append((variable, token, variable.get()))
        variable, token = set_snapshot_settings(snapshots)
        entered.append((variable, token, variable.get()))
    except BaseException:
        leave_test(entered)
        raise
    return entered


def leave_test(entered: Entered) -> list[Exception]:
    """Undo `enter_test`, last set first; returns the resets that failed (each is tried).

    From another context than `enter_test`'s (the plugin's teardown, after a kit fixture
    was first asked for inside an async test's task), each variable that holds the value
    `enter_test` set gets back the value it replaced; one that does not never saw this
    test (the task's context was a copy), and stays as it is. A reset fails when the
    token was used already.
    """
    errors: list[Exception] = []
    while entered:
        variable, token, value = entered.pop()
        try:
            variable.reset(token)
        except ValueError:  # "created in a different Context": no token of ours resets it
            if variable.get(_UNSET) is value:
                variable.set(_replaced(variable, token))
        except Exception as error:
            errors.append(error)
    return errors


_UNSET: Any = object()


def _replaced(variable: ContextVar[Any], token: Token[Any]) -> Any:
    old = token.old_value
    if old is not Token.MISSING:
        return old
    # unset before: no API unsets a variable, so its default, what a reader saw then
    try:
        return Context().run(variable.get)  # an empty context: the variable's default
    except LookupError:  # none: None is the closest there is
        return None
