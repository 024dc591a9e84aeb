"""The engine under `Agent.run` and `Agent.arun`: one loop, two drivers.

The run logic is written once, as generators that *yield effects* (call the model, run a
tool attempt, wait) and receive their results. A sync driver and an async driver perform
the effects; everything else (policies, events, budgets) is shared, so ``run()`` and
``arun()`` cannot drift apart.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_agentfaults.errors import ToolTimeoutError, UsageError
from pytest_agentfaults.runtime import _parallel
from pytest_agentfaults.runtime._deadlines import (
    DeadlineExpired,
    acall_in_worker,
    await_virtual_deadline,
    call_in_worker,
)
from pytest_agentfaults.runtime._parallel import Parallel
from pytest_agentfaults.runtime.clock import (
    AttemptDeadlineExceeded,
    Clock,
    RealClock,
    VirtualClock,
    reset_attempt_deadline,
    set_attempt_deadline,
)

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models.base import Model, ModelRequest, ModelResponse
    from pytest_agentfaults.runtime.tools import Tool

T = TypeVar("T")


def _no_event(type: str, /, **fields: Any) -> None:
    return None


class Sleep:
    """Wait ``seconds`` on ``clock``."""

    __slots__ = ("clock", "seconds")

    def __init__(self, clock: Clock, seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds


class Attempt:
    """Run one attempt of ``tool`` with ``kwargs``, bounded by ``timeout`` on ``clock``.

    ``emit`` records events in the run's trace; ``call_id`` and ``number`` say which tool
    call and which attempt of it this is.
    """

    __slots__ = ("call_id", "clock", "cut", "emit", "kwargs", "number", "timeout", "tool")

    def __init__(
        self,
        tool: Tool[Any, Any],
        kwargs: dict[str, Any],
        timeout: float | None,
        clock: Clock,
        emit: Callable[..., object] = _no_event,
        call_id: str | None = None,
        number: int = 1,
        cut: bool = True,
    ) -> None:
        self.tool = tool
        self.kwargs = kwargs
        self.timeout = timeout
        self.clock = clock
        self.emit = emit
        self.call_id = call_id
        self.number = number
        # False for the default timeout: a sync tool then runs on the caller's thread, and
        # the timeout is checked when it returns (see ResilienceConfig.timeout_seconds)
        self.cut = cut


class ModelCall:
    """Send ``request`` to ``model``."""

    __slots__ = ("model", "request")

    def __init__(self, model: Model, request: ModelRequest) -> None:
        self.model = model
        self.request = request


Effect = Sleep | Attempt | ModelCall | Parallel
Steps = Generator[Effect, Any, T]


# ------------------------------------------------------------------------ interception

# Hooks the test kit installs (fault injection). The runtime defines the seam, never the
# faults: `intercept_tool` may raise, return a substitute result, or return PROCEED.
PROCEED: Any = object()


class Interceptor:
    """Base class for the test kit's fault injection; the default does nothing."""

    def tool_attempt(self, attempt: Attempt) -> Any:
        """Called before each tool attempt.

        Return `PROCEED`, a substitute result, or `Inject(error)` to fail the attempt. An
        exception escaping the hook is a bug of the hook: it becomes `InterceptorError`.
        """
        return PROCEED

    def model_call(self, call: ModelCall) -> Any:
        """Called before each model call: `PROCEED`, a response, or `Inject(error)`."""
        return PROCEED

    def declares_non_idempotent(self, tool: str) -> bool:
        """Whether the test declares ``tool`` must not run twice (``idempotent=False``)."""
        return False


# The interceptors in force in this context: per test (the plugin sets them at setup and
# resets them at teardown), never process-wide, so a leaked plan cannot reach other tests.
_interceptors: ContextVar[tuple[Interceptor, ...]] = ContextVar(
    "agentfaults_interceptors", default=()
)

