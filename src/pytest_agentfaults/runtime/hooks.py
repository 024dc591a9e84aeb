"""The interception seam: where the test kit's fault injection reaches into a run.

The runtime defines the seam, never the faults. An `Interceptor` installed for a context
sees each tool `Attempt` and each `ModelCall` before it happens, and may let it proceed
(`PROCEED`), substitute a result, or fail it (`Inject`). `current_emit` gives layers below
the runtime (the HTTP fault router) the event recorder of the run in progress.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults._exc_text import exception_repr
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._attempt_deadline import AttemptDeadlineExceeded
from pytest_agentfaults.runtime._pending import switch_on
from pytest_agentfaults.runtime._tool import BaseTool

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.models.base import Model, ModelRequest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "PROCEED",
    "Attempt",
    "Inject",
    "Interceptor",
    "InterceptorError",
    "ModelCall",
    "active_interceptors",
    "attempting",
    "current_emit",
    "declared_non_idempotent",
    "framework_attempt",
    "install_interceptor",
    "remove_interceptor",
]


def _no_event(type: str, /, **fields: Any) -> None:
    return None


class Attempt:
    """Run one attempt of ``tool`` with ``kwargs``, bounded by ``timeout`` on ``clock``.

    ``emit`` records events in the run's trace; ``call_id`` and ``number`` say which tool
    call and which attempt of it this is. ``rec`` is the run's recorder, when the attempt
    is a run's (None: ``emit`` alone records).
    """

    __slots__ = ("call_id", "clock", "cut", "emit", "kwargs", "number", "rec", "timeout", "tool")

    def __init__(
        self,
        tool: BaseTool[Any, Any],
        kwargs: dict[str, Any],
        timeout: float | None,
        clock: Clock,
        emit: Callable[..., object] = _no_event,
        call_id: str | None = None,
        number: int = 1,
        cut: bool = True,
        rec: Recorder | None = None,
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
        self.rec = rec


class ModelCall:
    """Send ``request`` to ``model``."""

    __slots__ = ("model", "request")

    def __init__(self, model: Model, request: ModelRequest) -> None:
        self.model = model
        self.request = request


# `Interceptor.tool_attempt` / `model_call` return this to let the attempt or call happen.
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


class Inject:
    """Returned by an interceptor: make ``error`` the outcome of the attempt or call."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class InterceptorError(AssertionError):
    """An interceptor (the test kit's fault injection) failed: a bug, never a tool failure.

    An AssertionError, so no recovery policy retries it or feeds it to the model.
    """


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

# The name of this runtime's tool whose attempt is in progress in this context, set by the
# drivers while an interceptor is in force: a framework tool of that name called inside it
# (an `af.tool` wrapping a LangChain tool) is the same attempt, counted and faulted once.
_attempting: ContextVar[str | None] = ContextVar("agentfaults_attempting", default=None)

# The other way round: the name of another framework's tool whose attempt the test kit is
# running in this context. An `af.tool` of that name invoked inside it (a LangChain tool
# whose body calls ``search.invoke(...)``) is that attempt: not recorded, not faulted again.
_framework_attempt: ContextVar[str | None] = ContextVar(
    "agentfaults_framework_attempt", default=None
)


# `current_emit`, `set_current_emit`, `reset_current_emit` and `active_interceptors` are
# the variables' own methods, not functions around them: the drivers call them at every
# model call and tool attempt of every run, and a Python frame costs more than the lookup.

