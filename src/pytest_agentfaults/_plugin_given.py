"""A Hypothesis test with ``inject_fault`` markers: warn unless it makes a kit per example.

A marker's faults belong to the test, not to each example of a ``@given`` test: its
``times=`` budget is spent by the first examples, the others run without the fault, and
the trace adds every example up. A test whose body enters ``af.fault_scope()`` has a
fresh kit per example (the markers are then its deliberate outer faults); any other gets
`HypothesisMarkerWarning` after its call, naming the markers and that fix.

Light, like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

import sys
from collections.abc import Generator

import pytest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "GIVEN",
    "AgentFaultsWarning",
    "HypothesisMarkerWarning",
    "pytest_runtest_call",
    "watch_given",
]

#: set by the plugin's setup on a ``@given`` test with ``inject_fault`` markers
GIVEN = pytest.StashKey[bool]()


class AgentFaultsWarning(pytest.PytestWarning):
    """A warning of pytest-agentfaults: something in a test is likely not what it seems."""


class HypothesisMarkerWarning(AgentFaultsWarning):
    """An ``inject_fault`` marker on a Hypothesis (``@given``) test that has no fault_scope.

    The marker's budget is the test's, not each example's: add the fault per example with
    ``af.fault_scope()`` instead.
    """


def watch_given(config: pytest.Config) -> None:
    """Register this module's call hook, once a session: on its first ``@given`` test.

    Not at start-up: the hook would wrap every test's call, and such tests are rare.
    Registered during that test's setup, it wraps that test's call already.
    """
    if not config.pluginmanager.has_plugin(__name__):
        # by hand: import_plugin() would mark this loaded module for assertion rewriting,
        # and warn that it cannot (`_plugin_unrewritten`)
        config.pluginmanager.register(sys.modules[__name__], __name__)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Count the test's `fault_scope` blocks; none after a passing call: warn."""
    if GIVEN not in item.stash:
        return (yield)
    from pytest_agentfaults.testing.scope import ENTERED  # noqa: PLC0415 - kit loaded

    entered = [0]
    token = ENTERED.set(entered)
    try:
        result = yield
    finally:
        ENTERED.reset(token)
    if not entered[0]:
        item.warn(HypothesisMarkerWarning(_message(item)))
    return result


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
        "the first examples, the others run without the fault, and the trace adds every "
        "example up. Add the fault in the body, per example: with af.fault_scope() as "
        "scope: scope.faults.tool(...).raises(...).times(1), and read scope.trace."
    )
