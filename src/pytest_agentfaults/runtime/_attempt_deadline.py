"""The deadline of the tool attempt running in this context, and the error a wait past it raises.

A leaf under `clock` and `_virtual_time`: a virtual sleep (either module's) that would
cross the running attempt's deadline raises `AttemptDeadlineExceeded`, and the drivers
set and reset the deadline around each attempt (`clock.set_attempt_deadline`).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import VirtualClock

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "AttemptDeadlineExceeded",
    "attempt_deadline",
    "deadline_var",
    "pop_attempt_deadline",
    "push_attempt_deadline",
    "reset_attempt_deadline",
]


class AttemptDeadlineExceeded(Exception):
    """A virtual sleep crossed the deadline of the tool attempt it runs in."""

    def __init__(self, deadline: float) -> None:
        super().__init__(f"deadline {deadline:g} reached")
        self.deadline = deadline


#: the deadline of the tool attempt running in this context, on the clock that set it
deadline_var: ContextVar[tuple[VirtualClock, float] | None] = ContextVar(
    "agentfaults_attempt_deadline", default=None
)


def attempt_deadline(clock: VirtualClock) -> float | None:
    """The deadline of the tool attempt running in this context on ``clock``, if any."""
    active = deadline_var.get()
    return active[1] if active is not None and active[0] is clock else None


def reset_attempt_deadline(token: object) -> None:
    """Undo `clock.set_attempt_deadline`."""
    deadline_var.reset(token)  # type: ignore[arg-type]


# `clock.set_attempt_deadline` for a virtual clock, given ``(clock, deadline)``, and its
# undo: the sync driver's hot path (every tool attempt) calls the variable's own methods.
push_attempt_deadline: Final = deadline_var.set
pop_attempt_deadline: Final = deadline_var.reset
