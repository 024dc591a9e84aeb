"""respx's routes for ``http_faults``, without the ~15 us each of their ``unittest.mock`` part.

A respx ``CallList`` (``route.calls``, ``router.calls``) is a list and a
``unittest.mock.NonCallableMock``; building the mock (a new class per instance, a spec
scan) is what makes a router and a route cost ~100 us, more than the rest of a fault test
besides the SDK. `Calls` is the same list whose mock part is made on first use: a test
that reads ``route.calls``, ``.call_count``, ``.last`` or iterates never pays for it, and
one that calls a mock method (``route.calls.assert_called_once()``) gets the full mock,
with its own class, exactly as respx builds it.

`LightRoute` is a respx ``Route`` (same class hierarchy, same API) whose call lists are
`Calls` and whose pattern, parsed from the same arguments, is reused between tests
(respx's patterns are values: routes compare by pattern, and a router without a base URL
never changes one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Self
from unittest import mock

from respx.models import CallList, Route
from respx.patterns import M

__all__ = ["Calls", "LightRoute", "route_pattern"]

_NonCallableMock: Any = mock.NonCallableMock
_MOCK_CLASS: Any = mock.NonCallableMock.__dict__["__class__"]  # the mock's property
_SET_CLASS: Any = object.__dict__["__class__"].__set__  # past our property, as a plain object


class Calls(CallList):
    """respx's ``CallList``, its ``NonCallableMock`` part made on first use."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:  # noqa: ARG004
        # NonCallableMock.__new__ makes a class per instance: deferred to `_become_mock`
        return list.__new__(cls)

    def __init__(self, *args: Any, name: Any = "respx") -> None:
        list.__init__(self, *args)
        self.__dict__["_agentfaults_name"] = name

    @property  # type: ignore[misc]
    def __class__(self) -> Any:  # isinstance() asks it, as a mock's does
        if "_mock_children" not in self.__dict__:
            return type(self)
        return _MOCK_CLASS.fget(self)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        if "_mock_children" in state or "_agentfaults_becoming" in state:
            return _NonCallableMock.__getattr__(self, name)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # as a mock without a spec answers
        self._become_mock()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_mock_children" not in self.__dict__:
            self._become_mock()
        _NonCallableMock.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if "_mock_children" not in self.__dict__:
            self._become_mock()
        _NonCallableMock.__delattr__(self, name)

    def _become_mock(self) -> None:
        """Build the mock part as ``CallList(name=...)`` would have, in its own class."""
        state = self.__dict__
        state["_agentfaults_becoming"] = True
        try:
            cls = type(self)
            _SET_CLASS(self, type(cls.__name__, (cls,), {"__doc__": cls.__doc__}))
            _NonCallableMock.__init__(self, name=state["_agentfaults_name"])
        finally:
            del state["_agentfaults_becoming"]


# (patterns, lookups) -> the parsed pattern: respx's patterns are values, never changed by
# a router without a base URL (the http_faults router has none)
_patterns: dict[Any, Any] = {}


def route_pattern(patterns: tuple[Any, ...], lookups: dict[str, Any]) -> Any:
    """``respx.patterns.M(*patterns, **lookups)``, parsed once per distinct arguments."""
    try:
        key = (patterns, tuple(lookups.items()))
        hash(key)
    except TypeError:  # an unhashable lookup value (a dict of params ...): not kept
        return M(*patterns, **lookups)
    found = _patterns.get(key)
    if found is None:
        found = M(*patterns, **lookups)
        if len(_patterns) < 1024:  # a session's distinct routes; bounded all the same
            _patterns[key] = found
    return found


class LightRoute(Route):
    """A respx ``Route`` with `Calls` for call lists and a reused pattern."""

    def __init__(self, *patterns: Any, **lookups: Any) -> None:
        # what Route.__init__ sets, with the two costly parts made cheap
        self._pattern = route_pattern(patterns, lookups)
        self._return_value = None
        self._side_effect = None
        self._pass_through = False
        self._name = None
        self._snapshots: list[tuple[Any, ...]] = []
        self.calls = Calls(name=self)
        self.snapshot()

    def snapshot(self) -> None:
        """As respx's, keeping the calls in a `Calls`."""
        side_effect = self._side_effect
        if isinstance(side_effect, Iterator):
            side_effects = tuple(side_effect)
            self._side_effect = iter(side_effects)
            side_effect = iter(side_effects)
        self._snapshots.append(
            (
                self._pattern,
                self._name,
                self._return_value,
                side_effect,
                self._pass_through,
                Calls(self.calls, name=self),
            )
        )
