"""Redact what pytest shows of a test: its failure text and its captured output.

A test report is where every terminal line, ``-rA`` summary and junit XML record about a
test comes from: the traceback (with ``-l``, the locals of every frame), the chained
causes, the captured stdout, stderr and log records. The plugin passes each report through
`scrub_report` once, so a key in any of them (an SDK's log line with ``?key=``, a tool
error that quotes its arguments) is redacted at that one boundary.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pytest_agentfaults.runtime.redact import redact_text

__all__ = ["scrub_report"]


def scrub_report(report: Any) -> None:
    """Redact ``report``'s ``longrepr`` and ``sections`` in place."""
    longrepr = getattr(report, "longrepr", None)
    if longrepr is not None:
        report.longrepr = _scrub(longrepr, set())
    sections = getattr(report, "sections", None)
    if sections:
        report.sections = [(title, redact_text(text)) for title, text in sections]


def _scrub(value: Any, seen: set[int]) -> Any:
    """``value`` with every string in it redacted; pytest's repr objects are edited in place.

    pytest keeps a failure as dataclasses (``ExceptionChainRepr``, ``ReprEntry``,
    ``ReprLocals``, ``ReprFileLocation`` ...) holding strings, lists and tuples.
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [_scrub(item, seen) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub(item, seen) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if id(value) in seen:  # a chain shares its last traceback with the top level
            return value
        seen.add(id(value))
        for field in dataclasses.fields(value):
            current = getattr(value, field.name, None)
            cleaned = _scrub(current, seen)
            if cleaned is not current:
                object.__setattr__(value, field.name, cleaned)
    return value