# The emit function of the run whose model call or tool attempt is in progress, so layers
# below the runtime (the HTTP fault router) can record into that run's trace.
_current_emit: ContextVar[Callable[..., object] | None] = ContextVar(
    "agentfaults_current_emit", default=None
)


def current_emit() -> Callable[..., object] | None:
    """The event recorder of the run in progress in this context, if any."""
    return _current_emit.get()


def install_interceptor(interceptor: Interceptor) -> None:
    """Activate ``interceptor`` for every run in this context until removed.

    Contexts copied from this one afterwards (asyncio tasks, ``contextvars.copy_context``)
    see it too; other threads' contexts do not.
    """
    _interceptors.set((*_interceptors.get(), interceptor))


def remove_interceptor(interceptor: Interceptor) -> None:
    """Undo `install_interceptor` (in any order)."""
    current = _interceptors.get()
    if interceptor in current:
        _interceptors.set(tuple(i for i in current if i is not interceptor))


def active_interceptors() -> tuple[Interceptor, ...]:
    """The interceptors in force in this context, oldest first."""
    return _interceptors.get()


def declared_non_idempotent(tool: str) -> bool:
    """Whether an interceptor in force declares ``tool`` non-idempotent for this test."""
    interceptors = _interceptors.get()
    return bool(interceptors) and any(i.declares_non_idempotent(tool) for i in interceptors)


