"""Clocks: every wait in the runtime goes through one, so tests can make time virtual.

```python
clock = af.VirtualClock()
agent = af.Agent(..., clock=clock)
agent.run("hi")
assert clock.sleeps == [1.0, 2.0]      # backoff recorded, never slept
```
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from contextvars import ContextVar, Token
from typing import Final, Protocol, Self, runtime_checkable

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._attempt_deadline import (
    AttemptDeadlineExceeded,
    deadline_var,
)
from pytest_agentfaults.runtime._loop_facts import real_now
from pytest_agentfaults.runtime._pending import switch_on
from pytest_agentfaults.runtime._virtual_time import ThreadTime

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Clock",
    "RealClock",
    "VirtualClock",
    "advance_virtually",
    "default_clock",
    "sleeps_virtually_here",
    "use_default_clock",
]


#: The sleeps as Python has them, taken before anything of this package can patch them
#: (`VirtualClock.patch_sleep` lives here): a wait that can end early on a cancel is only
#: for plain real time, never a patched sleep.
REAL_SLEEP: Final = time.sleep
REAL_ASLEEP: Final = asyncio.sleep


@runtime_checkable
class Clock(Protocol):
    """What the runtime needs of time: read it, and wait."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (synchronously)."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Wait ``seconds`` without blocking the event loop."""
        ...


class RealClock:
    """Wall time: `time.monotonic`, `time.sleep`, `asyncio.sleep`.

    Its `now` is the real monotonic clock even where a test froze time (freezegun replaces
    ``time.monotonic``, not the sleeps): the time it reads is the time its sleeps take.
    """

    __slots__ = ()

    def now(self) -> float:
        """Seconds from `time.monotonic` (the real one, whatever a freezer patched)."""
        return real_now()

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""
        if seconds > 0:
            time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        """Await ``seconds`` on the running event loop."""
        if seconds > 0:
            await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "RealClock()"


# A branch of concurrent work (the parallel tool calls of one turn) keeps its own virtual
# time in this context: [clock, its now]. The branches of one turn all start at the same
# time, and the turn ends when the slowest one does (see `_parallel`).
_branch: ContextVar[tuple[VirtualClock, list[float]] | None] = ContextVar(
    "agentfaults_virtual_branch", default=None
)


def fork_virtual_time(clock: VirtualClock) -> list[float]:
    """Give the code running in this context its own timeline on ``clock``, from now.

    Returns the cell holding that timeline's now (read it when the branch is done).
    """
    cell = [clock.now()]
    clock._forked = True  # noqa: SLF001 - from now on it looks for a branch's own time
    _branch.set((clock, cell))
    return cell


def join_virtual_time(clock: VirtualClock, end: float) -> None:
    """Move ``clock`` (in this context) to ``end``, when the branches forked here are done."""
    now = clock.now()
    if end > now:
        clock._store(end)  # noqa: SLF001 - this module's own clock


class VirtualClock:
    """Time that advances only when something waits, and at once.

    Every wait is recorded in `sleeps`, in order. A wait inside a tool attempt that would
    cross the attempt's timeout stops at the deadline and the attempt times out, exactly as
    it would in real time, only instantly. An async tool attempt that awaits something
    that never comes is cut too: once the event loop stays idle (50 ms of real time with
    nothing ready and no real timer due before the deadline), time jumps to the deadline.
    """

    __slots__ = ("_autojump", "_forked", "_now", "_patches", "sleeps")

    def __init__(self, start: float = 0.0) -> None:
        __tracebackhide__ = True
        if not _finite_number(start):
            raise UsageError(
                f"VirtualClock(start={start!r}): start must be a finite number of seconds, "
                "e.g. VirtualClock(start=0.0)"
            )
        if start < 0:
            raise UsageError(f"VirtualClock(start={start!r}): start must be >= 0")
        self._now = float(start)
        self.sleeps: list[float] = []
        self._patches: list[ThreadTime] = []  # the sleeps made virtual (`patch_sleep`)
        # Deadlines of async tool attempts waiting for the loop to go idle (`_deadlines`).
        self._autojump: list[float] = []
        # Whether a parallel turn ever forked this clock (`fork_virtual_time`): only then
        # can a context hold a branch's own time on it, and its reads look for one.
        self._forked = False

    def patch_sleep(self) -> VirtualClock:
        """Make this thread's `time.sleep`, `asyncio.sleep` and `anyio.sleep` wait on this clock.

        In a test that uses the kit the plugin has already done it for the test's clock, so
        there this is a no-op, kept for compatibility. Elsewhere it is for third-party code
        that sleeps on its own, such as the official SDKs' retry loops. Only the calling
        thread and the event loops it runs are affected: other threads keep real time.
        Async sleeps are timers on a virtual loop clock, so concurrent sleeps overlap.
        Usable as a context manager; calling it twice patches once.

        ```python
        with clock.patch_sleep():
            client.chat.completions.create(...)   # SDK backoff recorded in clock.sleeps
        ```
        """
        if self._patches:
            return self
        thread_time = ThreadTime(self, _default.get)
        self._patches.append(thread_time)
        thread_time.install()
        return self

    def unpatch_sleep(self) -> None:
        """Undo `patch_sleep`."""
        while self._patches:
            self._patches.pop().uninstall()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unpatch_sleep()

    def now(self) -> float:
        """The virtual time in seconds (starts at ``start``, 0.0 by default)."""
        if self._forked:
            branch = _branch.get()
            if branch is not None and branch[0] is self:
                return branch[1][0]
        return self._now

    def _store(self, now: float) -> None:
        branch = _branch.get() if self._forked else None
        if branch is not None and branch[0] is self:
            branch[1][0] = now
        else:
            self._now = now

    def advance(self, seconds: float) -> None:
        """Move time forward without recording a sleep (latency, not a wait).

        Inside a tool attempt, moving past the attempt's deadline stops at the deadline and
        the attempt times out.
        """
        __tracebackhide__ = True
        kind = seconds.__class__
        # The usual wait, checked in one comparison (a nan fails it too); others go to `_wait`.
        if not ((kind is float or kind is int) and 0 <= seconds < _INF):
            seconds = _wait("advance", seconds)
        self._move(seconds)

    def sleep(self, seconds: float) -> None:
        """Record the wait and advance time by it; returns immediately."""
        __tracebackhide__ = True
        kind = seconds.__class__
        # On the path of every retry: one class test and one chained comparison for an int
        # or a float in [0, inf); a nan fails it as well, so `_wait` names every bad value.
        if not ((kind is float or kind is int) and 0 <= seconds < _INF):
            seconds = _wait("sleep", seconds)
        self.sleeps.append(seconds)
        # `_move`, inlined: every retry's backoff waits here.
        branch = _branch.get() if self._forked else None
        cell = branch[1] if branch is not None and branch[0] is self else None
        now = self._now if cell is None else cell[0]
        active = deadline_var.get()
        if active is not None and active[0] is self and now + seconds > active[1]:
            self._store(max(now, active[1]))
            raise AttemptDeadlineExceeded(active[1])
        if cell is None:
            self._now = now + seconds
        else:
            cell[0] = now + seconds

    def _move(self, seconds: float) -> None:
        # `now` and `_store`, inlined: every virtual wait (each retry's backoff) comes here.
        branch = _branch.get() if self._forked else None
        cell = branch[1] if branch is not None and branch[0] is self else None
        now = self._now if cell is None else cell[0]
        active = deadline_var.get()
        if active is not None and active[0] is self and now + seconds > active[1]:
            self._store(max(now, active[1]))
            raise AttemptDeadlineExceeded(active[1])
        if cell is None:
            self._now = now + seconds
        else:
            cell[0] = now + seconds

    def _jump_to(self, deadline: float) -> None:
        """Move to ``deadline`` (never back): an idle loop has nothing to do before it."""
        self._now = max(self._now, deadline)

    async def asleep(self, seconds: float) -> None:
        """Like `sleep`, but yields to the event loop once so other tasks may run."""
        __tracebackhide__ = True
        kind = seconds.__class__
        if not ((kind is float or kind is int) and 0 <= seconds < _INF):
            seconds = _wait("asleep", seconds)  # named as the user called it
        self.sleep(seconds)
        await asyncio.sleep(0)

    @property
    def total_slept(self) -> float:
        """The sum of every recorded wait."""
        return sum(self.sleeps)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self.now():g}, sleeps={len(self.sleeps)})"


_INF: Final = math.inf


def _finite_number(value: object) -> bool:
    """A real number (a bool, a `Decimal`, a `Fraction` too) that is neither nan nor inf."""
    if isinstance(value, str | bytes):  # math.isfinite refuses them, but say it plainly
        return False
    try:
        return math.isfinite(value)  # type: ignore[arg-type]
    except TypeError:  # not a number at all: None, a list
        return False


def _wait(method: str, seconds: object) -> float:
    """``seconds`` as a wait for `VirtualClock.<method>`, or a `UsageError` saying why not.

    Off the hot path: ``sleep`` and ``advance`` come here only for a value that is not an
    int or a float in [0, inf).
    """
    __tracebackhide__ = True
    where = f"VirtualClock.{method}({seconds!r})"
    if not _finite_number(seconds):
        if isinstance(seconds, str | bytes) or not _is_number(seconds):
            raise UsageError(
                f"{where}: the wait is not a number ({type(seconds).__name__}); give seconds "
                f"as an int or a float, e.g. {method}(1.5)"
            )
        if math.isnan(seconds):  # type: ignore[arg-type]
            raise UsageError(
                f"{where}: nan is not a number of seconds, and every time after it would be "
                "nan; check how the wait was computed"
            )
        raise UsageError(
            f"{where}: an infinite wait never ends, so time cannot move past it; give a "
            "finite number of seconds"
        )
    if seconds < 0:  # type: ignore[operator]
        if method == "advance":
            raise UsageError(f"cannot move a VirtualClock backwards ({seconds!r} s)")
        raise UsageError(f"cannot sleep a negative time ({seconds!r} s)")
    return float(seconds)  # type: ignore[arg-type]  # a real number: a bool, a Decimal


def _is_number(value: object) -> bool:
    try:
        math.isnan(value)  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


def set_attempt_deadline(clock: Clock, deadline: float | None) -> object:
    """Mark the deadline of the tool attempt about to run; returns a token to reset."""
    if deadline is None or not isinstance(clock, VirtualClock):
        return deadline_var.set(None)
    return deadline_var.set((clock, deadline))


_default: ContextVar[Clock | None] = ContextVar("agentfaults_default_clock", default=None)
_REAL = RealClock()

# For `Tool.invoke`'s happy path, which switches a pending test on once for all its reads:
# the default clock set in this context (None: real time), read without a switch-on.
read_default_clock: Final = _default.get
REAL_CLOCK: Final = _REAL


def default_clock() -> Clock:
    """The clock an agent built with ``clock=None`` uses: the active override, else real time."""
    clock = _default.get()
    if clock is None and switch_on():  # a test's first use of the runtime (`_pending`)
        clock = _default.get()
    return clock or _REAL


class use_default_clock:
    """Make ``clock`` the default for agents in this context (the plugin uses this).

    ```python
    with use_default_clock(VirtualClock()):
        agent.run("hi")          # backoff is virtual
    ```
    """

    def __init__(self, clock: Clock | None) -> None:
        self._clock = clock
        self._set: tuple[ContextVar[Clock | None], Token[Clock | None]] | None = None

    def __enter__(self) -> Clock | None:
        self._set = set_default_clock(self._clock)
        return self._clock

    def __exit__(self, *exc_info: object) -> None:
        if self._set is not None:
            variable, token = self._set
            variable.reset(token)


def set_default_clock(
    clock: Clock | None,
) -> tuple[ContextVar[Clock | None], Token[Clock | None]]:
    """Make ``clock`` the default in this context (None: real time).

    What `use_default_clock` enters, also for the plugin's per-test switch
    (`_test_context`); returns the variable and the token that resets it.
    """
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    return _default, _default.set(clock)


def sleeps_virtually_here(clock: Clock) -> bool:
    """Whether a sleep on the calling thread waits on ``clock`` (and moves it).

    True for a `VirtualClock` whose `patch_sleep` the calling thread made (the plugin
    makes it for the test's thread); False for a real clock, and on any other thread,
    whose sleeps stay real while the virtual clock stands still.
    """
    if not isinstance(clock, VirtualClock):
        return False
    here = threading.get_ident()
    return any(patch.thread == here for patch in clock._patches)  # noqa: SLF001 - its own


def advance_virtually(clock: Clock, seconds: float) -> bool:
    """Move ``clock`` forward by ``seconds`` of injected latency, without a wait.

    For a virtual clock (one with ``advance``); False for one that can only sleep (the
    caller then sleeps). An attempt deadline the latency crosses trips as usual.
    """
    advance = getattr(clock, "advance", None)
    if advance is None or isinstance(clock, RealClock):
        return False
    advance(seconds)
    return True
