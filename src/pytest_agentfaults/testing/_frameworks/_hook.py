"""Replacing one attribute of a framework (a class's method, a module's function) for a test.

What the anthropic and google-genai adapters do for each thing they hook: find the
framework's own attribute, wrap it (``make(original)``), mark the wrapper so an enclosing
session's is not wrapped again, and return the undo, which puts the original back unless
someone has patched over ours since (then the attribute stays theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from pytest_agentfaults.testing._frameworks import Unhookable
from pytest_agentfaults.testing._undo import raise_together, run_all

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["HOOKED", "Hook", "hook_all", "hook_attribute", "nothing"]

#: set on every wrapper an adapter installs: "hooked already"
HOOKED: Final = "__agentfaults_hook__"


def hook_attribute(
    owner: Any, name: str, make: Callable[[Any], Any], missing: str | None
) -> Callable[[], None]:
    """Replace ``owner``'s own ``name`` with ``make(original)``; returns the undo.

    ``missing``: the `Unhookable` message when ``owner`` has no ``name`` of its own (None:
    a refinement the adapter does without, so nothing is hooked).
    """
    original = vars(owner).get(name) if owner is not None else None
    if not callable(original):
        if missing is not None:
            raise Unhookable(missing)
        return nothing
    if getattr(original, HOOKED, False):
        return nothing  # hooked already (an enclosing session)
    hooked = make(original)
    setattr(hooked, HOOKED, True)
    hooked.__doc__ = original.__doc__
    hooked.__wrapped__ = original
    setattr(owner, name, hooked)

    def undo() -> None:
        if vars(owner).get(name) is hooked:
            setattr(owner, name, original)

    return undo


#: one hook to make: (owner, name, make, missing), as `hook_attribute` takes them
Hook = tuple[Any, str, Callable[[Any], Any], str | None]


def hook_all(hooks: Iterable[Hook], what: str) -> Callable[[], None]:
    """Make every hook of ``hooks``, all or none; returns the undo of all of them.

    ``hooks`` may be a generator, so that finding an owner fails inside (the hooks made by
    then are undone before the error goes on). ``what`` names them when undoing fails
    ("the anthropic hooks").
    """
    undos: list[Callable[[], None]] = []
    try:
        for owner, name, make, missing in hooks:
            undos.append(hook_attribute(owner, name, make, missing))
    except BaseException:
        raise_together(run_all(reversed(undos)), f"undoing {what} failed")
        raise

    def undo() -> None:
        steps, undos[:] = list(reversed(undos)), []
        raise_together(run_all(steps), f"undoing {what} failed")

    return undo


def nothing() -> None:
    """The undo of a hook not made."""
    return
