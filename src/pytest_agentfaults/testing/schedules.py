"""`check_schedule`: assert that a list of retry delays obeys a `ResilienceConfig`.

```python
config = af.ResilienceConfig(max_retries=3, strategy="exponential", base_delay=1.0)
af.check_schedule(config, config.schedule(seed=7))       # passes
af.check_schedule(config, [1.0, 2.0, 75.0])
# AssertionError: schedule violates 'cap': delay 3 (retry 3) is 75.0s > max_delay 60.0s
#   also violates 'exact': delay 3 (retry 3) is 75.0s, expected 4.0s for strategy ...
```

The invariants, each named in the error so a failing property test says which one broke:

- ``count``: exactly ``max_retries`` delays (at most that many with ``partial=True``);
- ``non-negative``: no delay is negative (or NaN);
- ``cap``: no delay exceeds ``max_delay``, jitter included;
- ``monotonic``: a deterministic strategy never waits less than the retry before;
- ``exact``: deterministic strategies give exactly ``fixed`` = base, ``linear`` = base·n,
  ``exponential`` = base·2^(n-1), ``none`` = 0, each capped at ``max_delay``;
- ``jitter``: ``exponential_jitter`` stays within [min(cap, e), min(cap, e·(1 + jitter))],
  where e = base·2^(n-1) and jitter is ``jitter_factor``.

The expected values are computed here from the documented formulas, not by the runtime's own
code, so the check is a real second opinion. This module imports neither pytest nor
hypothesis: it works in any test runner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.backoff import ResilienceConfig

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["SCHEDULE_INVARIANTS", "ScheduleViolation", "Violation", "check_schedule"]

SCHEDULE_INVARIANTS: Final = ("count", "non-negative", "cap", "monotonic", "exact", "jitter")
"""The names `check_schedule` reports, in the order it checks them."""

_DETERMINISTIC: Final = frozenset({"fixed", "linear", "exponential", "none"})


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: its name and a sentence saying where and how."""

    invariant: str
    message: str

    def __str__(self) -> str:
        return self.message


class ScheduleViolation(AssertionError):
    """A schedule broke at least one invariant; raised by `check_schedule`.

    An `AssertionError`, so it reads as a failed test in any runner. ``invariant`` names the
    first violation (one of `SCHEDULE_INVARIANTS`), ``violations`` lists them all.
    """

    def __init__(self, violations: Sequence[Violation], context: str) -> None:
        self.violations: tuple[Violation, ...] = tuple(violations)
        self.invariant: str = self.violations[0].invariant
        first, *rest = self.violations
        lines = [f"schedule violates {first.invariant!r}: {first.message}"]
        lines.extend(f"  also violates {v.invariant!r}: {v.message}" for v in rest)
        lines.append(context)
        super().__init__("\n".join(lines))


def check_schedule(
    config: ResilienceConfig,
    delays: Sequence[float],
    *,
    tolerance: float = 1e-9,
    partial: bool = False,
) -> None:
    """Assert that ``delays`` (the waits before retries 1, 2, ...) obey ``config``.

    Raises `ScheduleViolation` (an `AssertionError`) naming every violated invariant: count,
    non-negative, cap, monotonic and exact (deterministic strategies), jitter (bounds of
    ``exponential_jitter``). ``tolerance`` is the relative and absolute slack allowed for
    float noise (delays measured on a clock, say). ``partial=True`` accepts a prefix of the
    schedule: the delays of a call that recovered before its retries ran out.

    ```python
    af.check_schedule(config, config.schedule(seed=1))
    af.check_schedule(config, result.trace.delays("fetch"), partial=True)
    ```
    """
    __tracebackhide__ = True
    if not isinstance(config, ResilienceConfig):
        raise UsageError(
            f"check_schedule() takes an af.ResilienceConfig first, got {type(config).__name__}"
        )
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or tolerance < 0:
        raise UsageError(f"check_schedule(tolerance={tolerance!r}): give a number >= 0")
    values = list(delays)
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(
                f"check_schedule(): delay {index + 1} is {value!r}; delays are numbers of seconds"
            )
    found = _violations(config, [float(v) for v in values], tolerance, partial)
    if found:
        raise ScheduleViolation(found, _context(config, values))


