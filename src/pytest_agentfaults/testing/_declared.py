"""A ``raises=`` fault's exception instance, raised again as it was declared.

One instance serves every attempt a fault hits, in every test under its marker (a
parametrized test, a module's ``pytestmark``). Each raise would leave on it what that
attempt added: frames on its traceback, notes (the app's, LangGraph's "During task ..."),
attributes, the error it was raised while handling; the next attempt's error, or the next
test's, would show them. `as_declared` takes them off before each raise, and the object
stays the one the test declared (``caught.value is error`` holds).
"""

from __future__ import annotations

from typing import Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["as_declared"]

#: Where a raises= instance keeps what it was before its first raise (see `as_declared`).
_DECLARED: Final = "_agentfaults_declared"


def as_declared(error: BaseException) -> BaseException:
    """``error`` as it was declared, for one more attempt to raise.

    What it was is kept on it, at its first raise here, so it lives as long as the instance.
    """
    attributes = error.__dict__
    declared = attributes.get(_DECLARED)
    if declared is None:
        kept = dict(attributes)
        if "__notes__" in kept:  # a list add_note appends to: keep a copy of its own
            kept["__notes__"] = list(kept["__notes__"])
        cause, context, suppress = error.__cause__, error.__context__, error.__suppress_context__
        attributes[_DECLARED] = (kept, cause, context, suppress)
    else:
        kept, cause, context, suppress = declared
        attributes.clear()
        attributes.update(kept)
        if "__notes__" in kept:
            attributes["__notes__"] = list(kept["__notes__"])
        attributes[_DECLARED] = declared
        error.__cause__, error.__context__ = cause, context
        error.__suppress_context__ = suppress
    return error.with_traceback(None)
