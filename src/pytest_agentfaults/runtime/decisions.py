"""What to do when a model call fails: `LlmErrorDecision`, returned by ``on_llm_error``.

```python
def on_llm_error(exc: Exception, attempt: int) -> af.LlmErrorDecision:
    if isinstance(exc, af.ModelTimeoutError | af.MalformedResponseError):
        return af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=0.5)
    return af.LlmErrorDecision.rethrow()
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pytest_agentfaults.errors import ModelHTTPError, RateLimitError, UsageError
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LlmErrorDecision"]


@dataclass(frozen=True, slots=True)
class LlmErrorDecision:
    """One decision about one failed model call; build it with the class methods."""

    action: Literal["retry", "respond_with", "rethrow"]
    max_attempts: int = 1
    initial_backoff: float = 0.0
    output: Any = None
    max_backoff: float = 60.0
    respect_retry_after: bool = True
    max_retry_after: float | None = 300.0

    @classmethod
    def retry(
        cls,
        max_attempts: int = 3,
        initial_backoff: float = 0.5,
        *,
        max_backoff: float = 60.0,
        respect_retry_after: bool = True,
        max_retry_after: float | None = 300.0,
    ) -> LlmErrorDecision:
        """Call the model again.

        ``max_attempts`` counts the original call; the wait before attempt k+1 is
        ``initial_backoff * 2 ** (k - 1)``, capped at ``max_backoff`` (60 s). After a
        `RateLimitError` with a ``retry_after``, the wait is at least that long (the server
        refuses an earlier retry), unless ``respect_retry_after=False``; so is a
        ``Retry-After`` header on any other error status (a 503, say). A server asking for
        more than ``max_retry_after`` seconds (300; None: no limit) is not waited out: the
        error propagates as with `rethrow` (to the fallback model, if there is one).
        """
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise UsageError(
                f"LlmErrorDecision.retry(max_attempts={max_attempts!r}): give an int >= 1 "
                "(it counts the original call)"
            )
        _check_seconds("initial_backoff", initial_backoff)
        _check_seconds("max_backoff", max_backoff)
        if max_retry_after is not None:
            _check_seconds("max_retry_after", max_retry_after)
        return cls(
            "retry",
            max_attempts,
            float(initial_backoff),
            max_backoff=float(max_backoff),
            respect_retry_after=bool(respect_retry_after),
            max_retry_after=None if max_retry_after is None else float(max_retry_after),
        )

    @classmethod
    def respond_with(cls, output: Any) -> LlmErrorDecision:
        """Use ``output`` as the model's answer for this turn.

        It must fit the agent's ``output_type``: a str for the default, else a value that
        validates (an instance, a dict, or its JSON text); anything else is a `UsageError`
        at once, not another model call.
        """
        return cls("respond_with", output=output)

    @classmethod
    def rethrow(cls) -> LlmErrorDecision:
        """Let the original exception propagate (the default)."""
        return cls("rethrow")

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based), when the server says nothing."""
        exponent = min(attempt - 1, 64)  # past 2**64 every wait is the cap anyway
        return min(self.max_backoff, self.initial_backoff * 2.0**exponent)

    def delay(self, attempt: int, error: BaseException) -> float | None:
        """The wait before retrying after ``error`` ended attempt ``attempt``.

        None when the server asks for a longer wait than ``max_retry_after``: no retry.
        """
        wait = self.backoff(attempt)
        if not self.respect_retry_after:
            return wait
        retry_after = _retry_after(error)
        if retry_after is None:
            return wait
        if self.max_retry_after is not None and retry_after > self.max_retry_after:
            return None
        return max(wait, retry_after)


def _retry_after(error: BaseException) -> float | None:
    """The wait the server asked for: a 429's ``retry_after``, or any error status's header."""
    if isinstance(error, RateLimitError) and error.retry_after is not None:
        return error.retry_after
    if isinstance(error, ModelHTTPError) and error.headers:
        return parse_retry_after(error.headers)
    return None


def _check_seconds(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise UsageError(
            f"LlmErrorDecision.retry({name}={value!r}): must be a finite number of seconds >= 0"
        )
