"""The kit's patches of one name, undone in any order without one reviving another.

A name the kit patches twice in a test holds a stack of its wrappers: a ``function=``
fault on ``time:sleep``, which virtual time patches too, or on a client's
``_send_single_request``, which the HTTP layer patches. Each undo puts back what its
wrapper replaced only while that wrapper is the one in place (else it would throw away
whatever was put on top). A wrapper found covered is *retired* instead: it passes every
call straight through from then on, and whoever puts it back later puts back what it had
replaced (`live`). So the stack unwinds to the original whatever order the undos run in.

Standard library only: the runtime's virtual time and the test kit's patches share it.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["live", "replaced", "retire", "retired"]

_REPLACED: Final = "__agentfaults_replaced__"
_RETIRED: Final = "__agentfaults_retired__"

_W = TypeVar("_W")


def replaced(wrapper: _W, original: Any) -> _W:
    """Mark ``wrapper`` as the kit's, put in place of ``original``; returns ``wrapper``.

    Not retired, whatever `functools.wraps` copied from ``original``'s attributes.
    """
    setattr(wrapper, _REPLACED, original)
    setattr(wrapper, _RETIRED, False)
    return wrapper


def retire(wrapper: Any) -> None:
    """Retire a covered ``wrapper``: it is no longer the kit's patch (see the module docs)."""
    setattr(wrapper, _RETIRED, True)


def retired(wrapper: Any) -> bool:
    """Whether ``wrapper`` was retired (its calls pass straight through)."""
    return getattr(wrapper, _RETIRED, False) is True


def live(value: Any) -> Any:
    """What putting ``value`` back should put back: past every retired wrapper of the kit."""
    while getattr(value, _RETIRED, False) is True:
        value = getattr(value, _REPLACED)
    return value
