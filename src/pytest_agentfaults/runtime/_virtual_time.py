"""Virtual waits scoped to one thread: the thread that switched them on and its event loops.

`VirtualClock.patch_sleep()` (which the plugin calls for every test that uses the kit)
installs a `ThreadTime`. It replaces `time.sleep`, `asyncio.sleep` and `anyio.sleep` with
functions that wait on the clock when called on the thread that installed them, or on a
worker thread that runs with the test's context (its default clock is this clock:
`handed_over`), and that call what they replaced otherwise: other threads (a heartbeat,
a server in the same process), and any call after the undo (code that kept a reference
to the function).

* Work handed over with the context is the test's work: ``asyncio.to_thread``,
  ``anyio.to_thread.run_sync`` (pydantic-ai's sync tools), LangChain's executors, a pool
  given ``copy_context().run``. Its sleeps move the clock one after the other (two
  workers' concurrent 1 s sleeps take 2 s of virtual time); ``run_in_executor`` copies no
  context, so its work keeps real time.

* A sync sleep moves the clock at once and is recorded in ``clock.sleeps``.
* An async sleep is a timer on the loop's virtual clock: it waits for its virtual end, and
  once the loop is idle the earliest end comes at once (the autojump of trio's MockClock
  and looptime). Concurrent sleeps overlap: three concurrent 1 s sleeps take 1 s.
  "Idle" means nothing ready, no task moving, no real timer due before the virtual end,
  and, while a socket or the default executor is busy, 50 ms of real time like that.
* Under trio (anyio's trio backend, or a ``trio.run`` of the test's own), ``anyio.sleep``
  and ``trio.sleep`` are timers of the trio run, fired the same way (`_virtual_trio`),
  also when trio is first imported while the test runs (`ModuleArrival`).
* Only sleeps are virtual. The loop's own clock keeps real time, so I/O timeouts,
  `asyncio.timeout` and `asyncio.wait_for` stay real; `time.monotonic` too.
* Inside a tool attempt with a deadline, a sleep crossing it ends at the deadline and the
  attempt times out (`AttemptDeadlineExceeded`), as `VirtualClock.sleep` does.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults._patches import live, replaced, retire
from pytest_agentfaults.errors import VirtualTimeSpinError
from pytest_agentfaults.runtime._arrival import ModuleArrival
from pytest_agentfaults.runtime._attempt_deadline import AttemptDeadlineExceeded, attempt_deadline
from pytest_agentfaults.runtime._loop_facts import (
    BUSY_LIMIT,
    QUIET_TICKS,
    executor_busy,
    io_pending,
    readable,
    real_now,
    tasks_state,
    tick_later,
)
from pytest_agentfaults.runtime._virtual_trio import TrioTimers, mock_clock, running_trio

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import VirtualClock

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ThreadTime",
    "handed_over",
    "is_bookkeeping",
    "next_timer",
    "spin_message",
    "wake",
]

#: How many virtual sleeps of one test's thread, outrunning real time, make a spin (`_spin`).
SPIN_SLEEPS: Final = 100_000
QUIET_HOPS: Final = 2  # idle loop iterations in a row before a timer fires
#: Whether every new thread starts in its creator's context (free-threaded 3.14): then a
#: heartbeat thread carries the test's context too, and only thread-pool workers count.
_INHERITED: Final = bool(getattr(sys.flags, "thread_inherit_context", False))
_TRIO: Final = ("trio",)  # the module a `ModuleArrival` waits for, when not imported yet


def wake(tick: asyncio.Future[None]) -> None:
    """Resolve a ticker's future (the timers of `_deadlines` use it)."""
    if not tick.done():
        tick.set_result(None)


