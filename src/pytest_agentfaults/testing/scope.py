"""`af.fault_scope()`: a fresh fault plan, trace and virtual clock for one block.

```python
@given(calls=st.integers(1, 4))
def test_fetch_recovers(calls):
    with af.fault_scope() as scope:          # one fresh kit per Hypothesis example
        scope.faults.tool("fetch").raises(ConnectionError("reset")).times(1)
        result = agent.run("go")             # an agent built with clock=None
        assert len(scope.faults.fired) == 1
        assert scope.trace.count("tool.retry") == 1
```

For the block, ``scope.faults`` is injected, every run (and HTTP attempt) is collected
into ``scope.trace`` alone, agents built with ``clock=None`` and the thread's own
``time.sleep`` / ``asyncio.sleep`` / ``anyio.sleep`` wait on ``scope.clock``, and jitter is
drawn from ``scope.seed``. Whatever was active around the block (the enclosing
test's plan, trace and clock) sits it out and is active again at exit, also when the block
raises. Works in a test, inside ``@given`` and outside pytest.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._recorder import Recorder, collecting
from pytest_agentfaults.runtime.backoff import active_seed, seeded_jitter
from pytest_agentfaults.runtime.clock import VirtualClock, use_default_clock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing._frameworks import adapters_watching, install_adapters
from pytest_agentfaults.testing._undo import run_all
from pytest_agentfaults.testing.faults import FaultPlan, suspend_earlier_plans

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ENTERED", "FaultScope", "fault_scope"]

#: How many scopes the running test entered, while the plugin counts them (a Hypothesis
#: test with ``inject_fault`` markers: see `pytest_agentfaults._plugin_given`).
ENTERED: ContextVar[list[int] | None] = ContextVar("agentfaults_scopes", default=None)


@dataclass(frozen=True, slots=True)
class FaultScope:
    """What ``with af.fault_scope() as scope:`` gives: the block's own kit."""

    faults: FaultPlan
    trace: Trace
    clock: VirtualClock
    seed: int


class fault_scope:
    """A fresh `FaultPlan`, `Trace` and `VirtualClock`, switched on for the ``with`` block.

    ``seed`` seeds jitter and probabilistic faults; by default it is the enclosing test's
    seed (so ``--agentfaults-seed`` reproduces it), or 0 outside a test. At a clean exit
    a strict fault that never fired fails the block, as it fails a test; an error raised
    in the block is never hidden by that check.
    """

    def __init__(self, seed: int | None = None) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise UsageError(f"af.fault_scope(seed={seed!r}): give an int, or leave seed out")
        self._seed = seed
        self._scope: FaultScope | None = None
        self._undo: list[Any] = []

    def __enter__(self) -> FaultScope:
        __tracebackhide__ = True
        if self._scope is not None:
            raise UsageError(
                "af.fault_scope() is already entered: make a new one per block, "
                "`with af.fault_scope() as scope:`"
            )
        entered = ENTERED.get()
        if entered is not None:
            entered[0] += 1  # for the plugin: this test makes a fresh kit per example
        given = self._seed if self._seed is not None else active_seed()
        seed = given if given is not None else 0
        scope = FaultScope(FaultPlan(seed=seed), Trace(), VirtualClock(), seed)
        try:
            for context in (
                use_default_clock(scope.clock),
                seeded_jitter(seed),
                collecting(scope.trace, only=True),
            ):
                context.__enter__()
                self._undo.append(context.__exit__)
            # Made inside `collecting`, so HTTP attempts outside a run reach scope.trace only.
            scope.faults.http_recorder = Recorder(
                agent="http", clock=scope.clock, trace=scope.trace
            )
            handle = scope.faults.activate()
            self._undo.append(lambda *_: scope.faults.deactivate(handle))
            # for a strict fault's message, as in a test: whose tools the block watches (the
            # test's adapters, hooked already or as frameworks arrive, if it has them)
            watched = adapters_watching()
            if watched is None:  # a test that does not use the kit, or no test
                watched = ["agentfaults"]
                _, undo_adapters = install_adapters(watched)
                self._undo.append(lambda *_: undo_adapters())
            scope.faults.framework_state["watched"] = watched
            floor = suspend_earlier_plans(scope.faults)
            floor.__enter__()
            self._undo.append(floor.__exit__)
            self._undo.append(lambda *_: scope.clock.unpatch_sleep())
            # This thread's sleeps (an SDK's backoff) wait on the block's clock, which also
            # stamps its HTTP attempts; the enclosing test's clock gets them back at exit.
            scope.clock.patch_sleep()
        except BaseException:
            self._unwind()
            raise
        self._scope = scope
        return scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        __tracebackhide__ = True
        scope, self._scope = self._scope, None
        self._unwind()
        if exc_type is None and scope is not None and scope.faults.unfired():
            try:
                scope.faults.check()
            except AssertionError as error:
                message = str(error)  # its fix names .strict(False) already, mostly
                more = "" if ".strict(False)" in message else "; mark it .strict(False)"
                raise AssertionError(f"af.fault_scope(): {message}{more}") from None

    def _unwind(self) -> None:
        """Undo everything entered, last first; every step runs, the first error wins."""
        undo, self._undo = self._undo, []
        errors = run_all(partial(step, None, None, None) for step in reversed(undo))
        if errors:
            raise errors[0]