#: ``current_emit()``: the event recorder of the run in progress in this context, if any.
current_emit: Final = _current_emit.get
#: ``set_current_emit(emit)``: make ``emit`` the `current_emit` of this context until
#: ``reset_current_emit(token)`` with the token it returns.
set_current_emit: Final = _current_emit.set
#: ``reset_current_emit(token)``: undo `set_current_emit`.
reset_current_emit: Final = _current_emit.reset
#: ``active_interceptors()``: the interceptors in force in this context, oldest first.
active_interceptors: Final = _interceptors.get
#: ``attempting()``: the name of the runtime's tool whose attempt is in progress, if any.
attempting: Final = _attempting.get
#: ``set_attempting(name)``: the drivers' mark of an attempt; ``reset_attempting(token)``.
set_attempting: Final = _attempting.set
#: ``reset_attempting(token)``: undo `set_attempting`.
reset_attempting: Final = _attempting.reset
#: ``framework_attempt()``: the name of a framework tool the kit's attempt is running, if any.
framework_attempt: Final = _framework_attempt.get
#: ``set_framework_attempt(name)``: the kit's mark of a framework attempt; undo with
#: ``reset_framework_attempt(token)``.
set_framework_attempt: Final = _framework_attempt.set
#: ``reset_framework_attempt(token)``: undo `set_framework_attempt`.
reset_framework_attempt: Final = _framework_attempt.reset


def install_interceptor(interceptor: Interceptor) -> None:
    """Activate ``interceptor`` for every run in this context until removed.

    Contexts copied from this one afterwards (asyncio tasks, ``contextvars.copy_context``)
    see it too; other threads' contexts do not.
    """
    switch_on()  # a pending test switches on first: this changes its context (`_pending`)
    _interceptors.set((*_interceptors.get(), interceptor))


def remove_interceptor(interceptor: Interceptor) -> None:
    """Undo `install_interceptor` (in any order)."""
    current = _interceptors.get()
    if len(current) == 1 and current[0] is interceptor:  # the usual one, alone
        _interceptors.set(())
    elif interceptor in current:
        _interceptors.set(tuple(i for i in current if i is not interceptor))


def declared_non_idempotent(tool: str) -> bool:
    """Whether an interceptor in force declares ``tool`` non-idempotent for this test."""
    # A loop, not ``any(<generator>)``: asked on every attempt of every tool call.
    for interceptor in _interceptors.get():  # noqa: SIM110 - see above
        if interceptor.declares_non_idempotent(tool):
            return True
    return False


def intercept_tool(effect: Attempt) -> Any:
    """What the interceptors in force make of a tool attempt: `PROCEED` or a result."""
    __tracebackhide__ = True
    # The hook is called here, not through a helper: asked before every tool attempt of a
    # test (`intercept_model` is the same loop, for model calls).
    for interceptor in _interceptors.get():
        try:
            outcome = interceptor.tool_attempt(effect)
        except AttemptDeadlineExceeded:
            raise  # injected latency crossed the attempt's deadline: a timeout, as intended
        except UsageError:
            raise  # the test's mistake (a fault left unfinished): its own message, unwrapped
        except Exception as exc:
            hook = interceptor.tool_attempt
            raise InterceptorError(
                f"fault injection failed in {hook!r}: {exception_repr(exc)}"
            ) from exc
        if isinstance(outcome, Inject):
            # A fault's exception is one instance, raised again and again (a marker's, in
            # every test): raised as is, its traceback would grow by each raise's frames
            # and keep every earlier run alive. Each raise starts a traceback of its own.
            raise outcome.error.with_traceback(None)
        if outcome is not PROCEED:
            return outcome
    return PROCEED


def intercept_model(effect: ModelCall) -> Any:
    """What the interceptors in force make of a model call: `PROCEED` or a response."""
    __tracebackhide__ = True
    for interceptor in _interceptors.get():  # as `intercept_tool` does
        try:
            outcome = interceptor.model_call(effect)
        except AttemptDeadlineExceeded:
            raise
        except UsageError:
            raise
        except Exception as exc:
            hook = interceptor.model_call
            raise InterceptorError(
                f"fault injection failed in {hook!r}: {exception_repr(exc)}"
            ) from exc
        if isinstance(outcome, Inject):
            raise outcome.error.with_traceback(None)
        if outcome is not PROCEED:
            return outcome
    return PROCEED
