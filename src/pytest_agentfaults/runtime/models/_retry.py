"""Transport retry: whether, and how long, a model client waits before repeating a request."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from pytest_agentfaults.errors import (
    ModelError,
    ModelHTTPError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.backoff import jitter_rng
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.models._errors import is_transport_retryable
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.models.base import ModelRequest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "DEFAULT_RETRY_STATUSES",
    "TransportRetry",
    "coerce_transport_retry",
    "retry_delay",
    "should_retry_header",
]

DEFAULT_RETRY_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class TransportRetry:
    """How a model client repeats a request that failed in transit.

    On by default in every httpx model client: connection errors and HTTP 408, 429, 500,
    502, 503, 504 and 529 are tried ``max_attempts`` times in all (3), waiting
    ``initial_backoff * multiplier ** (n - 1)`` before attempt ``n + 1`` (0.25 s, then
    0.5 s), less up to ``jitter`` (25 %) of it, drawn from the run's seeded random stream
    (as the official SDKs jitter theirs), so a test replays its waits. An
    ``x-should-retry: true|false`` header overrides the status, as for the SDKs. A
    ``Retry-After`` / ``retry-after-ms`` header above 0 replaces the backoff when it is at
    most ``max_delay`` (60 s by default); above it the error is raised at once (a
    `RateLimitError` keeps ``retry_after``), so the run's ``on_llm_error`` decides; a
    ``Retry-After: 0`` asks for nothing, and the backoff applies. Timeouts are never
    repeated (``on_llm_error`` decides), and neither is a stream that has delivered its
    first chunk. Every wait goes through the agent's clock.

    ```python
    model = af.OpenAIModel("gpt-4o-mini", transport_retry=af.TransportRetry(max_attempts=5))
    model = af.OpenAIModel("gpt-4o-mini", transport_retry=False)     # no transport retry
    ```
    """

    max_attempts: int = 3
    initial_backoff: float = 0.25
    multiplier: float = 2.0
    max_delay: float = 60.0
    retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise UsageError(f"TransportRetry(max_attempts={self.max_attempts!r}): use an int >= 1")
        if self.max_attempts < 1:
            raise UsageError(
                f"TransportRetry(max_attempts={self.max_attempts!r}): it counts the first "
                "attempt, so use 1 or more (or transport_retry=False to disable)"
            )
        for name in ("initial_backoff", "max_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise UsageError(f"TransportRetry({name}={value!r}): use a number of seconds >= 0")
        if not isinstance(self.jitter, int | float) or not 0 <= self.jitter <= 1:
            raise UsageError(f"TransportRetry(jitter={self.jitter!r}): use a fraction in [0, 1]")
        if not isinstance(self.multiplier, int | float) or not self.multiplier >= 1:
            raise UsageError(f"TransportRetry(multiplier={self.multiplier!r}): use a number >= 1")
        statuses = frozenset(self.retry_statuses)
        if not all(isinstance(s, int) and 100 <= s <= 599 for s in statuses):
            raise UsageError(
                f"TransportRetry(retry_statuses={self.retry_statuses!r}): use HTTP status codes"
            )
        object.__setattr__(self, "retry_statuses", statuses)

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based) when the server says nothing."""
        delay: float = self.initial_backoff * self.multiplier ** (attempt - 1)
        return min(self.max_delay, delay)

    def schedule(self) -> list[float]:
        """Every backoff wait, in order, when no server asks for one: ``[0.25, 0.5]``.

        The longest waits: each is shortened by up to ``jitter`` of it when drawn.
        """
        return [self.backoff(n) for n in range(1, self.max_attempts)]

    def next_delay(self, error: BaseException, attempt: int, uniform: float = 0.0) -> float | None:
        """The wait before repeating a request whose attempt ``attempt`` raised ``error``.

        None means: do not repeat it. ``uniform`` is the jitter draw in [0, 1] (0: the full
        backoff). A pure function of its arguments (and the wall time, for a
        ``Retry-After`` given as a date).
        """
        return self.decide(error, attempt, uniform)[0]

    def decide(
        self, error: BaseException, attempt: int, uniform: float = 0.0
    ) -> tuple[float | None, str]:
        """`next_delay`, with a note saying why when the answer is no, or why this wait."""
        retry_after: float | None = None
        if isinstance(error, ModelHTTPError):
            if isinstance(error, RateLimitError) and error.retry_after is not None:
                retry_after = error.retry_after
            else:
                retry_after = parse_retry_after(error.headers)
            marked = should_retry_header(error.headers)
            if marked is False:
                return None, "transport retry: not retried, the server said x-should-retry: false"
            if marked is None and error.status not in self.retry_statuses:
                return None, ""
        elif isinstance(error, ModelTransportError):
            if not is_transport_retryable(error.__cause__):
                return None, ""
        else:
            return None, ""
        if retry_after is not None and retry_after > self.max_delay:
            return None, (
                f"transport retry: not retried, the server asked to wait {retry_after:g}s, "
                f"more than max_delay={self.max_delay:g}s"
            )
        if attempt >= self.max_attempts:
            if self.max_attempts == 1:
                return None, ""
            return None, f"transport retry: gave up after {attempt} attempts"
        if retry_after is not None and retry_after > 0:
            return retry_after, f"Retry-After {retry_after:g}s"
        return self.backoff(attempt) * (1.0 - self.jitter * uniform), "backoff"


def should_retry_header(headers: dict[str, str]) -> bool | None:
    """The ``x-should-retry: true|false`` header the SDKs obey, or None."""
    flag = next((v for k, v in headers.items() if k.lower() == "x-should-retry"), "")
    value = flag.strip().lower()
    return {"true": True, "false": False}.get(value)


def coerce_transport_retry(value: TransportRetry | bool | None) -> TransportRetry | None:
    """``True`` -> the defaults; ``None`` / ``False`` -> no transport retry."""
    if value is True:
        return TransportRetry()
    if value is None or value is False:
        return None
    if isinstance(value, TransportRetry):
        return value
    raise UsageError(
        f"transport_retry={value!r}: pass a TransportRetry(...), True for the defaults, "
        "or False / None to disable it"
    )


def retry_delay(
    policy: TransportRetry | None, error: ModelError, attempt: int, request: ModelRequest, name: str
) -> float | None:
    """The wait before the next attempt after ``error``, or None: give up.

    A retry is recorded as a ``transport.retry`` event of the run; a give-up says why in a
    note on ``error``. Jitter is drawn from the run's seeded stream.
    """
    if policy is None:
        return None
    if request.jitter is None:  # outside a run: a stream of its own, seeded in tests
        request.jitter = jitter_rng().random
    delay, why = policy.decide(error, attempt, request.jitter())
    if delay is None:
        if why:
            error.add_note(why)
        return None
    status = error.status if isinstance(error, ModelHTTPError) else None
    failure = f"HTTP {status}" if status is not None else type(error.__cause__).__name__
    marked = should_retry_header(error.headers) if isinstance(error, ModelHTTPError) else None
    request.emit(
        "transport.retry",
        **({} if marked is None else {"should_retry": marked}),
        attempt=attempt,
        max_attempts=policy.max_attempts,
        delay=delay,
        status=status,
        error=ErrorRecord.from_exception(error),
        model=name,
        detail=(
            f"{name}: {failure}; waiting {delay:g}s ({why}) before attempt "
            f"{attempt + 1}/{policy.max_attempts}"
        ),
    )
    return delay