class ThreadTime:
    """The sleeps of one thread, and of the event loops it runs, made virtual on ``clock``."""

    __slots__ = (
        "_arrival",
        "_context_clock",
        "_counted",
        "_lock",
        "_since",
        "_slept",
        "_undo",
        "active",
        "clock",
        "loops",
        "runs",
        "spun",
        "suspended",
        "thread",
    )

    def __init__(self, clock: VirtualClock, context_clock: Callable[[], object]) -> None:
        self.clock = clock
        #: the default clock of the calling context: ``clock`` in the test's, and in every
        #: copy of it a worker thread runs (the plugin sets it for the test)
        self._context_clock = context_clock
        self.thread = threading.get_ident()
        self.active = False
        #: >0 while a fixture wider than the test runs (`_plugin_scopes`): real sleeps
        self.suspended = 0
        #: the spin this thread's sleeps made (`_spin`), for the test's teardown
        self.spun: VirtualTimeSpinError | None = None
        self._counted = 0  # sleeps since `_since` (real), and the virtual seconds they took
        self._slept = 0.0
        self._since = real_now()
        self.loops: dict[asyncio.AbstractEventLoop, _LoopTimers] = {}
        self.runs: dict[object, TrioTimers] = {}  # trio runs, by their root task
        self._undo: list[tuple[object, str, object, object]] = []
        self._lock = threading.Lock()  # worker threads' sleeps, one at a time on the clock
        self._arrival: ModuleArrival | None = None  # waits for trio, if it is not imported

    def install(self) -> None:
        """Replace the sleep functions (each wraps the one it replaces)."""
        self.active = True
        # Inline, not a helper per name: every test that uses the kit installs these.
        undo = self._undo
        previous: Any = time.sleep
        mine: Any = self._sync_sleep(previous)
        undo.append((time, "sleep", replaced(mine, previous), previous))
        time.sleep = mine
        previous = asyncio.sleep
        mine = self._asyncio_sleep(previous)
        undo.append((asyncio, "sleep", replaced(mine, previous), previous))
        asyncio.sleep = mine
        trio: Any = sys.modules.get("trio")  # anyio's pytest plugin imports it, if installed
        if trio is not None:
            self._patch_trio(trio)
        else:  # it may come while the test runs (`import trio` in its body): wait for it
            self._arrival = ModuleArrival(_TRIO, self._trio_arrived)
            self._arrival.start()
        anyio: Any = sys.modules.get("anyio")  # what `import anyio` gives, cheaper
        if anyio is None:
            try:
                import anyio  # noqa: PLC0415 - optional, and only needed here
            except ImportError:  # pragma: no cover - anyio ships with httpx
                return
        previous = anyio.sleep
        mine = self._anyio_sleep(previous)
        undo.append((anyio, "sleep", replaced(mine, previous), previous))
        anyio.sleep = mine

    def _patch_trio(self, trio: Any) -> None:
        previous = trio.sleep
        mine = self._trio_sleep(previous)
        self._undo.append((trio, "sleep", replaced(mine, previous), previous))
        trio.sleep = mine

    def _trio_arrived(self, trio: Any) -> None:
        """Replace ``trio.sleep`` too: trio was first imported while the sleeps are replaced."""
        with self._lock:  # not while `uninstall` switches off (trio may come on a thread)
            if self.active:
                self._patch_trio(trio)

    def uninstall(self) -> None:
        """Put back what `install` replaced; a stale reference to ours then passes through.

        A sleep someone patched over ours stays theirs, and ours is retired: whoever puts
        it back puts back what it replaced (`pytest_agentfaults._patches`).
        """
        if self._arrival is not None:  # a trio arriving after this finds the sleeps off
            self._arrival.stop()
            with self._lock:
                self.active = False
        self.active = False
        undo = self._undo
        while undo:
            owner, name, mine, previous = undo.pop()
            if getattr(owner, name) is mine:
                setattr(owner, name, live(previous))
            else:
                retire(mine)
        if self.loops:
            loops, self.loops = self.loops, {}
            for timers in loops.values():
                timers.close(self.clock.now())
        if self.runs:
            runs, self.runs = self.runs, {}
            for run in runs.values():
                run.close(self.clock.now())

    def _mine(self) -> bool:
        if not self.active or self.suspended:
            return False
        if threading.get_ident() == self.thread:
            return True
        return self._context_clock() is self.clock and handed_over()

    def _spin(self) -> None:
        """`SPIN_SLEEPS` sleeps: raise `VirtualTimeSpinError` if they outran real time.

        Once raised, every later sleep of the thread raises it again (none is recorded:
        ``clock.sleeps`` stops growing). Sleeps that took less virtual time than the real
        time that passed are no spin: counted afresh.
        """
        __tracebackhide__ = True
        real = real_now() - self._since
        if self.spun is None and self._slept <= real:
            self._counted, self._slept, self._since = 0, 0.0, real_now()
            return
        message = str(self.spun) if self.spun is not None else spin_message(self._slept, real)
        error = VirtualTimeSpinError(message)
        self.spun = self.spun or error
        raise error

    def _sync_sleep(self, previous: Callable[[float], None]) -> Callable[[float], None]:
        def sleep(secs: float, /) -> None:
            """time.sleep, virtual on the test's thread (pytest-agentfaults)."""
            __tracebackhide__ = True
            seconds = _seconds(secs, allow_zero=True)
            if seconds is None or not self._mine():
                return previous(secs)
            self._counted += 1
            self._slept += seconds
            if self._counted >= SPIN_SLEEPS:
                self._spin()
            with self._lock:  # workers' sleeps may come at once
                self.clock.sleep(seconds)
            return None

        return sleep

    def _asyncio_sleep(self, previous: Callable[..., Awaitable[Any]]) -> Callable[..., Any]:
        async def sleep(delay: float, result: Any = None) -> Any:
            """asyncio.sleep, virtual in the test's event loop (pytest-agentfaults)."""
            __tracebackhide__ = True
            seconds = _seconds(delay, allow_zero=False)
            loop = self._loop() if seconds is not None else None
            if loop is None or seconds is None:
                return await previous(delay, result)
            await self._wait(loop, seconds)
            return result

        return sleep

    def _anyio_sleep(self, previous: Callable[[float], Awaitable[None]]) -> Callable[..., Any]:
        async def sleep(delay: float) -> None:
            """anyio.sleep, virtual in the test's event loop (pytest-agentfaults)."""
            __tracebackhide__ = True
            seconds = _seconds(delay, allow_zero=False)
            loop = self._loop() if seconds is not None else None
            if loop is not None and seconds is not None:
                await self._wait(loop, seconds)
                return None
            trio = running_trio() if seconds is not None and self._mine() else None
            if trio is None or seconds is None:  # not ours, or under neither asyncio nor trio
                return await previous(delay)
            await self._wait(None, seconds, trio)
            return None

        return sleep

    def _trio_sleep(self, previous: Callable[[float], Awaitable[None]]) -> Callable[..., Any]:
        async def sleep(seconds: float) -> None:
            """trio.sleep, virtual in the test's trio run (pytest-agentfaults)."""
            __tracebackhide__ = True
            wait = _seconds(seconds, allow_zero=False)
            trio = running_trio() if wait is not None and self._mine() else None
            if trio is None or wait is None:  # not ours, a checkpoint, or trio's to refuse
                return await previous(seconds)
            await self._wait(None, wait, trio)
            return None

        return sleep

    def _loop(self) -> asyncio.AbstractEventLoop | None:
        """The running asyncio loop, if it runs on our thread (not under trio)."""
        if not self._mine():
            return None
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None

    async def _wait(
        self, loop: asyncio.AbstractEventLoop | None, seconds: float, trio: Any = None
    ) -> None:
        __tracebackhide__ = True
        clock = self.clock
        self._counted += 1
        self._slept += seconds
        if self._counted >= SPIN_SLEEPS:
            self._spin()
        clock.sleeps.append(seconds)
        start = clock.now()
        end = start + seconds
        limit = attempt_deadline(clock)
        cut = limit is not None and end > limit
        if limit is not None and cut:
            end = max(start, limit)
        if trio is not None:
            mock = mock_clock(trio)
            if mock is not None:  # the run's own MockClock (pytest-trio's): its time rules
                before = mock.current_time()
                await trio.sleep_until(before + end - start)  # (`trio.sleep` may be ours)
                end = start + (mock.current_time() - before)
            else:
                left = await self._trio_timers(trio).until(end, clock.now)
                if left:  # the test ended first: the rest of the wait is real
                    await trio.sleep_until(trio.current_time() + left)
        elif loop is not None and readable(loop):
            timers = self.loops.get(loop)
            if timers is None:
                timers = self.loops[loop] = _LoopTimers(self, loop)
            await timers.until(end)
        else:  # a loop whose queues cannot be read: the wait ends at once, in order
            await asyncio.tasks.sleep(0)
        if end > clock.now():
            clock._store(end)
        if limit is not None and cut:
            raise AttemptDeadlineExceeded(limit)

    def _trio_timers(self, trio: Any) -> TrioTimers:
        """The timers of the trio run this call is in (its root task names it)."""
        root = trio.lowlevel.current_root_task()
        timers = self.runs.get(root)
        if timers is None:
            runs = self.runs

            def forget(done: TrioTimers) -> None:
                if runs.get(root) is done:
                    del runs[root]

            timers = self.runs[root] = TrioTimers(trio, forget)
        return timers


