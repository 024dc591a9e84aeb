"""A Hypothesis (``@given``) test: its trace read per example, its markers warned about.

* The ``trace`` fixture is session-scoped, so Hypothesis' health check for function-scoped
  fixtures lets a ``@given`` test name it; while an example runs, it reads that example's
  events (`EXAMPLE`), as each example is a test of its own to the user. The test's own
  trace (its report, its trace file) still holds every example's. (Not in a test that
  shares the kit's function-scoped state with every example, `_SHARED`.)
* A marker's faults belong to the test, not to each example: its ``times=`` budget is
  spent by the first examples and the others run without the fault. A test whose body
  enters ``af.fault_scope()`` has a fresh kit per example (the markers are then its
  deliberate outer faults); any other gets `HypothesisMarkerWarning` after its call,
  naming the markers and that fix.

Light, like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Trace

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "EXAMPLE",
    "GIVEN",
    "AgentFaultsWarning",
    "HypothesisMarkerWarning",
    "pytest_runtest_call",
    "watch_given",
]

#: set by the plugin's setup on a ``@given`` test with ``inject_fault`` markers
GIVEN = pytest.StashKey[bool]()
#: set by the plugin's setup on a ``@given`` test with the kit's state whose trace is
#: read per example
_EXAMPLES = pytest.StashKey[bool]()
#: The kit's function-scoped fixtures holding the test's state: a ``@given`` test taking
#: one has told Hypothesis' health check that its examples share it (it fails otherwise),
#: and its trace is shared with them, so the plan's fired faults and the clock's waits
#: still match the trace.
_SHARED = frozenset(("faults", "virtual_clock", "http_faults", "llm_server"))
#: the running example's trace, while one runs (what the ``trace`` fixture reads then)
EXAMPLE: pytest.StashKey[Trace] = pytest.StashKey()


class AgentFaultsWarning(pytest.PytestWarning):
    """A warning of pytest-agentfaults: something in a test is likely not what it seems."""


class HypothesisMarkerWarning(AgentFaultsWarning):
    """An ``inject_fault`` marker on a Hypothesis (``@given``) test that has no fault_scope.

    The marker's budget is the test's, not each example's: add the fault per example with
    ``af.fault_scope()`` instead.
    """


def watch_given(item: pytest.Item, *, marked: bool) -> None:
    """Watch ``item``'s call, a ``@given`` test's: ``marked``, it has ``inject_fault``.

    This module's call hook is registered once a session, on its first ``@given`` test:
    not at start-up, where it would wrap every test's call, and such tests are rare.
    Registered during that test's setup, it wraps that test's call already.
    """
    if _SHARED.isdisjoint(getattr(item, "fixturenames", ())):
        item.stash[_EXAMPLES] = True
    if marked:
        item.stash[GIVEN] = True  # warned after its call, unless it used fault_scope
    config = item.config
    if not config.pluginmanager.has_plugin(__name__):
        # by hand: import_plugin() would mark this loaded module for assertion rewriting,
        # and warn that it cannot (`_plugin_unrewritten`)
        config.pluginmanager.register(sys.modules[__name__], __name__)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Give each example its trace; count the `fault_scope` blocks: none, marked: warn."""
    stash = item.stash
    if _EXAMPLES not in stash:
        return (yield)
    undo = _trace_per_example(item)
    if GIVEN not in stash:
        try:
            return (yield)
        finally:
            undo()
    from pytest_agentfaults.testing.scope import ENTERED  # noqa: PLC0415 - kit loaded

    entered = [0]
    token = ENTERED.set(entered)
    try:
        result = yield
    finally:
        ENTERED.reset(token)
        undo()
    if not entered[0]:
        item.warn(HypothesisMarkerWarning(_message(item)))
    return result


def _trace_per_example(item: pytest.Item) -> Callable[[], None]:
    """Run each example of ``item`` collecting its own trace too (`EXAMPLE`); the undo.

    Through ``inner_test``, which Hypothesis lets plugins wrap (one that runs examples of
    an async test on its loop wraps it too: an async one is left alone).
    """
    handle: Any = getattr(getattr(item, "obj", None), "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    if inner is None or inspect.iscoroutinefunction(inner):
        return _nothing
    from pytest_agentfaults.runtime._recorder import collecting  # noqa: PLC0415 - kit loaded
    from pytest_agentfaults.runtime.events import Trace  # noqa: PLC0415

    stash = item.stash

    @functools.wraps(inner)  # Hypothesis names the failing example after it
    def example(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        trace = stash[EXAMPLE] = Trace()
        try:
            with collecting(trace):  # and into the test's trace, as before
                return inner(*args, **kwargs)
        finally:
            del stash[EXAMPLE]

    handle.inner_test = example
    return lambda: setattr(handle, "inner_test", inner)


def _nothing() -> None:
    return None


def _message(item: pytest.Item) -> str:
    marks = []
    for mark in reversed(list(item.iter_markers("inject_fault"))):
        arguments = [repr(a) for a in mark.args]
        arguments += [f"{k}={v!r}" for k, v in mark.kwargs.items()]
        if "times" not in mark.kwargs:
            arguments.append("times=1")  # the default budget
        marks.append(f"@pytest.mark.inject_fault({', '.join(arguments)})")
    return (
        f"{item.nodeid} is a Hypothesis test (@given) with {', '.join(marks)}: a marker's "
        "faults belong to the test, not to each example, so its times= budget is spent by "
        "the first examples and the others run without the fault. Add the fault in the "
        "body, per example: with af.fault_scope() as scope: "
        "scope.faults.tool(...).raises(...).times(1), and read scope.trace."
    )
