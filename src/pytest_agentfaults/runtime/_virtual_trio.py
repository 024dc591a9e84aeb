"""Virtual ``anyio.sleep`` and ``trio.sleep`` under trio: timers fired when the run is idle.

The asyncio side (`_virtual_time._LoopTimers`) reads the loop's queues; trio offers the
same facts through public calls, so this side needs no private state of trio:

* ``trio.testing.wait_all_tasks_blocked(cushion)`` returns once no task can run: the
  run is idle, and the earliest virtual timer may end (the autojump of trio's own
  ``MockClock``, on the kit's clock instead of the run's);
* ``trio.lowlevel.current_statistics()`` tells how far the run's next real deadline is
  (a ``move_on_after``, a socket's timeout: timeouts stay real, and one due before the
  virtual end comes first) and whether a task waits on a socket; and trio's default
  thread limiter, whether a worker thread runs (a loopback server's answer, a thread's
  work, gets 50 ms of real quiet before a virtual timer fires, as on asyncio);
* a run kept busy (a task polling with ``anyio.sleep(0)``) reaches its earliest timer
  after 0.2 s of real time.

One driver per trio run, a system task spawned by the run's first virtual sleep, fires
the timers one end at a time; each sleeper moves the clock in its own context, as on
asyncio. The kit's own real waits here (the driver's pacing, a sleep the test's end
handed back to real time) go through ``trio.sleep_until``, which the kit leaves real: only
the functions it replaces are virtual.

Where trio is not imported yet when a test's virtual time switches on (no plugin imported
it at start-up; the test imports it in its body, or httpcore does for the kit's network
guard), a `ModuleArrival` waits for it (`_virtual_time`): there only until trio arrives
or the test ends, it lets ``trio.sleep`` be replaced as soon as trio's own code has run,
before anyone can call it.
"""

from __future__ import annotations

import heapq
import importlib
import itertools
import math
import sys
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults.runtime._loop_facts import BUSY_LIMIT, QUIET_TICKS, TICK

if TYPE_CHECKING:
    from collections.abc import Callable

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["TrioTimers", "mock_clock", "running_trio"]

QUIET: Final = QUIET_TICKS * TICK  # real seconds of quiet while a socket is watched (50 ms)
_PENDING: Final = 0.0  # a sleeper's state: waiting (any other float: real seconds left)
_FIRED: Final = -1.0
_GONE: Final = -2.0  # cancelled before its end


def running_trio() -> Any | None:
    """The ``trio`` module, if this call runs in a trio task (anyio's trio backend)."""
    trio: Any = sys.modules.get("trio")
    if trio is None or not trio.lowlevel.in_trio_task():
        return None
    return trio


def mock_clock(trio: Any) -> Any | None:
    """The run's clock if it is trio's ``MockClock`` (pytest-trio's ``autojump_clock``).

    A test that gives its run a ``MockClock`` has virtual time already, and reads it with
    ``trio.current_time()``: a sleep then waits on that clock (autojumping or moved by
    hand, as the test set it), and the kit's clock follows it.
    """
    testing: Any = sys.modules.get("trio.testing")  # no MockClock without it
    if testing is None:
        return None
    clock = trio.lowlevel.current_clock()
    return clock if isinstance(clock, testing.MockClock) else None


