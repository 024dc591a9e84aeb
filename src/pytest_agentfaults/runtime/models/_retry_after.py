"""Reading how long a server asks a client to wait: ``retry-after-ms`` and ``Retry-After``."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["parse_retry_after"]


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait in seconds a server asked for, or None.

    ``retry-after-ms`` (milliseconds, as OpenAI and Anthropic send) wins over
    ``Retry-After``, which may be seconds or an HTTP date (RFC 9110). A date in the past
    means 0; garbage and negative values mean None. ``now`` is the wall time (epoch
    seconds) a date is measured from, `time.time()` by default.

    ```python
    >>> parse_retry_after({"retry-after": "2"})
    2.0
    ```
    """
    millis = headers.get("retry-after-ms")
    if millis:
        seconds = _non_negative(millis)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _non_negative(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value
