"""The plugin's per-session and per-test state, and how a test's state is built.

Kept apart from ``plugin.py`` (the hooks and fixtures) and, like it, light: only the
standard library and pytest load with it; the kit loads on the first test that uses it.
"""

from __future__ import annotations

import sys
import threading
from contextvars import ContextVar, Token
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from pytest_agentfaults._plugin_given import watch_given
from pytest_agentfaults._plugin_names import names_our_fixture, our_fixture

if TYPE_CHECKING:
    from pytest_agentfaults._redact import LearnedSecrets
    from pytest_agentfaults.testing._coverage import Matrix
    from pytest_agentfaults.testing.session import Counts, TestState

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ITEM",
    "SESSION",
    "STATE",
    "CoverageSettings",
    "Kit",
    "Session",
    "declares_kit",
    "fault_marks",
    "kit_marks",
    "may_use_kit",
    "no_virtual_clock",
    "pend",
    "running_item",
    "start_state",
    "switch_on_late",
    "unpend",
]


class Session:
    """Session-wide settings and totals, kept in ``config.stash``."""

    def __init__(
        self,
        seed: int,
        trace_mode: str,
        trace_dir: Path | None,
        update: bool,
        html: Path | None = None,
    ) -> None:
        self.seed = seed
        self.trace_mode = trace_mode
        self.trace_dir = trace_dir
        self.update_snapshots = update
        self.html = html
        self.totals: Counts | None = None
        self.always: list[tuple[str, str]] = []
        self.html_tests: list[dict[str, Any]] = []
        #: each test's phases as pytest reported them, for the HTML report (node id ->)
        self.phases: dict[str, list[dict[str, Any]]] = {}
        self.kit: Kit | None = None
        self.kit_modules: dict[str, bool] = {}  # test module -> holds pytest_agentfaults
        self.coverage: CoverageSettings | None = None
        self.matrix: Matrix | None = None  # the fault coverage, built on the first test
        #: a test used the kit (a marker, a kit fixture, or it recorded something): only
        #: then do the seed line and the summary line print (a third-party suite run with
        #: the plugin installed stays as quiet as without it)
        self.used = False
        self.seed_shown = False  # the seed line went out after collection
        #: the ``trace`` fixture's view, made on first use (`_plugin_fixtures.trace_view`)
        self.trace_view: Any = None
        #: the runtime's `PENDING` variable, once a test may use the runtime (`pend`)
        self.pending: ContextVar[Any] | None = None
        #: one test switched on at a time (`_switch_on`): threads of a test may race to it
        #: (re-entrant: a switch-on that reaches the runtime again cannot lock itself out)
        self.switching = threading.RLock()
        #: the setup hook fills in the kit's fixtures itself (`_plugin_fixtures`): not
        #: when the session shows fixture setup (set at the session's start)
        self.direct_fixtures = False
        #: id(an item's fixture info) -> (the info, which of the kit's fixtures it names)
        self.kit_fixtures: dict[int, tuple[Any, tuple[str, ...]]] = {}
        #: the session's `_plugin_totals.Totals` is registered (`count_reports`)
        self.counting = False
        #: the credentials the kit saw in this session's requests, redacted by value in
        #: every report and file from then on (made at the session's start)
        self.learned: LearnedSecrets | None = None


class CoverageSettings:
    """``--agentfaults-coverage`` and its gate and exclusions, as configured."""

    def __init__(self, path: Path | None, fail_under: float | None, exclude: list[str]) -> None:
        self.path = path
        self.fail_under = fail_under
        self.exclude = exclude


SESSION = pytest.StashKey[Session]()
STATE = pytest.StashKey["TestState"]()

# The test whose protocol is running (set and reset around it by the plugin's
# ``pytest_runtest_protocol``). The kit's fixtures find their test here instead of asking
# for ``request``: for a fixture that asks for it, pytest builds a new FixtureDef of
# ``request`` each time, inspecting a lambda's signature (10-15 us of every test).
ITEM: ContextVar[pytest.Item | None] = ContextVar("agentfaults_item", default=None)