class TrioTimers:
    """The virtual timers of one trio run, and the system task that fires them."""

    __slots__ = ("closed", "driving", "error", "forget", "heap", "idle", "order", "token", "trio")

    def __init__(self, trio: Any, forget: Callable[[TrioTimers], None]) -> None:
        self.trio = trio
        self.forget = forget  # drops this run from the thread's table when it has no timer
        #: (end, order, event, state): ``state[0]`` is one of the states above
        self.heap: list[tuple[float, int, Any, list[float]]] = []
        self.order = itertools.count()
        self.driving = False
        self.closed = False
        self.token = trio.lowlevel.current_trio_token()
        #: waits until no task of the run can run (trio.testing is not loaded by `import trio`)
        self.idle = importlib.import_module("trio.testing").wait_all_tasks_blocked
        #: what broke the driver, raised in every sleeper it leaves (a system task's error
        #: would end the whole run as a TrioInternalError, far from its cause)
        self.error: BaseException | None = None

    async def until(self, end: float, now: Callable[[], float]) -> float:
        """Wait for the virtual ``end``; returns real seconds still to wait (the test ended)."""
        if self.closed:  # its test ended: the wait is real
            return max(0.0, end - now())
        trio = self.trio
        event = trio.Event()
        state = [_PENDING]
        heapq.heappush(self.heap, (end, next(self.order), event, state))
        if not self.driving:
            self.driving = True
            trio.lowlevel.spawn_system_task(self._drive, now, name="agentfaults virtual time")
        try:
            await event.wait()
        finally:
            if state[0] == _PENDING:  # cancelled (a timeout, its task group): not a timer now
                state[0] = _GONE
        if self.error is not None:
            raise self.error
        return max(0.0, state[0])

    def next_end(self) -> float | None:
        heap = self.heap
        while heap and heap[0][3][0] != _PENDING:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    async def _drive(self, now: Callable[[], float]) -> None:
        """Fire the earliest timer each time the run is idle, until none is left."""
        trio = self.trio
        try:
            while not self.closed:
                end = self.next_end()
                if end is None:
                    return
                statistics = trio.lowlevel.current_statistics()
                first = statistics.seconds_to_next_deadline
                if first < end - now():  # a real deadline comes first: look again soon
                    await trio.sleep_until(trio.current_time() + min(max(0.0, first), TICK))
                    continue
                quiet = QUIET if _working(trio, statistics) else 0.0
                with trio.move_on_after(BUSY_LIMIT) as overdue:
                    await self.idle(quiet)
                end = self.next_end()
                if end is None or self.closed:
                    return
                if not overdue.cancelled_caught:
                    statistics = trio.lowlevel.current_statistics()
                    if statistics.seconds_to_next_deadline < end - now():
                        continue  # a real deadline was set meanwhile: it comes first
                    if not quiet and _working(trio, statistics):
                        continue  # a socket or a thread got work meanwhile: its quiet first
                self._fire(end)
        except Exception as error:  # handed to every sleeper, raised there (not Cancelled)
            self.error = error
            self._fire(math.inf)
        finally:
            self.driving = False
            if self.next_end() is None:
                self.forget(self)

    def _fire(self, end: float) -> None:
        heap = self.heap
        while heap and heap[0][0] <= end:
            _, _, event, state = heapq.heappop(heap)
            if state[0] == _PENDING:
                state[0] = _FIRED
                event.set()

    def close(self, now: float) -> None:
        """The test ended: its pending sleeps finish in real time, in their run."""
        self.closed = True
        pending = [(end, event, state) for end, _, event, state in self.heap]
        self.heap = []

        def release() -> None:
            for end, event, state in pending:
                if state[0] == _PENDING:
                    state[0] = max(end - now, math.ulp(0.0))
                    event.set()

        try:
            self.token.run_sync_soon(release)
        except self.trio.RunFinishedError:
            return


def _working(trio: Any, statistics: Any) -> bool:
    """Whether real work is under way: a socket watched, a worker thread running."""
    return _watching_sockets(statistics.io_statistics) or _threads_busy(trio)


def _watching_sockets(io: object) -> bool:
    """Whether a task waits on a socket, other than trio's own wake-up reader.

    epoll, kqueue and Windows name their counts differently. One reader is always there:
    the system task behind ``run_sync_soon`` waits on the run's wake-up socket.
    """
    names = ("tasks_waiting_read", "tasks_waiting_write", "tasks_waiting")
    return sum(getattr(io, name, 0) for name in names) > 1


def _threads_busy(trio: Any) -> bool:
    """Whether a worker thread runs (``anyio.to_thread.run_sync`` borrows trio's default)."""
    return bool(trio.to_thread.current_default_thread_limiter().borrowed_tokens)
