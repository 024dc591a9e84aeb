"""What an asyncio loop is doing, and the real clock, read for virtual time's timers.

`_virtual_time` fires a virtual timer once its loop is idle, and `_deadlines` cuts a
hanging tool attempt the same way: both read here whether the loop's queues can be read,
whether a socket or the default executor is busy, what each task awaits, and the real
time, even under freezegun (which stops ``time.monotonic`` and with it the loop's clock).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import threading
import time
from collections.abc import Callable
from types import BuiltinFunctionType
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "BUSY_LIMIT",
    "QUIET_TICKS",
    "TICK",
    "executor_busy",
    "io_pending",
    "readable",
    "real_now",
    "tasks_state",
    "tick_later",
]

TICK: Final = 0.01  # real seconds between two looks while real work may be under way
QUIET_TICKS: Final = 5  # idle ticks in a row (50 ms) when a socket or thread is busy
BUSY_LIMIT: Final = 0.2  # real seconds a loop may stay busy before a due timer fires anyway


def _genuine_monotonic() -> Callable[[], float]:
    """``time.monotonic`` as Python has it, even if a freezer replaced it as this loads.

    freezegun reads every module's attributes as it starts, after replacing the clocks,
    and a read of the package's lazy names loads its runtime: this module may well load
    under a freezer. The clock ``time.monotonic`` reads is then taken from
    ``time.clock_gettime``, which no freezer replaces (there is none on Windows).
    """
    clock = time.monotonic
    gettime = getattr(time, "clock_gettime", None)
    if isinstance(clock, BuiltinFunctionType) or gettime is None:
        return clock
    return functools.partial(gettime, time.CLOCK_MONOTONIC)


#: The real clock, whatever a test patches later. In a tuple: freezegun replaces every
#: module attribute that *is* ``time.monotonic`` with its frozen one, but looks no deeper.
_REAL_CLOCK: Final = (_genuine_monotonic(),)
#: What the standard event loops read their clock with (``time.monotonic`` inside).
_LOOP_TIME: Final = (asyncio.BaseEventLoop.time,)
_PAUSE: Final = threading.Event()  # never set: waits on it take real time


def real_now() -> float:
    """The real monotonic clock, even under freezegun (which stops ``time.monotonic``)."""
    return _REAL_CLOCK[0]()


def tick_later(
    loop: asyncio.AbstractEventLoop, callback: Callable[..., object], *args: Any
) -> asyncio.Handle:
    """``loop.call_later(TICK, callback, *args)``, after a tick of real time in any case.

    Where the loop's clock stands still (freezegun without ``real_asyncio=True``, a
    mocked ``time.monotonic``), a timer on it never comes due: the tick is waited for
    here, in real time, and the callback called soon.
    """
    if type(time.monotonic) is not BuiltinFunctionType and type(loop).time is _LOOP_TIME[0]:
        _PAUSE.wait(TICK)
        return loop.call_soon(callback, *args)
    return loop.call_later(TICK, callback, *args)


def readable(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is a standard asyncio loop, whose queues tell when it is idle."""
    ready, scheduled = getattr(loop, "_ready", None), getattr(loop, "_scheduled", None)
    return isinstance(ready, collections.deque) and isinstance(scheduled, list)


def io_pending(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether a socket (other than the loop's own wake-up pipe) is being watched."""
    selector = getattr(loop, "_selector", None)
    if selector is None:
        return True  # cannot tell: assume so, and give real I/O its grace
    own = getattr(loop, "_ssock", None)
    own_fd = own.fileno() if own is not None else -1
    return any(fd != own_fd for fd in selector.get_map())


def executor_busy(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the loop's default executor runs something (``asyncio.to_thread``)."""
    executor = getattr(loop, "_default_executor", None)
    if executor is None:
        return False
    threads = getattr(executor, "_threads", None)
    idle = getattr(getattr(executor, "_idle_semaphore", None), "_value", None)
    pending = getattr(executor, "_work_queue", None)
    if threads is None or idle is None:
        return False
    return len(threads) > idle or (pending is not None and not pending.empty())


def tasks_state(loop: asyncio.AbstractEventLoop) -> tuple[Any, ...]:
    """What each task awaits: equal on two looks means no task moved in between."""
    tasks = sorted(asyncio.all_tasks(loop), key=id)
    return tuple((each, getattr(each, "_fut_waiter", None)) for each in tasks)
