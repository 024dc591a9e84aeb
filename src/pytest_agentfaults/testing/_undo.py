"""Undoing what a test (or a block) switched on: every step runs, whatever fails.

One rule for the plan, the test's state and `af.fault_scope()`: nothing may stay switched
on because an earlier undo step raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["raise_together", "run_all"]


def run_all(steps: Iterable[Callable[[], object]]) -> list[Exception]:
    """Run every step in order; return the errors they raised.

    A `KeyboardInterrupt` (or another `BaseException`) in one step lets the others run
    first, then goes on.
    """
    errors: list[Exception] = []
    interrupt: BaseException | None = None
    for step in steps:
        try:
            step()
        except Exception as error:
            errors.append(error)
        except BaseException as stop:  # finish undoing, then stop as asked
            interrupt = interrupt or stop
    if interrupt is not None:
        raise interrupt
    return errors


def raise_together(errors: list[Exception], what: str) -> None:
    """Raise the one error as it is, several as an `ExceptionGroup` saying ``what`` failed."""
    __tracebackhide__ = True
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ExceptionGroup(what, errors)