def running_item(fixture: str) -> pytest.Item:
    """The test running in this context, for the kit's fixture ``fixture``.

    None only where the test's context is not: a thread started without it.
    """
    __tracebackhide__ = True
    item = ITEM.get()
    if item is None:
        from pytest_agentfaults.errors import UsageError  # noqa: PLC0415 - lazy, rare

        raise UsageError(
            f"the {fixture!r} fixture was used outside the test's context (a thread "
            "started by the test runs without it, and without the test's faults and "
            "clock): request it in the test or its fixtures, or run the thread's work in "
            "the test's context, contextvars.copy_context().run(...)"
        )
    return item


# The plugin's own markers: one walk up the tree finds which of them apply to a test.
_MARKERS = frozenset(("inject_fault", "real_time", "allow_network"))
_NO_MARKS: frozenset[str] = frozenset()


def kit_marks(item: pytest.Item) -> frozenset[str]:
    """Which of ``inject_fault``, ``real_time`` and ``allow_network`` apply to ``item``.

    One walk from the item up to the session, where each `get_closest_marker` call walks
    it once more: the setup of every test of a session asks this.
    """
    found: set[str] | None = None
    node: Any = item
    while node is not None:
        for mark in node.own_markers:
            name = getattr(mark, "name", None)
            if name in _MARKERS:
                found = found or set()
                found.add(name)
        node = node.parent
    return frozenset(found) if found else _NO_MARKS


def uses_the_kit(item: pytest.Item, marks: frozenset[str] | None = None) -> bool:
    """An ``inject_fault`` marker or a kit fixture: its waits are virtual by default."""
    if "inject_fault" in (kit_marks(item) if marks is None else marks):
        return True
    return names_our_fixture(item)


def may_use_kit(
    item: pytest.Item, marks: frozenset[str] | None = None, declared: bool | None = None
) -> bool:
    """Whether the test could build an agent, fire a fault or read a trace.

    True once the runtime is loaded (any code that builds an agent imported it: the
    virtual clock and the trace then reach every agent built with ``clock=None``, marked
    or not), for a marked test, for a test asking for a kit fixture, and for a test whose
    module holds the lazy package (``import pytest_agentfaults as af``). ``marks`` are
    the item's `kit_marks`, and ``declared`` its `declares_kit`, when the caller has them.
    """
    if declared is None:
        declared = declares_kit(item, marks)
    if declared or _RUNTIME in sys.modules:
        return True
    # Kept on the parent (a module or a class): its tests ask one after the other, and
    # `item.module` walks up the tree. Two keys, one `in` each: a parent whose module does
    # not hold the kit (nearly all of a suite that does not use it) answers in one.
    parent = item.parent
    if parent is not None:
        stash = parent.stash
        if _NO_KIT in stash:
            return False
        if _KIT in stash:
            return True
    module = getattr(item, "module", None)
    known = module is not None and imports_the_kit(module, item.config.stash[SESSION])
    if parent is not None:
        parent.stash[_KIT if known else _NO_KIT] = True
    return known


_KIT = pytest.StashKey[bool]()  # the parent's module holds the lazy package (or a name of it)
_NO_KIT = pytest.StashKey[bool]()  # ... does not


def declares_kit(item: pytest.Item, marks: frozenset[str] | None = None) -> bool:
    """Whether the test says it uses the kit: an agentfaults marker or a kit fixture."""
    marks = kit_marks(item) if marks is None else marks
    if "inject_fault" in marks or "real_time" in marks:
        return True
    return names_our_fixture(item)


def reports_as_kit(item: pytest.Item, state: TestState | None = None) -> bool:
    """Whether ``item``'s reports get the full redaction: the test used the kit.

    Declared (a marker or a kit fixture) or recorded something, as the session's summary
    counts it. A test that did neither gets only the redaction that cannot be wrong
    (`pytest_agentfaults._redact.redact_shapes`). ``state`` is its state, if the caller has it.
    """
    if state is None and STATE in item.stash:
        state = item.stash[STATE]
    if state is not None and (state.declared or state.recorded()):
        return True
    return declares_kit(item)  # a setup that failed before the state was made


def running_uses_kit() -> bool:
    """`reports_as_kit` for the test running in this context; True outside any test.

    For a log line written straight out (live logging, ``--log-file``): one written where
    no test is known (a thread started without the test's context) is redacted in full.
    """
    item = ITEM.get()
    return item is None or reports_as_kit(item)


_RUNTIME = "pytest_agentfaults.runtime.clock"  # every agent reads its default clock there