def handed_over() -> bool:
    """Whether the calling thread, running a test's context, runs work handed to it.

    Where threads start in their creator's context, a thread the test starts (a heartbeat)
    would carry it too: there only a thread-pool worker's work counts (`concurrent.futures`
    and the pools built on it, anyio's worker threads).
    """
    if not _INHERITED:
        return True
    thread = threading.current_thread()
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", None) == "concurrent.futures.thread" or type(
        thread
    ).__module__.startswith("anyio.")


def spin_message(slept: float, real: float) -> str:
    """What `VirtualTimeSpinError` says: what happened, why, and the fixes."""
    return (
        f"agentfaults: this test's thread made {SPIN_SLEEPS:,} virtual sleeps ({slept:,.0f} s "
        f"of virtual time) in {real:.2f} s of real time: a loop that waits on "
        "time.monotonic() or time.time() (a deadline loop, tenacity's stop_after_delay) "
        "never sees virtual time pass, so it spins. Wait on the clock the kit gives "
        "(virtual_clock.now()), stop after a number of attempts, or run the test on real "
        "time with @pytest.mark.real_time."
    )


def _seconds(value: object, *, allow_zero: bool) -> float | None:
    """``value`` as a wait to make virtual, or None to leave the call to the real function."""
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        return None
    return seconds


