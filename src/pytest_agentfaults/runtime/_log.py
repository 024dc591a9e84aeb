"""The package's logger, which keeps secrets out of its records (tracebacks included)."""

from __future__ import annotations

import logging

from pytest_agentfaults._redact import redact_text

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["logger"]


class _RedactingFilter(logging.Filter):
    """Keeps secrets out of this package's log records, tracebacks included."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_text(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(self._formatter.formatException(record.exc_info))
        return True


logger = logging.getLogger("pytest_agentfaults")
logger.addFilter(_RedactingFilter())
