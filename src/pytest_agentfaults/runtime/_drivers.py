"""The drivers under `Agent.run` and `Agent.arun`: one step generator, two drivers.

The run logic is written once, as generators that *yield effects* (call the model, run a
tool attempt, wait) and receive their results. A sync driver and an async driver perform
the effects; everything else (policies, events, budgets) is shared, so ``run()`` and
``arun()`` cannot drift apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pytest_agentfaults.errors import ToolTimeoutError, UsageError
from pytest_agentfaults.runtime import _parallel
from pytest_agentfaults.runtime._attempt_deadline import (
    AttemptDeadlineExceeded,
    pop_attempt_deadline,
    push_attempt_deadline,
    reset_attempt_deadline,
)
from pytest_agentfaults.runtime._deadlines import (
    DeadlineExpired,
    acall_in_worker,
    await_virtual_deadline,
    call_in_worker,
)
from pytest_agentfaults.runtime._parallel import Parallel
from pytest_agentfaults.runtime.clock import (
    REAL_ASLEEP,
    REAL_SLEEP,
    Clock,
    RealClock,
    VirtualClock,
    set_attempt_deadline,
)
from pytest_agentfaults.runtime.hooks import (
    PROCEED,
    Attempt,
    ModelCall,
    active_interceptors,
    intercept_model,
    intercept_tool,
    reset_attempting,
    reset_current_emit,
    set_attempting,
    set_current_emit,
)

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._result import CancelToken
    from pytest_agentfaults.runtime.models.base import ModelResponse

T = TypeVar("T")


class Sleep:
    """Wait ``seconds`` on ``clock``; in plain real time, until ``cancel`` is cancelled at most."""

    __slots__ = ("cancel", "clock", "seconds")

    def __init__(self, clock: Clock, seconds: float, cancel: CancelToken | None = None) -> None:
        self.clock = clock
        self.seconds = seconds
        self.cancel = cancel


Effect = Sleep | Attempt | ModelCall | Parallel
#: what ends a sync attempt at its deadline (one tuple, not built at each failed attempt)
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
_CUT: Final = (AttemptDeadlineExceeded, DeadlineExpired)
Steps = Generator[Effect, Any, T]


# ------------------------------------------------------------------------ sync driver


def drive(steps: Steps[T], _runners: list[asyncio.Runner] | None = None) -> T:
    """Run ``steps`` to completion, performing each effect synchronously."""
    __tracebackhide__ = True
    # One event loop for every async tool of the run, parallel turns included (a client
    # an async tool keeps must not outlive its loop); made on first use, closed at the end.
    runners = _runners if _runners is not None else []
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                effect = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            error = None
            try:
                if type(effect) is Attempt:
                    if effect.tool.is_async and not runners:
                        runners.append(_new_runner())
                    value = _attempt_sync(effect, runners[0] if runners else None)
                elif type(effect) is ModelCall:
                    value = _model_call_sync(effect)
                elif type(effect) is Sleep:
                    value = None
                    if type(effect.clock) is RealClock and effect.cancel is not None:
                        _sleep(effect)  # a cancel may end it early
                    else:
                        effect.clock.sleep(effect.seconds)
                else:
                    value = _parallel.run_sync(effect, lambda branch: drive(branch, runners))  # type: ignore[arg-type]
            except BaseException as exc:
                value = None
                error = exc
    finally:
        if _runners is None and runners:
            runners[0].close()


def wait(clock: Clock, seconds: float, cancel: CancelToken | None) -> None:
    """Wait ``seconds`` on ``clock``; in plain real time, until ``cancel`` is cancelled at most."""
    if type(clock) is RealClock and cancel is not None:
        _sleep(Sleep(clock, seconds, cancel))
    else:
        clock.sleep(seconds)


async def await_wait(clock: Clock, seconds: float, cancel: CancelToken | None) -> None:
    """`wait`, without blocking the event loop."""
    if type(clock) is RealClock and cancel is not None:
        await _asleep(Sleep(clock, seconds, cancel))
    else:
        await clock.asleep(seconds)


def _cancellable(effect: Sleep, real_sleep: object, sleep: object) -> CancelToken | None:
    """The token that may end this wait (on a `RealClock`) early, unless sleep is patched.

    A patched sleep (the plugin's virtual time in a test, freezegun...) is the patcher's
    to keep: the wait goes through the clock as ever.
    """
    return effect.cancel if sleep is real_sleep and effect.seconds > 0 else None


def _sleep(effect: Sleep) -> None:
    token = _cancellable(effect, REAL_SLEEP, time.sleep)
    if token is None:
        effect.clock.sleep(effect.seconds)
        return
    woken = threading.Event()
    wake = woken.set
    token._on_cancel(wake)  # noqa: SLF001 - the runtime's own token
    try:
        if not token._cancelled:  # noqa: SLF001 - cancelled before the wait: no wait
            woken.wait(effect.seconds)
    finally:
        token._forget(wake)  # noqa: SLF001


async def _asleep(effect: Sleep) -> None:
    token = _cancellable(effect, REAL_ASLEEP, asyncio.sleep)
    if token is None:
        await effect.clock.asleep(effect.seconds)
        return
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:  # from any thread
        with contextlib.suppress(RuntimeError):  # a closed loop: nothing waits any more
            loop.call_soon_threadsafe(_settle, woken)

    token._on_cancel(wake)  # noqa: SLF001 - the runtime's own token
    try:
        if not token._cancelled:  # noqa: SLF001 - cancelled before the wait: no wait
            await asyncio.wait((woken,), timeout=effect.seconds)
    finally:
        token._forget(wake)  # noqa: SLF001
        woken.cancel()


def _settle(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def _new_runner() -> asyncio.Runner:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.Runner()
    raise UsageError(
        "an async tool cannot run inside agent.run() while an event loop is running in this "
        "thread; use `await agent.arun(...)`"
    )


def _open_attempt(effect: Attempt) -> tuple[float, object, object]:
    """Start an attempt: its start time, the deadline token, the current-emit token."""
    clock, timeout = effect.clock, effect.timeout
    start = clock.now()
    virtual = type(clock) is VirtualClock and timeout is not None
    deadline = set_attempt_deadline(clock, start + timeout) if virtual else None  # type: ignore[operator]
    emitting = (
        (set_current_emit(_emit_of(effect)), set_attempting(effect.tool.name))
        if active_interceptors()
        else None
    )
    return start, deadline, emitting


def _emit_of(effect: Attempt) -> Any:
    """What records this attempt's inner events: its run's, else the test's own (None).

    An attempt of no recorder (a `Tool.invoke` inside a framework's attempt at the same
    tool, which records it) leaves a request its tool makes to the test's HTTP recorder.
    """
    return effect.emit if effect.rec is not None else None


def _close_attempt(deadline: object, emitting: Any) -> None:
    if deadline is not None:
        reset_attempt_deadline(deadline)
    if emitting is not None:
        reset_current_emit(emitting[0])
        reset_attempting(emitting[1])


def _attempt_sync(effect: Attempt, runner: asyncio.Runner | None) -> Any:
    # `_open_attempt`, `_in_worker`, `_close_attempt` and `_check_late`, inlined: every tool
    # attempt of every sync run (each retry too) comes here.
    __tracebackhide__ = True
    clock, timeout, tool = effect.clock, effect.timeout, effect.tool
    start = clock.now()
    interceptors = active_interceptors()
    deadline = (
        push_attempt_deadline((clock, start + timeout))
        if timeout is not None and type(clock) is VirtualClock
        else None
    )
    emitting: Any = None
    naming: Any = None
    if interceptors:  # layers below record into this run; a framework tool inside is this
        emitting = set_current_emit(_emit_of(effect))
        naming = set_attempting(tool.name)
    try:
        if timeout is not None and type(clock) is RealClock and effect.cut and not tool.is_async:
            # Real time: wait at most the timeout, then abandon the call in its thread.
            result = call_in_worker(lambda: _run_sync_tool(effect), timeout)
        else:
            result = intercept_tool(effect) if interceptors else PROCEED
            if result is PROCEED:
                result = tool.function(**effect.kwargs)
                if tool.is_async:
                    assert runner is not None
                    # This attempt's context (deadline, recorder), not the runner's first one.
                    bounded = _bounded(effect, result, start)
                    result = runner.run(bounded, context=contextvars.copy_context())
    except _CUT:
        raise _timed_out(effect) from None
    finally:
        if deadline is not None:
            pop_attempt_deadline(deadline)
        if emitting is not None:
            reset_current_emit(emitting)
            reset_attempting(naming)
    # An attempt that returned past its timeout timed out all the same.
    if timeout is not None and clock.now() - start > timeout:
        raise _timed_out(effect)
    return result


def _check_late(effect: Attempt, start: float) -> None:
    """An attempt that returned past its timeout timed out all the same."""
    __tracebackhide__ = True
    timeout = effect.timeout
    if timeout is not None and effect.clock.now() - start > timeout:
        raise _timed_out(effect)


def _sync_request(effect: ModelCall) -> ModelResponse:
    __tracebackhide__ = True
    request = getattr(effect.model, "request", None)
    if request is None:
        raise UsageError(
            f"model {model_name(effect.model)!r} has no sync request(); use await agent.arun()"
        )
    return request(effect.request)  # type: ignore[no-any-return]


def _model_call_sync(effect: ModelCall) -> ModelResponse:
    __tracebackhide__ = True
    token = set_current_emit(effect.request.emit)
    try:
        if active_interceptors():
            outcome = intercept_model(effect)
            if outcome is not PROCEED:
                return outcome  # type: ignore[no-any-return]
        # `_sync_request`, inline for a model that has ``request`` (every model call)
        request = getattr(effect.model, "request", None)
        if request is not None:
            return request(effect.request)  # type: ignore[no-any-return]
        return _sync_request(effect)  # to say what is missing
    finally:
        reset_current_emit(token)


# ------------------------------------------------------------------------ async driver

# Awaited where no asyncio loop runs (trio, or a coroutine driven by hand): the runtime's
# backoff, tool deadlines and parallel calls are asyncio's, and would fail at the first
# wait with the other library's error, after the run had started.
_NOT_ASYNCIO: Final = (
    "agent.arun() and tool.ainvoke() need an asyncio event loop, and none is running "
    "here (a trio run? anyio's pytest plugin runs a test under trio when its "
    "anyio_backend fixture says 'trio'): the runtime's backoff, tool timeouts and "
    "parallel tool calls wait on asyncio. Run the test on asyncio (anyio_backend = "
    "'asyncio', or pytest-asyncio), or call the sync agent.run() instead"
)


async def adrive(steps: Steps[T]) -> T:
    """Run ``steps`` to completion, awaiting each effect (on asyncio: `_NOT_ASYNCIO`)."""
    __tracebackhide__ = True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        steps.close()
        raise UsageError(_NOT_ASYNCIO) from None
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        error = None
        try:
            if type(effect) is Attempt:
                value = await _attempt_async(effect)
            elif type(effect) is ModelCall:
                value = await _model_call_async(effect)
            elif type(effect) is Parallel:
                value = await _parallel.run_async(effect, adrive)
            else:
                value = None
                if type(effect.clock) is RealClock and effect.cancel is not None:  # type: ignore[union-attr]
                    await _asleep(effect)  # type: ignore[arg-type]  # a cancel may end it early
                else:
                    await effect.clock.asleep(effect.seconds)  # type: ignore[union-attr]
        except BaseException as exc:
            value = None
            error = exc


async def _attempt_async(effect: Attempt) -> Any:
    __tracebackhide__ = True
    timeout, tool = effect.timeout, effect.tool
    start, deadline, emitting = _open_attempt(effect)
    try:
        if _in_worker(effect):
            result = await acall_in_worker(lambda: _run_sync_tool(effect), timeout)  # type: ignore[arg-type]
        else:
            result = intercept_tool(effect) if active_interceptors() else PROCEED
            if result is PROCEED:
                if not tool.is_async:
                    result = tool.function(**effect.kwargs)
                elif timeout is None:
                    result = await tool.function(**effect.kwargs)
                else:
                    result = await _bounded(effect, tool.function(**effect.kwargs), start)
    except (AttemptDeadlineExceeded, DeadlineExpired):
        raise _timed_out(effect) from None
    finally:
        if deadline is not None or emitting is not None:
            _close_attempt(deadline, emitting)
    _check_late(effect, start)
    return result


async def _async_request(effect: ModelCall) -> ModelResponse:
    __tracebackhide__ = True
    arequest = getattr(effect.model, "arequest", None)
    if arequest is None:
        raise UsageError(
            f"model {model_name(effect.model)!r} has no async arequest(); use agent.run()"
        )
    return await arequest(effect.request)  # type: ignore[no-any-return]


async def _model_call_async(effect: ModelCall) -> ModelResponse:
    __tracebackhide__ = True
    token = set_current_emit(effect.request.emit)
    try:
        if active_interceptors():
            outcome = intercept_model(effect)
            if outcome is not PROCEED:
                return outcome  # type: ignore[no-any-return]
        return await _async_request(effect)
    finally:
        reset_current_emit(token)


def _in_worker(effect: Attempt) -> bool:
    """A sync tool with a timeout you set, in real time, runs on a worker thread to be cut."""
    real = type(effect.clock) is RealClock
    return real and effect.cut and effect.timeout is not None and not effect.tool.is_async


def _run_sync_tool(effect: Attempt) -> Any:
    """The body of a sync attempt on a worker thread: fault injection, then the tool."""
    __tracebackhide__ = True
    result = intercept_tool(effect) if active_interceptors() else PROCEED
    if result is PROCEED:
        result = effect.tool.function(**effect.kwargs)
    return result


async def _bounded(effect: Attempt, awaitable: Any, start: float) -> Any:
    """Await an async tool's coroutine within the attempt's timeout, on its clock.

    Real time: `asyncio.timeout`. Virtual time: the clock jumps to the deadline once the
    loop is idle (see `_deadlines`). Another clock: only the check after the attempt.
    """
    __tracebackhide__ = True
    clock, timeout = effect.clock, effect.timeout
    if timeout is None:
        return await awaitable
    if type(clock) is RealClock:
        try:
            async with asyncio.timeout(timeout) as scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                raise _timed_out(effect) from None
            raise
    if type(clock) is VirtualClock:
        return await await_virtual_deadline(awaitable, clock, start + timeout)
    return await awaitable


def _timed_out(effect: Attempt) -> ToolTimeoutError:
    return timed_out(effect.tool.name, effect.timeout or 0.0)


def timed_out(tool: str, timeout: float) -> ToolTimeoutError:
    """The error of an attempt of ``tool`` that ran past ``timeout`` seconds."""
    return ToolTimeoutError(
        f"tool {tool!r} did not finish within {timeout:g}s", tool=tool, timeout=timeout
    )


def model_name(model: object) -> str:
    return str(getattr(model, "name", type(model).__name__))