# ------------------------------------------------------------------------ loop timers


class _LoopTimers:
    """The virtual timers of one event loop, and the callback that fires them when idle."""

    __slots__ = ("busy_since", "handle", "heap", "last", "loop", "order", "owner", "quiet")

    def __init__(self, owner: ThreadTime, loop: asyncio.AbstractEventLoop) -> None:
        self.owner = owner
        self.loop = loop
        self.heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self.order = itertools.count()
        self.handle: asyncio.Handle | None = None
        self.quiet = 0
        self.last: tuple[Any, ...] | None = None
        self.busy_since: float | None = None  # real time the loop has had work since

    async def until(self, end: float) -> None:
        future: asyncio.Future[None] = self.loop.create_future()
        heapq.heappush(self.heap, (end, next(self.order), future))
        if self.handle is None:
            self.handle = self.loop.call_soon(_step, self)
        await future  # cancelled: the future is done, and `_step` drops it

    def next_end(self) -> float | None:
        while self.heap and self.heap[0][2].done():
            heapq.heappop(self.heap)
        return self.heap[0][0] if self.heap else None

    def close(self, now: float) -> None:
        """Stop firing; a sleep still pending (a task outliving its test) waits in real time."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        heap, self.heap = self.heap, []
        if self.loop.is_closed():
            return
        for end, _, future in heap:
            if not future.done():
                self.loop.call_later(max(0.0, end - now), _settle, future)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _step(timers: _LoopTimers) -> None:
    """Look at the loop; when it is idle, fire the earliest virtual timers."""
    timers.handle = None
    loop, end = timers.loop, timers.next_end()
    if end is None or loop.is_closed():
        if timers.owner.loops.get(loop) is timers:
            del timers.owner.loops[loop]
        return
    look = _look(loop, timers.owner.clock, end)
    state = tasks_state(loop) if look in ("idle", "busy_io") else None
    timers.quiet = timers.quiet + 1 if state is not None and state == timers.last else 0
    timers.last = state
    needed = QUIET_HOPS if look == "idle" else QUIET_TICKS
    if look == "ready":
        # A task polling with asyncio.sleep(0) keeps the loop busy for ever: after a while
        # the earliest timer fires anyway, as its real counterpart would have.
        now = real_now()
        timers.busy_since = timers.busy_since or now
        overdue = now - timers.busy_since >= BUSY_LIMIT
    else:
        timers.busy_since, overdue = None, False
    if overdue or (look in ("idle", "busy_io") and timers.quiet >= needed):
        timers.quiet, timers.last, timers.busy_since = 0, None, None
        while timers.heap and timers.heap[0][0] <= end:
            _, _, future = heapq.heappop(timers.heap)
            if not future.done():
                future.set_result(None)
        look = "ready"
    if look in ("ready", "idle"):
        timers.handle = loop.call_soon(_step, timers)
    else:
        timers.handle = tick_later(loop, _step, timers)


def _look(loop: asyncio.AbstractEventLoop, clock: VirtualClock, end: float) -> str:
    """``ready`` (work to do), ``wait`` (something real comes first), ``busy_io``, ``idle``."""
    if any(not is_bookkeeping(h) for h in loop._ready):  # type: ignore[attr-defined]
        return "ready"
    pending = clock._autojump
    if pending and min(pending) < end:
        return "wait"  # a tool attempt's deadline comes first: `_deadlines` jumps to it
    horizon = loop.time() + max(0.0, end - clock.now())
    for handle in loop._scheduled:  # type: ignore[attr-defined]
        if not handle.cancelled() and not is_bookkeeping(handle) and handle.when() < horizon:
            return "wait"  # a real timer fires before the virtual end would come
    if io_pending(loop) or executor_busy(loop):
        return "busy_io"
    return "idle"


def is_bookkeeping(handle: asyncio.Handle) -> bool:
    """Whether ``handle`` is one of the kit's own looks at the loop (never real work)."""
    callback = getattr(handle, "_callback", None)
    return callback is _step or callback is wake


def next_timer(loop: asyncio.AbstractEventLoop, clock: VirtualClock) -> float:
    """The earliest virtual timer of ``clock`` on ``loop`` (infinity when none)."""
    for thread_time in clock._patches:
        timers = thread_time.loops.get(loop)
        end = timers.next_end() if timers is not None else None
        if end is not None:
            return end
    return math.inf
