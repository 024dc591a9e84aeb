"""`RunningTrace`: what the ``trace`` fixture hands a test.

The fixture is session-scoped: pytest sets a function-scoped fixture up and tears it down
for every test that asks for it (about 150 Python calls each time, the cost of a small
agent run), while a session fixture, once made, costs a test next to nothing. So the
fixture is one view per session, and every read goes to the trace of the test running in
the reader's context. Inside a test it is that test's `Trace`, as before.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_agentfaults.runtime.events import Event, Trace

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["RunningTrace"]


class RunningTrace(Trace):
    """The running test's `Trace`: every question asked of it reads that test's events."""

    __slots__ = ("_find",)

    def __init__(self, find: Callable[[], Trace]) -> None:
        # No `Trace.__init__`: the events are the running test's, never this view's own.
        self._find = find

    @property
    def events(self) -> list[Event]:  # type: ignore[override]  # read-only: the test's own
        """The events of the test running in this context, in order."""
        __tracebackhide__ = True
        return self._find().events

    @property
    def _tools(self) -> set[str]:  # type: ignore[override]
        """The tools of the agents of the test running in this context."""
        return self._find()._tools  # noqa: SLF001 - the same class's own record
