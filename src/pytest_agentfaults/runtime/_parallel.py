"""The tool calls of one model turn, run together: the `Parallel` effect and its drivers.

``arun`` runs the calls of a turn concurrently, as asyncio tasks. ``run`` keeps them
sequential, in the model's order, stopping at the first call that raises (as it always did).
Either way the results come back in the model's order.

The trace stays deterministic under concurrency: while the calls run, each keeps its
events in its own buffer; when all are done the buffers are merged, ordered by their time
(``at``), then by call index, then by the order within the call, and only then numbered
(``seq``) and shown to observers. On a `VirtualClock` each call runs on its own timeline,
from the turn's start; the turn ends when the slowest call does, so three 0.2 s calls take
0.2 s of virtual time.

Backoff jitter does not depend on which call gets there first: each call of the turn draws
from its own random stream (see `JitterTurn`), in ``run`` too, so ``run`` and ``arun`` wait
the same.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Generator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from pytest_agentfaults.runtime._recorder import Recorder, buffer_events
from pytest_agentfaults.runtime.clock import VirtualClock, fork_virtual_time, join_virtual_time
from pytest_agentfaults.runtime.events import Event

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.events import Trace

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "JitterTurn",
    "Outcome",
    "Parallel",
    "branch_jitter",
    "run_async",
    "run_sync",
    "with_jitter",
]

Branch = Generator[Any, Any, Any]
# One branch's end: (True, its value) or (False, the exception it raised).
Outcome = tuple[bool, Any]


class JitterTurn:
    """The jitter streams of one parallel turn, seeded once one of its calls needs one.

    The turn draws one seed from the run's stream (``main()``), the first time any of its
    calls retries; call ``index`` then draws from a stream seeded with ``seed + index``.
    No other draw from the run's stream happens during the turn, so the seed is the same
    whichever call gets there first, in ``run`` and ``arun`` alike.
    """

    __slots__ = ("_main", "_seed")

    def __init__(self, main: Callable[[], random.Random]) -> None:
        self._main = main
        self._seed: int | None = None

    def stream(self, index: int) -> random.Random:
        """The stream of call ``index`` (0-based) of this turn."""
        if self._seed is None:
            self._seed = self._main().getrandbits(64)
        return random.Random(self._seed + index)


# The jitter of the parallel call running in this context:
# [its run, its turn, its index, its stream once a retry needs it].
_jitter: ContextVar[list[Any] | None] = ContextVar("agentfaults_branch_jitter", default=None)


def with_jitter(owner: object, turn: JitterTurn, index: int, branch: Branch) -> Branch:
    """``branch``, drawing ``owner``'s jitter from call ``index``'s stream of ``turn``."""
    token = _jitter.set([owner, turn, index, None])
    try:
        return (yield from branch)
    finally:
        _jitter.reset(token)


def branch_jitter(owner: object) -> random.Random | None:
    """The jitter stream of ``owner``'s parallel call running here, if any."""
    current = _jitter.get()
    if current is None or current[0] is not owner:
        return None
    stream: random.Random | None = current[3]
    if stream is None:
        stream = current[3] = current[1].stream(current[2])
    return stream


class Parallel:
    """Run ``branches`` (generators of effects) together; their outcomes, in order."""

    __slots__ = ("branches", "clock", "trace")

    def __init__(self, branches: list[Branch], clock: Clock, trace: Trace) -> None:
        self.branches = branches
        self.clock = clock
        self.trace = trace


def run_sync(effect: Parallel, drive: Callable[[Branch], Any]) -> list[Outcome]:
    """One branch after the other; none runs after one that raised."""
    __tracebackhide__ = True
    outcomes: list[Outcome] = []
    for branch in effect.branches:
        try:
            outcomes.append((True, drive(branch)))
        except Exception as exc:
            outcomes.append((False, exc))
            break
    for unstarted in effect.branches[len(outcomes) :]:
        unstarted.close()
    return outcomes


async def run_async(effect: Parallel, adrive: Callable[[Branch], Awaitable[Any]]) -> list[Outcome]:
    """Every branch as its own task; events merged in order once all are done."""
    __tracebackhide__ = True
    clock = effect.clock
    virtual = clock if isinstance(clock, VirtualClock) else None
    ends: list[float] = [clock.now()] * len(effect.branches)
    buffers: list[list[tuple[Event, Recorder]]] = [[] for _ in effect.branches]

    async def one(index: int, branch: Branch) -> Any:
        # A task runs in a copy of this context: what it sets here is its own.
        buffers[index] = buffer_events(effect.trace)
        cell = fork_virtual_time(virtual) if virtual is not None else None
        try:
            return await adrive(branch)
        finally:
            if cell is not None:
                ends[index] = cell[0]

    tasks = [asyncio.ensure_future(one(i, b)) for i, b in enumerate(effect.branches)]
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        _merge(buffers)
        if virtual is not None:
            join_virtual_time(virtual, max(ends))
    outcomes: list[Outcome] = []
    for result in results:
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result  # cancellation, Ctrl-C: never an outcome
            outcomes.append((False, result))
        else:
            outcomes.append((True, result))
    return outcomes


def _merge(buffers: list[list[tuple[Event, Recorder]]]) -> None:
    keyed = [
        (event.at, index, position, event, recorder)
        for index, kept in enumerate(buffers)
        for position, (event, recorder) in enumerate(kept)
    ]
    keyed.sort(key=lambda item: item[:3])
    for *_, event, recorder in keyed:
        recorder.deliver(event)
