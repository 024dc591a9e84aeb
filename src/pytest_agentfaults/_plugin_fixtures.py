"""What the kit's fixtures hand a test, and handing it over without pytest's fixture machinery.

``trace``, ``faults`` and ``virtual_clock`` only read the test's state, which the plugin's
setup hook has just built: asking pytest for one of them costs a test as much again as the
plugin's whole setup (a session-scoped fixture too: pytest resolves it for every test that
names it). So the setup hook puts their values in ``item.funcargs`` itself, where pytest
looks first, when the fixture is ours (not a user's of the same name) and the session does
not show fixture setup (``--setup-show``, ``--setup-plan``). Asked for any other way
(another fixture, ``request.getfixturevalue``), the fixture gives the same object.

Light like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentfaults import _plugin_network as _network
from pytest_agentfaults._plugin_given import EXAMPLE
from pytest_agentfaults._plugin_state import STATE, Session, running_item, switch_on_late

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Trace
    from pytest_agentfaults.testing.session import TestState

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ENDED", "fill_kit_fixtures", "running_trace", "state_of", "trace_view"]

ENDED = pytest.StashKey[bool]()  # the test's kit is switched off for good

# The fixtures the setup hook fills in; asking for one means using the kit, so each test
# that names one has its state by then.
_DIRECT = frozenset(("trace", "faults", "virtual_clock"))
_OURS = "pytest_agentfaults._plugin_hooks"  # the module our fixtures are defined in


def state_of(item: pytest.Item) -> TestState:
    """The test's state for a kit fixture; switched on now if the test had none yet."""
    __tracebackhide__ = True
    state: TestState | None = item.stash.get(STATE, None)
    if state is None:  # asked for late (request.getfixturevalue): switch the kit on now
        state = switch_on_late(item)
        _network.start_network_late(item)
    state.declare()  # a kit fixture: the test uses the kit, if it did not say so before
    state.use_virtual_time()  # a kit fixture: the test's waits are virtual (not real_time)
    return state


def running_trace() -> Trace:
    """The trace of the test running in this context (what the ``trace`` view reads)."""
    __tracebackhide__ = True
    item = running_item("trace")
    if EXAMPLE in item.stash:  # a Hypothesis example runs: its own events (`_plugin_given`)
        return item.stash[EXAMPLE]
    state = item.stash.get(STATE, None)
    if state is None:  # the test asked for it late (request.getfixturevalue), or ended
        if item.stash.get(ENDED, False):
            from pytest_agentfaults.errors import UsageError  # noqa: PLC0415 - lazy, rare

            raise UsageError(
                f"the 'trace' fixture was read after {item.nodeid} ended: it shows the "
                "running test's events; keep what you need (list(trace.events)) in the test"
            )
        state = state_of(item)
    return state.trace


def trace_view(session: Session) -> Trace:
    """The session's ``trace``: one view whose every read goes to the running test's trace."""
    view: Trace | None = session.trace_view
    if view is None:
        from pytest_agentfaults.testing._trace_view import RunningTrace  # noqa: PLC0415 - the kit loads on first use

        view = session.trace_view = RunningTrace(running_trace)
    return view


def fill_kit_fixtures(item: pytest.Item, state: TestState, session: Session) -> None:
    """Put the values of our ``trace``, ``faults`` and ``virtual_clock`` in ``item.funcargs``.

    Each only where pytest would give the test our fixture's value (see the module docs);
    ``virtual_clock`` of a ``real_time`` test is left to the fixture, which says why there
    is none.
    """
    if not session.direct_fixtures:
        return
    funcargs: dict[str, Any] | None = getattr(item, "funcargs", None)
    info = getattr(item, "_fixtureinfo", None)
    if funcargs is None or info is None:
        return
    # Which of ours the item names, by its fixture info: a parametrized test's items share
    # one, so it is worked out once for them all.
    known = session.kit_fixtures.get(id(info))
    if known is None or known[0] is not info:
        known = (info, _ours(item, info))
        session.kit_fixtures[id(info)] = known
    for name in known[1]:
        if name in funcargs:
            continue
        if name == "trace":
            funcargs[name] = trace_view(session)
        elif name == "faults":
            funcargs[name] = state.plan
        elif not state.real_time:
            funcargs[name] = state.clock


def _ours(item: pytest.Item, info: Any) -> tuple[str, ...]:
    """Which of ``trace``, ``faults``, ``virtual_clock`` the item names, as our fixtures.

    Not a user's fixture of that name, nor a parametrized argument.
    """
    definitions = getattr(info, "name2fixturedefs", {})
    found = []
    for name in sorted(_DIRECT.intersection(getattr(item, "fixturenames", ()))):
        defined = definitions.get(name)
        if defined and getattr(defined[-1].func, "__module__", "") == _OURS:
            found.append(name)
    return tuple(found)