class Inject:
    """Returned by an interceptor: make ``error`` the outcome of the attempt or call."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class InterceptorError(AssertionError):
    """An interceptor (the test kit's fault injection) failed: a bug, never a tool failure.

    An AssertionError, so no recovery policy retries it or feeds it to the model.
    """


def _call_interceptor(hook: Callable[[Any], Any], effect: Any) -> Any:
    try:
        outcome = hook(effect)
    except AttemptDeadlineExceeded:
        raise  # injected latency crossed the attempt's deadline: a timeout, as intended
    except Exception as exc:
        raise InterceptorError(f"fault injection failed in {hook!r}: {exc!r}") from exc
    if isinstance(outcome, Inject):
        raise outcome.error
    return outcome


def _intercept_tool(effect: Attempt) -> Any:
    for interceptor in _interceptors.get():
        outcome = _call_interceptor(interceptor.tool_attempt, effect)
        if outcome is not PROCEED:
            return outcome
    return PROCEED


def _intercept_model(effect: ModelCall) -> Any:
    for interceptor in _interceptors.get():
        outcome = _call_interceptor(interceptor.model_call, effect)
        if outcome is not PROCEED:
            return outcome
    return PROCEED


# ------------------------------------------------------------------------ sync driver


def drive(steps: Steps[T], _runners: list[asyncio.Runner] | None = None) -> T:
    """Run ``steps`` to completion, performing each effect synchronously."""
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
                elif type(effect) is Parallel:
                    value = _parallel.run_sync(effect, lambda branch: drive(branch, runners))
                else:
                    value = None
                    effect.clock.sleep(effect.seconds)  # type: ignore[union-attr]
            except BaseException as exc:
                value = None
                error = exc
    finally:
        if _runners is None and runners:
            runners[0].close()


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
    emitting = _current_emit.set(effect.emit) if _interceptors.get() else None
    return start, deadline, emitting


def _close_attempt(deadline: object, emitting: object) -> None:
    if deadline is not None:
        reset_attempt_deadline(deadline)
    if emitting is not None:
        _current_emit.reset(emitting)  # type: ignore[arg-type]


def _attempt_sync(effect: Attempt, runner: asyncio.Runner | None) -> Any:
    start, deadline, emitting = _open_attempt(effect)
    try:
        if _in_worker(effect):
            # Real time: wait at most the timeout, then abandon the call in its thread.
            result = call_in_worker(lambda: _run_sync_tool(effect), effect.timeout)  # type: ignore[arg-type]
        else:
            result = _intercept_tool(effect) if _interceptors.get() else PROCEED
            if result is PROCEED:
                result = effect.tool.function(**effect.kwargs)
                if effect.tool.is_async:
                    assert runner is not None
                    # This attempt's context (deadline, recorder), not the runner's first one.
                    bounded = _bounded(effect, result, start)
                    result = runner.run(bounded, context=contextvars.copy_context())
    except (AttemptDeadlineExceeded, DeadlineExpired):
        raise _timed_out(effect) from None
    finally:
        if deadline is not None or emitting is not None:
            _close_attempt(deadline, emitting)
    timeout = effect.timeout
    if timeout is not None and effect.clock.now() - start > timeout:
        raise _timed_out(effect)
    return result


def _model_call_sync(effect: ModelCall) -> ModelResponse:
    token = _current_emit.set(effect.request.emit)
    try:
        if _interceptors.get():
            outcome = _intercept_model(effect)
            if outcome is not PROCEED:
                return outcome  # type: ignore[no-any-return]
        request = getattr(effect.model, "request", None)
        if request is None:
            raise UsageError(
                f"model {_model_name(effect.model)!r} has no sync request(); use await agent.arun()"
            )
        return request(effect.request)  # type: ignore[no-any-return]
    finally:
        _current_emit.reset(token)


# ------------------------------------------------------------------------ async driver


async def adrive(steps: Steps[T]) -> T:
    """Run ``steps`` to completion, awaiting each effect."""
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
                await effect.clock.asleep(effect.seconds)  # type: ignore[union-attr]
        except BaseException as exc:
            value = None
            error = exc


async def _attempt_async(effect: Attempt) -> Any:
    timeout, tool = effect.timeout, effect.tool
    start, deadline, emitting = _open_attempt(effect)
    try:
        if _in_worker(effect):
            result = await acall_in_worker(lambda: _run_sync_tool(effect), timeout)  # type: ignore[arg-type]
        else:
            result = _intercept_tool(effect) if _interceptors.get() else PROCEED
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
    timeout = effect.timeout
    if timeout is not None and effect.clock.now() - start > timeout:
        raise _timed_out(effect)
    return result


async def _model_call_async(effect: ModelCall) -> ModelResponse:
    token = _current_emit.set(effect.request.emit)
    try:
        if _interceptors.get():
            outcome = _intercept_model(effect)
            if outcome is not PROCEED:
                return outcome  # type: ignore[no-any-return]
        arequest = getattr(effect.model, "arequest", None)
        if arequest is None:
            raise UsageError(
                f"model {_model_name(effect.model)!r} has no async arequest(); use agent.run()"
            )
        return await arequest(effect.request)  # type: ignore[no-any-return]
    finally:
        _current_emit.reset(token)


def _in_worker(effect: Attempt) -> bool:
    """A sync tool with a timeout you set, in real time, runs on a worker thread to be cut."""
    real = type(effect.clock) is RealClock
    return real and effect.cut and effect.timeout is not None and not effect.tool.is_async


def _run_sync_tool(effect: Attempt) -> Any:
    """The body of a sync attempt on a worker thread: fault injection, then the tool."""
    result = _intercept_tool(effect) if _interceptors.get() else PROCEED
    if result is PROCEED:
        result = effect.tool.function(**effect.kwargs)
    return result


async def _bounded(effect: Attempt, awaitable: Any, start: float) -> Any:
    """Await an async tool's coroutine within the attempt's timeout, on its clock.

    Real time: `asyncio.timeout`. Virtual time: the clock jumps to the deadline once the
    loop is idle (see `_deadlines`). Another clock: only the check after the attempt.
    """
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
    timeout = effect.timeout or 0.0
    return ToolTimeoutError(
        f"tool {effect.tool.name!r} did not finish within {timeout:g}s",
        tool=effect.tool.name,
        timeout=timeout,
    )


def _model_name(model: object) -> str:
    return str(getattr(model, "name", type(model).__name__))
