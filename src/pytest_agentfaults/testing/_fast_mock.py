"""Start respx's mockers in microseconds: the patches of ``Mocker.start``, set directly.

respx's ``Mocker.start`` patches each of its targets (httpcore's and httpcore2's pools,
connections and proxies) with ``unittest.mock.patch``, which resolves every dotted name
through the import system: about 2 ms for the two mockers, paid by every test that uses
``http_faults``, more than the rest of a fault test. `start_mocker` installs the very
same wrappers (``Mocker.mock(original)``, built once per original and reused) with
``setattr``, as patch objects respx's own ``Mocker.stop`` undoes.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from respx.mocks import Mocker

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["patch_below", "start_mocker"]


class _Patched:
    """One attribute set on a class, undone by `stop` (what ``mock.patch`` would undo)."""

    __slots__ = ("local", "name", "new", "original", "owner")

    def __init__(self, owner: type, name: str, new: Any) -> None:
        self.owner = owner
        self.name = name
        self.new = new
        self.local = name in owner.__dict__
        self.original = owner.__dict__.get(name)
        setattr(owner, name, new)

    def stop(self) -> None:
        # Ours no longer there: whoever replaced it (the test's monkeypatch, undone before
        # the kit switches off) has put back what it found; restoring what *we* found (the
        # test's own patch) would revive it for every later test.
        if self.owner.__dict__.get(self.name) is not self.new:
            return
        if self.local:
            setattr(self.owner, self.name, self.original)
        else:
            delattr(self.owner, self.name)


# (mocker, target, method) -> (the original function, respx's wrapper of it): a memo
# of pure values, rebuilt whenever the original differs
_wrappers: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def start_mocker(mocker: type[Mocker]) -> None:
    """Patch ``mocker``'s targets as ``mocker.start()`` does, unless already patched."""
    if mocker._patches:
        return
    for target in mocker.targets:
        owner = _resolve(target)
        if owner is None:
            continue
        for method in mocker.target_methods:
            original = getattr(owner, method, None)
            if original is None:
                continue
            key = (mocker.name, target, method)
            cached = _wrappers.get(key)
            if cached is None or cached[0] is not original:
                cached = _wrappers[key] = (original, mocker.mock(original))  # type: ignore[no-untyped-call]
            mocker._patches.append(_Patched(owner, method, cached[1]))  # type: ignore[arg-type]


def patch_below(mocker: type[Mocker]) -> None:
    """Patch ``mocker`` (a library's respx mocker) if a router is registered there.

    The HTTP layer calls it before a request goes on to the client's transport, so the
    routes answer below. Routers patch on demand, not when made: a request the layer lets
    through is the only way into the pool a router's test has (`Routed` answers the
    others), and most tests never send one, so they skip the ~20 us of patching and
    unpatching.
    """
    if mocker.routers and not mocker._patches:  # respx's patch list
        start_mocker(mocker)


def _resolve(target: str) -> Any:
    module_name, _, name = target.rpartition(".")
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            return None
    return getattr(module, name, None)
