"""What to do when a model call fails: `LlmErrorDecision`, returned by ``on_llm_error``.

```python
def on_llm_error(exc: Exception, attempt: int) -> af.LlmErrorDecision:
    if isinstance(exc, af.RateLimitError):
        return af.LlmErrorDecision.retry(max_attempts=3, initial_backoff=0.5)
    return af.LlmErrorDecision.rethrow()
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pytest_agentfaults.errors import UsageError

__all__ = ["LlmErrorDecision"]


@dataclass(frozen=True, slots=True)
class LlmErrorDecision:
    """One decision about one failed model call; build it with the class methods."""

    action: Literal["retry", "respond_with", "rethrow"]
    max_attempts: int = 1
    initial_backoff: float = 0.0
    output: Any = None

    @classmethod
    def retry(cls, max_attempts: int = 3, initial_backoff: float = 0.5) -> LlmErrorDecision:
        """Call the model again.

        ``max_attempts`` counts the original call; the wait before attempt k+1 is
        ``initial_backoff * 2 ** (k - 1)``.
        """
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise UsageError(
                f"LlmErrorDecision.retry(max_attempts={max_attempts!r}): give an int >= 1 "
                "(it counts the original call)"
            )
        if not math.isfinite(initial_backoff) or initial_backoff < 0:
            raise UsageError(
                f"LlmErrorDecision.retry(initial_backoff={initial_backoff!r}): must be a finite "
                "number of seconds >= 0"
            )
        return cls("retry", max_attempts, float(initial_backoff))

    @classmethod
    def respond_with(cls, output: Any) -> LlmErrorDecision:
        """Use ``output`` as the model's answer for this turn."""
        return cls("respond_with", output=output)

    @classmethod
    def rethrow(cls) -> LlmErrorDecision:
        """Let the original exception propagate (the default)."""
        return cls("rethrow")

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based)."""
        return self.initial_backoff * 2.0 ** (attempt - 1)
