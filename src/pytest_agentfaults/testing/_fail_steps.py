"""`fail`: the steps that make a model call fail as a real client's call would.

```python
fail(ConnectionError("reset")); fail.http(503); fail.rate_limit(retry_after=2)
fail.timeout(); fail.connection()
```
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults.errors import (
    ModelAuthError,
    ModelError,
    ModelHTTPError,
    ModelServerError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse
from pytest_agentfaults.testing.steps import ScriptStep, no_step, steps_of

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ConnectionFailure",
    "FailSteps",
    "HTTPFailure",
    "RaiseError",
    "TimeoutFailure",
    "fail",
]


@dataclass(frozen=True, slots=True, repr=False)
class RaiseError(ScriptStep):
    """The model call raises ``error``.

    An exception instance is raised itself, every time (its identity is kept); an exception
    class is instantiated anew for every call.
    """

    error: BaseException | type[BaseException]

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise the error."""
        __tracebackhide__ = True
        error = self.error
        if isinstance(error, BaseException):
            # The traceback of an earlier raise would keep growing with every repeat.
            raise error.with_traceback(None)
        raise _instantiate(error, model)

    def __repr__(self) -> str:
        error = self.error
        return f"fail({error.__name__ if isinstance(error, type) else repr(error)})"


_CLASS_STATUSES: Final = ((RateLimitError, 429), (ModelAuthError, 401), (ModelServerError, 503))


def _instantiate(error: type[BaseException], model: str) -> BaseException:
    message = f"scripted model {model!r} raised {error.__name__}"
    if issubclass(error, ModelHTTPError):
        status = 400
        for family, family_status in _CLASS_STATUSES:
            if issubclass(error, family):
                status = family_status
                break
        return error(message, status=status, model=model)
    if issubclass(error, ModelError):
        return error(message, model=model)
    return error(message)


@dataclass(frozen=True, slots=True, repr=False)
class HTTPFailure(ScriptStep):
    """The provider answers with an error status; raised as the matching `ModelHTTPError`.

    429 is a `RateLimitError` (with ``retry_after``), 401/403 a `ModelAuthError`, 5xx (529
    included) a `ModelServerError`, anything else a plain `ModelHTTPError`. A
    ``retry_after`` is also sent as a ``retry-after`` header.
    """

    status: int
    body: str = ""
    retry_after: float | None = None

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise the HTTP error, a new one for every call."""
        __tracebackhide__ = True
        raise self.error(model)

    def error(self, model: str = "scripted") -> ModelHTTPError:
        """The exception this step raises for the model named ``model``."""
        status = self.status
        try:
            phrase = f" {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = ""
        message = f"scripted model {model!r} answered HTTP {status}{phrase}"
        headers = {} if self.retry_after is None else {"retry-after": f"{self.retry_after:g}"}
        if status == 429:
            return RateLimitError(
                message, body=self.body, headers=headers, model=model, retry_after=self.retry_after
            )
        kind: type[ModelHTTPError] = ModelHTTPError
        if status in (401, 403):
            kind = ModelAuthError
        elif status >= 500:
            kind = ModelServerError
        return kind(message, status=status, body=self.body, headers=headers, model=model)

    def __repr__(self) -> str:
        retry_after = "" if self.retry_after is None else f"retry_after={self.retry_after!r}"
        if self.status == 429 and not self.body:
            return f"fail.rate_limit({retry_after})"
        options = [repr(self.status)]
        if self.body:
            options.append(repr(self.body))
        if retry_after:
            options.append(retry_after)
        return f"fail.http({', '.join(options)})"


@dataclass(frozen=True, slots=True, repr=False)
class TimeoutFailure(ScriptStep):
    """The model call times out: raises `ModelTimeoutError` (a `TimeoutError`)."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelTimeoutError`."""
        __tracebackhide__ = True
        raise ModelTimeoutError(f"scripted model {model!r} timed out", model=model)

    def __repr__(self) -> str:
        return "fail.timeout()"


@dataclass(frozen=True, slots=True, repr=False)
class ConnectionFailure(ScriptStep):
    """The connection fails: raises `ModelTransportError` (a `ConnectionError`)."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelTransportError`."""
        __tracebackhide__ = True
        raise ModelTransportError(f"scripted model {model!r}: connection refused", model=model)

    def __repr__(self) -> str:
        return "fail.connection()"


class FailSteps:
    """Steps that make the model call fail; used through the single instance `fail`.

    ```python
    fail(ConnectionError("reset"))       # raise this very exception
    fail.http(503)                       # ModelServerError
    fail.rate_limit(retry_after=2)       # RateLimitError, retry_after=2.0
    fail.timeout(); fail.connection()    # ModelTimeoutError; ModelTransportError
    ```
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # a type checker still flags a typo: to it, there is no such hook

        def __getattr__(self, name: str) -> Any:
            __tracebackhide__ = True
            if name.startswith("_"):
                raise AttributeError(name)
            from pytest_agentfaults.testing._malformed_steps import (  # noqa: PLC0415 - it imports us
                malformed,
            )

            raise no_step("fail", name, steps_of(self), ("malformed", steps_of(malformed)))

    def __call__(self, error: BaseException | type[BaseException]) -> RaiseError:
        """The call raises ``error``: this very instance every time, or a new one of a class."""
        if isinstance(error, BaseException):
            return RaiseError(error)
        if isinstance(error, type) and issubclass(error, BaseException):
            try:
                _instantiate(error, "scripted")
            except Exception as exc:
                raise UsageError(
                    f"fail({error.__name__}): the class cannot be built from a message alone "
                    f"({exc}); pass an instance instead: fail({error.__name__}(...))"
                ) from exc
            return RaiseError(error)
        raise UsageError(
            f"fail() takes an exception or an exception class, got {type(error).__name__}: "
            f"{error!r}; for an HTTP status use fail.http({error!r})"
        )

    def http(self, status: int, body: str = "", *, retry_after: float | None = None) -> HTTPFailure:
        """The provider answers HTTP ``status`` (4xx or 5xx) with ``body``."""
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise UsageError(
                f"fail.http() takes an error status from 400 to 599, got {status!r}; "
                "script a 2xx answer with say()/call_tool(), or a bad one with malformed.*"
            )
        if not isinstance(body, str):
            raise UsageError(f"fail.http({status}): body must be a str, got {body!r}")
        return HTTPFailure(status, body, _seconds(retry_after, f"fail.http({status})"))

    def rate_limit(self, retry_after: float | None = None, *, body: str = "") -> HTTPFailure:
        """HTTP 429: a `RateLimitError` whose ``retry_after`` is the given seconds (or None)."""
        return self.http(429, body, retry_after=retry_after)

    def timeout(self) -> TimeoutFailure:
        """The model call times out (`ModelTimeoutError`)."""
        return TimeoutFailure()

    def connection(self) -> ConnectionFailure:
        """The connection to the provider fails (`ModelTransportError`)."""
        return ConnectionFailure()

    def __repr__(self) -> str:
        return "fail"


def _seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise UsageError(
            f"{where}: retry_after must be seconds >= 0 (finite) or None, got {value!r}"
        )
    return float(value)


fail: Final = FailSteps()
"""Failure steps: ``fail(exc)``, ``fail.http(status)``, ``fail.rate_limit()``, ``fail.timeout()``,
``fail.connection()``."""
