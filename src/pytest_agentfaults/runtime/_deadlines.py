"""Per-attempt deadlines that cut: a worker thread for sync tools, an idle jump for async ones.

Two mechanisms, used by the run loop (`_drivers`) only when a timeout applies:

* **Sync tools in real time** run on a worker thread, in a copy of the caller's context
  (the test's trace, faults and attempt deadline follow). The caller waits for the result
  at most the timeout; at the deadline it abandons the call and the attempt times out. The
  abandoned call keeps running in its thread until it returns on its own: Python cannot
  stop a thread. Workers are reused, so a cut call costs no new thread per attempt.
* **Async tools under the virtual clock** run as a task watched by a cheap ticker. When the
  event loop is idle (nothing ready, no task making progress for `GRACE` seconds of real
  time, no real timer due before the deadline, the default executor idle), nothing can
  happen before the attempt's virtual deadline: the clock jumps to it and the task is
  cancelled, the autojump of trio's MockClock and looptime.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from pytest_agentfaults.runtime._attempt_deadline import AttemptDeadlineExceeded
from pytest_agentfaults.runtime._loop_facts import QUIET_TICKS, TICK, readable, tick_later
from pytest_agentfaults.runtime._loop_facts import executor_busy as _executor_busy
from pytest_agentfaults.runtime._virtual_time import is_bookkeeping, next_timer
from pytest_agentfaults.runtime._virtual_time import wake as _wake
from pytest_agentfaults.runtime.clock import VirtualClock

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["GRACE", "DeadlineExpired", "await_virtual_deadline", "call_in_worker"]

T = TypeVar("T")

GRACE: Final = TICK * QUIET_TICKS  # the real time a loop must stay idle: 50 ms
_IDLE_EXIT: Final = 30.0  # a worker with no job for this long ends


class DeadlineExpired(Exception):
    """The caller stopped waiting for a call in a worker thread: its deadline passed."""


# ------------------------------------------------------------------------ worker threads


class _Worker:
    """A daemon thread that runs jobs handed to it, and offers itself again when idle."""

    __slots__ = ("jobs", "thread")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="agentfaults-tool", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=_IDLE_EXIT)
            except queue.Empty:
                with _lock:
                    if self in _idle:
                        _idle.remove(self)
                        return
                continue  # a job was handed over just as the wait ended
            job()
            with _lock:
                _idle.append(self)


# Idle workers, newest last. A cache of threads, not state of any test: every job runs in
# the context its caller copied.
_idle: list[_Worker] = []
_lock = threading.Lock()


def _hand_over(job: Callable[[], object]) -> None:
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
    worker.jobs.put(job)


def call_in_worker(function: Callable[[], T], timeout: float) -> T:
    """Run ``function`` on a worker thread in a copy of this context; wait ``timeout`` s.

    Returns its result or raises its exception; raises `DeadlineExpired` when the deadline
    passes first (the call goes on in its thread).
    """
    context = contextvars.copy_context()
    outcome: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

    def job() -> None:
        try:
            value = context.run(function)
        except BaseException as exc:  # handed to the caller, who raises it
            outcome.put((False, exc))
        else:
            outcome.put((True, value))

    _hand_over(job)
    try:
        ok, value = outcome.get(timeout=timeout)
    except queue.Empty:
        raise DeadlineExpired from None
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


async def acall_in_worker(function: Callable[[], T], timeout: float) -> T:  # noqa: ASYNC109
    """`call_in_worker` for the event loop: the loop keeps running while the call does."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return  # abandoned at its deadline
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def job() -> None:
        value: Any
        try:
            ok, value = True, context.run(function)
        except BaseException as exc:
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:
            pass  # the loop closed while the abandoned call ran: nobody waits any more

    _hand_over(job)
    try:
        async with asyncio.timeout(timeout) as scope:
            return await future
    except TimeoutError:
        if scope.expired():
            raise DeadlineExpired from None
        raise


# ------------------------------------------------------------------------ virtual autojump


async def await_virtual_deadline(
    coro: Coroutine[Any, Any, T], clock: VirtualClock, deadline: float
) -> T:
    """Await ``coro`` as a task; when the loop goes idle, jump ``clock`` to ``deadline``.

    The task is then cancelled and `AttemptDeadlineExceeded` raised, as a virtual sleep
    across the deadline would. On an event loop whose internals cannot be read (not the
    standard asyncio loop) the task is simply awaited.
    """
    loop = asyncio.get_running_loop()
    task = loop.create_task(coro)
    if not readable(loop):
        return await task
    waiting = _pending_deadlines(clock)
    waiting.append(deadline)
    quiet, last = 0, None
    ticks: list[asyncio.Future[None]] = []
    task.add_done_callback(lambda _task: _wake(ticks[-1]) if ticks else None)
    try:
        while not task.done():
            tick: asyncio.Future[None] = loop.create_future()
            ticks[:] = [tick]
            handle = tick_later(loop, _wake, tick)  # on real time, frozen loop or not
            try:
                await tick
            finally:
                handle.cancel()
            if task.done():
                break
            state = _idle_state(loop, clock, deadline)
            quiet = quiet + 1 if state is not None and state == last else 0
            last = state
            # Only the earliest deadline jumps, and never over an earlier virtual sleep.
            if (
                quiet >= QUIET_TICKS
                and deadline <= min(waiting)
                and (deadline <= next_timer(loop, clock))
            ):
                clock._jump_to(deadline)
                task.cancel()
                await asyncio.wait({task})
                if not task.cancelled() and task.exception() is None:
                    return task.result()  # it finished while being cancelled: keep it
                raise AttemptDeadlineExceeded(deadline)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiting.remove(deadline)
    return task.result()


def _pending_deadlines(clock: VirtualClock) -> list[float]:
    """The deadlines of the attempts awaiting on ``clock``: only the earliest may jump."""
    return clock._autojump


def _idle_state(
    loop: asyncio.AbstractEventLoop, clock: VirtualClock, deadline: float
) -> tuple[Any, ...] | None:
    """What the loop's tasks await, or None when something may happen before the deadline.

    Equal states on successive ticks mean no task moved in between: a task that moved
    awaits another future. The state holds the futures themselves, compared by identity,
    so a new future cannot pass for an old one that was freed at the same address.
    """
    if any(not is_bookkeeping(h) for h in loop._ready):  # type: ignore[attr-defined]
        return None
    horizon = loop.time() + max(0.0, deadline - clock.now())
    for handle in loop._scheduled:  # type: ignore[attr-defined]
        if not is_bookkeeping(handle) and not handle.cancelled() and handle.when() < horizon:
            return None  # a real timer fires before the deadline would come
    if _executor_busy(loop):
        return None
    current = asyncio.current_task(loop)
    tasks = sorted((t for t in asyncio.all_tasks(loop) if t is not current), key=id)
    return tuple((each, getattr(each, "_fut_waiter", None)) for each in tasks)
