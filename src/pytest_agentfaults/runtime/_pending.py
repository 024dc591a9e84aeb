"""A test switched on at its first use of the runtime (the plugin's, for tests that may use it).

A test that does not say it uses the kit (no marker, no kit fixture) may still build an
agent: the plugin then gives it a virtual default clock, a seed and a trace, as it gives a
test that says so. Building those for every such test costs each a third of a plain
test's time, and most never build an agent. So the plugin sets `PENDING` instead: a
callable that switches the test's context on in the calling context. Each place where the
runtime reads that context (the default clock, the jitter seed, the trace collectors, the
snapshot settings) calls `switch_on` first when it finds nothing set; the plugin's
callable sets `PENDING` back to None in the context it switched on.

A leaf module: the modules that read the context import it, and it imports nothing of them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["PENDING", "switch_on"]

#: the running test's switch, while its context is not on in this context (None: no test,
#: or switched on); contexts copied from the test's (asyncio tasks) see it too
PENDING: ContextVar[Callable[[], object] | None] = ContextVar(
    "agentfaults_pending_test", default=None
)


def switch_on() -> bool:
    """Switch the pending test's context on here, if there is one; whether there was."""
    switch = PENDING.get()
    if switch is None:
        return False
    switch()
    return True