def imports_the_kit(module: ModuleType, session: Session) -> bool:
    cached = session.kit_modules.get(module.__name__)
    if cached is None:
        cached = any(is_kit(value) for value in list(vars(module).values()))
        session.kit_modules[module.__name__] = cached
    return cached


def is_kit(value: object) -> bool:
    name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", "")
    return isinstance(name, str) and name.startswith("pytest_agentfaults")


def start_state(
    item: pytest.Item, marks: frozenset[str] | None = None, declared: bool | None = None
) -> TestState:
    """Build the test's state, keep it in ``item.stash[STATE]`` and switch it on.

    ``marks`` are the item's `kit_marks` and ``declared`` its `declares_kit`, when the
    caller has them (the setup of every test does).
    """
    __tracebackhide__ = True
    marks = kit_marks(item) if marks is None else marks
    if "real_time" in marks and our_fixture(item, "virtual_clock"):
        # said here, by the setup hook, not by the fixture: a fixture's error shows the
        # fixture machinery (another plugin's setup wrapper), not the user's test
        no_virtual_clock(item)
    session = item.config.stash[SESSION]
    kit = session.kit or load_kit(item.config, session)
    nodeid = item.nodeid  # a property that builds the string
    state = kit.TestState(
        nodeid,
        seed=kit.test_seed(session.seed, nodeid),
        real_time="real_time" in marks,
        snapshots=kit.snapshots,
        learned=session.learned,
    )
    state.declared = declares_kit(item, marks) if declared is None else declared
    if "inject_fault" in marks:
        faults = []
        for mark in fault_marks(item):  # a loop, not a comprehension: its frame hides
            faults.append(parsed(mark, kit, item))
        state.add_faults(faults)
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        # its trace read per example; its markers warned about unless it used fault_scope
        watch_given(item, marked="inject_fault" in marks)
    item.stash[STATE] = state
    if uses_the_kit(item, marks):
        # before the plan's function faults patch: a fault on time:sleep wraps the
        # virtual sleep and fires, instead of lying under it, never called
        state.use_virtual_time()  # undone by state.stop(), like the rest
    state.start()
    return state


def no_virtual_clock(item: pytest.Item) -> NoReturn:
    """Refuse the ``virtual_clock`` fixture of a ``real_time`` test."""
    __tracebackhide__ = True
    from pytest_agentfaults.errors import UsageError  # noqa: PLC0415 - lazy, rare

    raise UsageError(
        f"{item.nodeid} is marked real_time, so it has no virtual clock; remove "
        "the marker or the virtual_clock fixture"
    )


PENDED = pytest.StashKey[Token[Any]]()  # the test's `pend` token, until it ends


def pend(item: pytest.Item, marks: frozenset[str]) -> None:
    """Give a test that may use the kit, but does not say so, its state on first use.

    Most such tests never build an agent (a suite whose other tests use the kit): the
    state is built when the test first uses the runtime, in the context that uses it
    (`pytest_agentfaults.runtime._pending`). `unpend` ends it.
    """
    session = item.config.stash[SESSION]
    variable = session.pending
    if variable is None:
        from pytest_agentfaults.runtime._pending import PENDING  # noqa: PLC0415 - the kit loads on first use

        variable = session.pending = PENDING
    item.stash[PENDED] = variable.set(partial(_switch_on, item, marks))


def _switch_on(item: pytest.Item, marks: frozenset[str]) -> None:
    """The pending test's first use of the runtime, in the calling context: switch it on."""
    __tracebackhide__ = True
    session = item.config.stash[SESSION]
    with session.switching:
        if session.pending is not None:
            session.pending.set(None)  # on in this context from here (and not again)
        if PENDED not in item.stash:
            return  # the test ended (a context it left behind): nothing of it to switch on
        state: TestState | None = item.stash.get(STATE, None)
        if state is None:
            start_state(item, marks, declared=False)
        else:  # this context was copied before the test's first use: the same state here
            state.start()


def switch_on_late(item: pytest.Item) -> TestState:
    """Switch a test on that asked for a kit fixture late (``request.getfixturevalue``).

    In the calling context; a test still pending is switched on from here, once.
    """
    __tracebackhide__ = True
    session = item.config.stash[SESSION]
    if PENDED in item.stash and session.pending is not None:
        session.pending.set(None)  # on in this context from here (`pend`)
    return start_state(item)