# --------------------------------------------------------------------------- internals


def _violations(
    config: ResilienceConfig, delays: list[float], tolerance: float, partial: bool
) -> list[Violation]:
    found: list[Violation] = []
    wanted = config.max_retries
    if len(delays) > wanted or (not partial and len(delays) != wanted):
        relation = "at most " if partial else ""
        found.append(
            Violation(
                "count",
                f"{len(delays)} delays for max_retries={wanted} "
                f"(expected {relation}{wanted}: one delay before each retry)",
            )
        )
    cap = config.max_delay
    for retry, delay in enumerate(delays, start=1):
        if not delay >= 0:  # catches NaN too
            found.append(Violation("non-negative", f"delay {retry} (retry {retry}) is {delay!r}s"))
    for retry, delay in enumerate(delays, start=1):
        if delay > cap and not _close(delay, cap, tolerance):
            found.append(
                Violation(
                    "cap",
                    f"delay {retry} (retry {retry}) is {delay!r}s > max_delay {cap!r}s",
                )
            )
    strategy = config.strategy
    if strategy in _DETERMINISTIC:
        for retry in range(2, len(delays) + 1):
            before, delay = delays[retry - 2], delays[retry - 1]
            if delay < before and not _close(delay, before, tolerance):
                found.append(
                    Violation(
                        "monotonic",
                        f"delay {retry} (retry {retry}) is {delay!r}s < delay {retry - 1} "
                        f"{before!r}s, but strategy {strategy!r} never shortens the wait",
                    )
                )
        for retry, delay in enumerate(delays, start=1):
            expected = _expected(config, retry)
            if not _close(delay, expected, tolerance):
                found.append(
                    Violation(
                        "exact",
                        f"delay {retry} (retry {retry}) is {delay!r}s, expected {expected!r}s "
                        f"for strategy {strategy!r} (base_delay {config.base_delay!r}s, "
                        f"max_delay {cap!r}s)",
                    )
                )
    else:
        for retry, delay in enumerate(delays, start=1):
            low, high = _jitter_band(config, retry)
            too_low = delay < low and not _close(delay, low, tolerance)
            too_high = delay > high and not _close(delay, high, tolerance)
            if too_low or too_high:
                found.append(
                    Violation(
                        "jitter",
                        f"delay {retry} (retry {retry}) is {delay!r}s, outside "
                        f"[{low!r}s, {high!r}s] (base_delay·2^{retry - 1} with jitter_factor "
                        f"{config.jitter_factor!r}, capped at max_delay {cap!r}s)",
                    )
                )
    return found


def _exponential(base: float, retry: int) -> float:
    """``base * 2 ** (retry - 1)``, saturating at infinity instead of overflowing."""
    if base == 0:
        return 0.0
    try:
        return math.ldexp(base, retry - 1)
    except OverflowError:
        return math.inf


def _expected(config: ResilienceConfig, retry: int) -> float:
    strategy, base = config.strategy, config.base_delay
    if strategy == "none":
        return 0.0
    if strategy == "fixed":
        raw = base
    elif strategy == "linear":
        raw = base * retry
    else:
        raw = _exponential(base, retry)
    return min(config.max_delay, raw)


def _jitter_band(config: ResilienceConfig, retry: int) -> tuple[float, float]:
    exponential = _exponential(config.base_delay, retry)
    cap = config.max_delay
    return min(cap, exponential), min(cap, exponential * (1.0 + config.jitter_factor))


def _close(value: float, target: float, tolerance: float) -> bool:
    if value == target:
        return True
    return math.isclose(value, target, rel_tol=tolerance, abs_tol=tolerance)


def _context(config: ResilienceConfig, delays: list[float]) -> str:
    shown = ", ".join(repr(d) for d in delays)
    return (
        f"  config: strategy={config.strategy!r}, max_retries={config.max_retries}, "
        f"base_delay={config.base_delay!r}, max_delay={config.max_delay!r}, "
        f"jitter_factor={config.jitter_factor!r}\n"
        f"  delays: [{shown}]"
    )
