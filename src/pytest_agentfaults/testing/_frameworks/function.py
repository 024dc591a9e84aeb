"""``function="pkg.module:attr"``: a fault on a plain callable, named by its import path.

The path's attribute is replaced for the test, as ``unittest.mock.patch`` would replace
it, by a wrapper that runs each call through `run_attempt` (``framework="function"``);
the undo puts the original back. Like ``mock.patch``, it replaces the name where the path
says: code that did ``from pkg.module import attr`` before the test keeps its own
reference, so name the module where the caller looks the function up.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any, Final

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults._patches import live, replaced, retire
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._frameworks._core import arun_attempt, run_attempt

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORK", "check_path", "patch_function"]

FRAMEWORK: Final = "function"
_WRAPPED: Final = "__agentfaults_function__"


def check_path(path: object, where: str) -> str:
    """``path`` if it has the ``"pkg.module:attr"`` form, else a `UsageError`."""
    __tracebackhide__ = True
    if not isinstance(path, str) or path.count(":") != 1:
        raise UsageError(
            f"{where}: function= takes an import path 'pkg.module:attr' "
            f"(e.g. 'myapp.tools:search'), got {path!r}"
        )
    module, attr = path.split(":")
    names = [*module.split("."), *attr.split(".")]
    if not all(name.isidentifier() for name in names):
        raise UsageError(
            f"{where}: {path!r} is not an import path 'pkg.module:attr' "
            "(dotted names, one ':' between the module and the attribute)"
        )
    return path


def patch_function(path: str, where: str) -> Callable[[], None]:
    """Replace the callable ``path`` names with one that goes through the fault plan.

    Returns the undo. A path already patched (by an enclosing plan) is left as it is and
    the undo does nothing: one call is one attempt, however many plans watch it.
    """
    __tracebackhide__ = True
    owner, attr, original = _resolve(path, where)
    raw = inspect.getattr_static(owner, attr)
    if getattr(original, _WRAPPED, None) is not None:
        return _nothing
    on = [True]  # the wrapper's switch: off once retired, its calls pass straight through
    if isinstance(raw, staticmethod):
        replacement: Any = staticmethod(_wrap(path, original, on))
    elif isinstance(raw, classmethod):
        replacement = classmethod(_wrap(path, raw.__func__, on))
    else:
        replacement = _wrap(path, original, on)
    had_own = attr in vars(owner)
    setattr(owner, attr, replaced(replacement, raw))

    def undo() -> None:
        if vars(owner).get(attr) is not replacement:
            # covered since (a patch of the test's own, or another of the kit's): leave it,
            # and retire ours, so whoever puts ours back puts back what it replaced
            on[0] = False
            retire(replacement)
            return
        if had_own:
            setattr(owner, attr, live(raw))
        else:  # it was inherited: take ours away and the inherited one shows again
            delattr(owner, attr)

    return undo


def _nothing() -> None:
    return None


def _resolve(path: str, where: str) -> tuple[Any, str, Callable[..., Any]]:
    """The object holding the attribute, its name, and the callable it holds now."""
    __tracebackhide__ = True
    module_name, attr_path = check_path(path, where).split(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError as exc:
        error = UsageError(
            f"{where}: cannot import module {module_name!r} ({exc}); check the part of "
            f"{path!r} before the ':'"
        )
        # A module that is not there: the message says it all, importlib's frames are
        # noise. A module that failed while importing: its own frames are the user's code.
        missing = isinstance(exc, ModuleNotFoundError) and (
            exc.name is not None and (module_name + ".").startswith(exc.name + ".")
        )
        raise error from (None if missing else exc)
    *parents, attr = attr_path.split(".")
    for name in parents:
        try:
            owner = getattr(owner, name)
        except AttributeError:
            raise UsageError(
                f"{where}: module {module_name!r} has no attribute path {attr_path!r}"
            ) from None
    try:
        target = getattr(owner, attr)
    except AttributeError:
        close = difflib.get_close_matches(attr, dir(owner), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(
            f"{where}: {'.'.join([module_name, *parents])!r} has no attribute {attr!r}{hint}"
        ) from None
    if not callable(target):
        raise UsageError(
            f"{where}: {path!r} is {type(target).__name__}, not a function; name a callable"
        )
    return owner, attr, target


def _failure(failure: ToolFailure) -> ToolFailure:
    # A plain function has no failure protocol of its own: the caller gets the value.
    return failure


def _wrap(path: str, original: Callable[..., Any], on: list[bool]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            if not on[0]:
                return await original(*args, **kwargs)
            return await arun_attempt(
                FRAMEWORK,
                path,
                _arguments(original, args, kwargs),
                lambda: original(*args, **kwargs),
                _failure,
            )

        setattr(acall, _WRAPPED, original)
        return acall

    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if not on[0]:
            return original(*args, **kwargs)
        return run_attempt(
            FRAMEWORK,
            path,
            _arguments(original, args, kwargs),
            lambda: original(*args, **kwargs),
            _failure,
        )

    setattr(call, _WRAPPED, original)
    return call


def _arguments(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name, for the ``tool.call`` event."""
    try:
        bound = inspect.signature(function).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
    bound.arguments.pop("self", None)
    bound.arguments.pop("cls", None)
    return dict(bound.arguments)