def unpend(item: pytest.Item) -> None:
    """End `pend`: the test's switch is gone from its context (safe to call twice)."""
    stash = item.stash
    if PENDED not in stash:
        return
    token = stash[PENDED]
    del stash[PENDED]
    variable = item.config.stash[SESSION].pending
    if variable is None:
        return
    try:
        variable.reset(token)
    except ValueError:  # set in another context (never, from pytest's hooks): the default
        variable.set(None)


class Kit:
    """The test-kit names the hooks use, imported once, on the first test."""

    def __init__(self) -> None:
        from pytest_agentfaults.testing.faults import parse_marker  # noqa: PLC0415 - the kit loads on first use
        from pytest_agentfaults.testing.session import (  # noqa: PLC0415
            Counts,
            TestState,
            test_seed,
            write_trace_file,
        )

        self.parse_marker = parse_marker
        self.TestState = TestState
        self.test_seed = test_seed
        self.Counts = Counts
        self.write_trace_file = write_trace_file
        self.parsed: dict[int, tuple[pytest.Mark, Any]] = {}
        self.snapshots: Any = None


def load_kit(config: pytest.Config, session: Session) -> Kit:
    from pytest_agentfaults.runtime.snapshot import SnapshotSettings, in_ci  # noqa: PLC0415 - the kit loads on first use

    session.kit = Kit()
    # This session's, switched on per test: a pytester session inside never changes it.
    session.kit.snapshots = SnapshotSettings(
        config.rootpath, session.update_snapshots, session.seed, session.learned, in_ci()
    )
    return session.kit


def parsed(mark: pytest.Mark, kit: Kit, item: pytest.Item) -> Any:
    __tracebackhide__ = True  # a bad marker's UsageError shows the test, not the parser
    # A parametrized test shares one Mark object across its items: parse it once a session.
    cached = kit.parsed.get(id(mark))
    if cached is None or cached[0] is not mark:
        try:
            cached = (mark, kit.parse_marker(mark.args, mark.kwargs, label=mark.name))
        except ValueError as error:  # a UsageError: said once, where the marker is
            origin, shared = _origin(mark, item)
            message = f"{origin}: {error}"
            error.args = (message,)
            if shared:  # the other tests under it point here, not repeat it
                again = f"the {origin} is invalid: see the error at {item.nodeid}"
                kit.parsed[id(mark)] = (mark, _Invalid(type(error)(again)))
            raise error.with_traceback(None) from None
        kit.parsed[id(mark)] = cached
    return cached[1].fresh()  # a fresh copy: a Fault counts its own hits


class _Invalid:
    """A shared marker that failed to parse: `fresh` raises the short reference to it."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def fresh(self) -> Any:
        __tracebackhide__ = True
        raise type(self.error)(*self.error.args) from None


def _origin(mark: pytest.Mark, item: pytest.Item) -> tuple[str, bool]:
    """Where ``mark`` was written, and whether other tests share it (a pytestmark)."""
    path, line, name = item.location
    if any(own is mark for own in item.own_markers):
        return f"{path}:{(line or 0) + 1} ({name})", False
    node = item.parent
    while node is not None and not any(own is mark for own in node.own_markers):
        node = node.parent
    if isinstance(node, pytest.Class):
        return f"pytestmark of class {node.name} in {path}", True
    return f"module pytestmark of {path}", True


def fault_marks(item: pytest.Item) -> list[pytest.Mark]:
    """The ``inject_fault`` markers of ``item``, from the top down.

    `Node.iter_markers` yields the function's own markers bottom-up (the decorator nearest
    the def first), then its parents' ones; users read them top-down, and the contract
    says "from the top down": the item's own reversed, then the inherited ones reversed.
    One walk up the tree, without pytest's generators (every fault-injected test asks).
    """
    own = [m for m in item.own_markers if m.name == "inject_fault"]
    inherited: list[pytest.Mark] = []
    node = item.parent
    while node is not None:
        for mark in node.own_markers:
            if mark.name == "inject_fault" and not any(mark is o for o in own):
                inherited.append(mark)
        node = node.parent
    own.reverse()
    inherited.reverse()
    return own + inherited if inherited else own
