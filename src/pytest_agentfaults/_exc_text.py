"""The text of an exception, even one whose ``__str__`` or ``__repr__`` raises.

Every message the package takes from an exception it did not make (a tool's, a model
client's, an SDK's) goes through `exception_text`: a trace event, an error record, the
text fed back to the model and a failure message must show such an exception, never
crash on it. Kept below the error taxonomy, which reads messages to classify them.
"""

from __future__ import annotations

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["exception_repr", "exception_text"]


def exception_text(exc: object) -> str:
    """``str(exc)``, or ``<Type: str() raised Problem>`` when that raises."""
    try:
        return str(exc)
    except Exception as problem:  # the exception's own __str__ is broken; say so
        return _stand_in(exc, "str", problem)


def exception_repr(exc: object) -> str:
    """``repr(exc)``, or ``<Type: repr() raised Problem>`` when that raises."""
    try:
        return repr(exc)
    except Exception as problem:
        return _stand_in(exc, "repr", problem)


def _stand_in(exc: object, how: str, problem: Exception) -> str:
    return f"<{type(exc).__name__}: {how}() raised {type(problem).__name__}>"
