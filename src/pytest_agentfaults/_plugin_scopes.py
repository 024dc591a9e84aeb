"""Fixtures wider than the function run outside the running test: its time, guard, faults.

A session, package, module or class fixture belongs to no one test: the test that
happens to set it up (or tear it down) is chosen by the order of the run. So while such a
fixture's setup or teardown runs, the running test's virtual sleeps and network guard
stand aside (`Pause`): its readiness wait really waits, is not recorded on that test's
clock, and its requests go out as in a plain test. The test sits out in that context too
(`testing._current.sit_out`): its faults do not fire in the fixture's smoke run of an
agent, nor do the run's events reach its trace. A function-scoped fixture of a kit test is
the test's own, and stays on its virtual clock, with its faults.

The pause is kept on the test's own objects (its `ThreadTime` patches and its
`NetworkGuard`, both in the item's stash) and in context variables: nothing process-wide.
Light, like ``plugin.py``: the standard library and pytest only; the kit's part is
reached through ``sys.modules``, once the kit is loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator
from functools import partial
from typing import Any

import pytest

from pytest_agentfaults._plugin_network import GUARD
from pytest_agentfaults._plugin_state import ITEM, STATE

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Pause", "around_wider_fixture"]


def _paused_parts(item: pytest.Item) -> list[Any]:
    """What of ``item`` would act on a fixture's code: its sleep patches and its guard."""
    stash = item.stash
    parts: list[Any] = []
    if STATE in stash:
        parts.extend(stash[STATE].clock._patches)  # noqa: SLF001 - the test's ThreadTime, if on
    if GUARD in stash:
        parts.append(stash[GUARD])
    return parts


def _sit_out() -> Callable[[], None] | None:
    """Switch the running test off in this context (its faults, trace and clock); the undo.

    Only once the kit is loaded: before, nothing of a test is on but its pending switch,
    which is cleared so that the fixture's runs do not switch the test on.
    """
    current = sys.modules.get("pytest_agentfaults.testing._current")
    if current is not None:
        undo: Callable[[], None] = current.sit_out()
        return undo
    pending = sys.modules.get("pytest_agentfaults.runtime._pending")
    if pending is None or pending.PENDING.get() is None:
        return None
    token = pending.PENDING.set(None)
    return partial(pending.PENDING.reset, token)


class Pause:
    """Makes the running test sit out: real sleeps, no guard, no faults, no trace; undoes it.

    `begin` finds the test running at that moment (setup and teardown of one fixture can
    fall in different tests); `end` undoes what `begin` did, and only that. Each part
    counts its pauses (``suspended``), so nested wider fixtures pause and resume in turn.
    """

    __slots__ = ("_parts", "_undo")

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._undo: Callable[[], None] | None = None

    def begin(self) -> None:
        item = ITEM.get()
        if item is None:  # no test running (a plugin's own session): nothing to pause
            return
        parts = _paused_parts(item)
        for part in parts:
            part.suspended += 1
        self._parts = parts
        self._undo = _sit_out()

    def end(self) -> None:
        parts, self._parts = self._parts, []
        for part in parts:
            part.suspended -= 1
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()


def around_wider_fixture(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    """The body of the plugin's ``pytest_fixture_setup`` wrapper (see the module docs).

    Its teardown is paused too: a finalizer registered before the fixture's own (which
    pytest runs last) ends the pause, and one registered after it (run first) begins it.
    FixtureDef finalizers run last-in-first-out, each even if another raised. For a
    fixture of any scope but "function" (the plugin's wrapper leaves those alone).
    """
    teardown = Pause()
    fixturedef.addfinalizer(teardown.end)
    setup = Pause()
    setup.begin()
    try:
        result = yield
    finally:
        setup.end()
    fixturedef.addfinalizer(teardown.begin)
    return result
