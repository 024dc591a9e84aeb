"""`ModuleArrival`: run code the moment a module is first imported, while a test runs.

The kit replaces things in modules a test has imported: trio's ``trio.sleep`` (virtual
time), and the tool paths of the agent frameworks (the adapters). A module that is first
imported inside the test's body (``import trio``, an app that imports pydantic-ai lazily)
would otherwise run unreplaced for that one test, and pass or fail by the order tests
run in. A `ModuleArrival` is a ``sys.meta_path`` finder, there only while the test runs
and some watched module has not come: it finds nothing itself, hands the import system
the spec the other finders give, with a loader that runs the module's own and then calls
``arrived(module)``, before the ``import`` statement returns.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ModuleArrival"]


class ModuleArrival:
    """A ``sys.meta_path`` finder that calls ``arrived(module)`` as each watched name arrives.

    Names are full dotted names (``"trio"``, ``"google.genai"``). Every other name costs
    one set lookup; a module already imported never reaches a finder. `stop` takes it out
    of ``sys.meta_path``; it takes itself out once every watched name has arrived.
    """

    __slots__ = ("arrived", "names")

    def __init__(self, names: Iterable[str], arrived: Callable[[ModuleType], None]) -> None:
        self.names = set(names)
        self.arrived = arrived

    def start(self) -> None:
        """Watch the imports from now on (ahead of every other finder)."""
        sys.meta_path.insert(0, self)

    def stop(self) -> None:
        """Stop watching (a no-op when it is not watching)."""
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """The spec the other finders give for a watched name, its loader watched; else None."""
        if fullname not in self.names:
            return None
        finders: list[Any] = list(sys.meta_path)
        if self in finders:
            finders = finders[finders.index(self) + 1 :]
        for finder in finders:
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = None
            # another ModuleArrival (a scope's beside its test's) watches in turn: each
            # wraps the loader, and each sees the module arrive
            if find is not None and finder is not self:
                spec = find(fullname, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if hasattr(loader, "create_module") and hasattr(loader, "exec_module"):
                spec.loader = cast("Loader", _Watched(loader, self))
            return spec
        return None


class _Watched:
    """A module's own loader; once it has run the module, the module gets it back."""

    __slots__ = ("arrival", "loader")

    def __init__(self, loader: Any, arrival: ModuleArrival) -> None:
        self.loader = loader
        self.arrival = arrival

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        loader = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = loader  # nothing of the kit's stays on the module
        module.__loader__ = loader
        loader.exec_module(module)
        arrival = self.arrival
        arrival.names.discard(module.__name__)
        if not arrival.names:
            arrival.stop()
        arrival.arrived(module)

    def __getattr__(self, name: str) -> Any:  # the rest of the loader's API (get_source ...)
        return getattr(self.loader, name)
