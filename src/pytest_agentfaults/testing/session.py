"""What the plugin keeps for one test, without importing pytest.

A `TestState` holds the test's fault plan, virtual clock and trace, switches them on for
the test (`start`) and off again (`stop`), and turns what happened into report text, a
JSON file and summary counts. The plugin only wires it to pytest's hooks.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

from pytest_agentfaults._redact import LearnedSecrets, redact_text
from pytest_agentfaults.errors import VirtualTimeSpinError
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime._test_context import Entered, enter_test, leave_test
from pytest_agentfaults.runtime.clock import RealClock, VirtualClock
from pytest_agentfaults.runtime.events import Event, Trace
from pytest_agentfaults.runtime.snapshot import SnapshotSettings
from pytest_agentfaults.testing._fault import Fault, without_addresses
from pytest_agentfaults.testing._frameworks import install_adapters
from pytest_agentfaults.testing._trace_text import clip, exhausted_after, render_events
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.report import (
    Phase,
    ReportEntry,
    count_retries,
    overall_outcome,
    render_html,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Counts", "TestState", "test_seed", "trace_file_name", "write_html_report"]


@dataclass(slots=True)
class Counts:
    """The terminal summary's figures; adds up across tests and xdist workers.

    ``retries`` are the tool and LLM retries; ``http_retries`` the HTTP-level ones (see
    `count_retries`), counted apart.
    """

    faults: int = 0
    retries: int = 0
    fixer_calls: int = 0
    escalations: int = 0
    http_retries: int = 0

    def add(self, other: Counts | dict[str, int]) -> None:
        """Add ``other`` (a `Counts` or its dict form) to these counts."""
        data = other if isinstance(other, dict) else other.as_dict()
        self.faults += int(data.get("faults", 0))
        self.retries += int(data.get("retries", 0))
        self.fixer_calls += int(data.get("fixer_calls", 0))
        self.escalations += int(data.get("escalations", 0))
        self.http_retries += int(data.get("http_retries", 0))

    def as_dict(self) -> dict[str, int]:
        """A JSON-friendly form (xdist ships it from workers to the controller)."""
        return {
            "faults": self.faults,
            "retries": self.retries,
            "fixer_calls": self.fixer_calls,
            "escalations": self.escalations,
            "http_retries": self.http_retries,
        }

    def summary(self) -> str:
        """``agentfaults: N faults injected, N retries, N fixer calls, N escalations``.

        With ``N HTTP retries`` after the retries when there were any.
        """
        http = f"{plural(self.http_retries, 'HTTP retry', 'HTTP retries')}, "
        return (
            f"agentfaults: {plural(self.faults, 'fault')} injected, "
            f"{plural(self.retries, 'retry', 'retries')}, {http if self.http_retries else ''}"
            f"{plural(self.fixer_calls, 'fixer call')}, {plural(self.escalations, 'escalation')}"
        )


def plural(count: int, one: str, many: str | None = None) -> str:
    """``1 retry``, ``2 retries``, ``0 fixer calls``."""
    return f"{count} {one if count == 1 else (many or one + 's')}"


def test_seed(session_seed: int, nodeid: str) -> int:
    """A seed for one test: stable for a session seed, whatever order tests run in."""
    return zlib.crc32(f"{session_seed}:{nodeid}".encode()) & 0x7FFFFFFF


class TestState:
    """The agentfaults side of one running test."""

    __test__ = False  # not a test class, whatever pytest's collector thinks of the name

    def __init__(
        self,
        nodeid: str,
        *,
        seed: int,
        real_time: bool,
        snapshots: SnapshotSettings | None = None,
        learned: LearnedSecrets | None = None,
    ) -> None:
        self.nodeid = nodeid
        self.snapshots = snapshots
        self.seed = seed
        self.real_time = real_time
        #: the session's credentials seen in requests: the plan's HTTP layer and server
        #: learn into it, and this test's reports redact each by value
        self.learned = learned
        self.plan = FaultPlan(seed=seed)
        self.plan.learned = learned
        self.clock = VirtualClock()
        self.trace = Trace()
        # HTTP attempts outside any agent run (an SDK client called from the test, the
        # loopback server) are recorded here, on the test's clock.
        self.plan.http_recorder = Recorder(
            agent="http",
            clock=RealClock() if real_time else self.clock,
            trace=self.trace,
            run_id="http",  # not a run: a fixed id, the same in every session
        )
        #: for the plugin's reports: the test declares that it uses the kit (a marker or a
        #: kit fixture), its call passed, one of its phases failed
        self.declared = False
        self.passed = False
        self.failed = False
        #: the `VirtualTimeSpinError` the test's sleeps raised, if any: it fails the test
        #: at teardown even if the code swallowed it
        self.spun: VirtualTimeSpinError | None = None
        #: the runtime context `start` set (`enter_test`), in each context it started in
        self._entered: Entered = []
        self._plan_handles: list[object] = []
        self._numbering: Iterator[int] | None = None  # its runs' ids, in every context
        self._adapters: Callable[[], None] | None = None

    def add_faults(self, faults: Iterable[Fault]) -> None:
        """Add the marker's faults (in declared order) to the plan."""
        for fault in faults:
            self.plan.add(fault)

    def start(self) -> None:
        """Switch the plan, the virtual clock, the seed and the trace on for this test.

        In the calling context. Again in another one (a context copied before the test
        first used the runtime: see `pytest_agentfaults.runtime._pending`), it switches
        the same plan, clock and trace on there too; `stop` undoes each.
        """
        __tracebackhide__ = True
        # One call sets the runtime's context variables (`enter_test`), not four context
        # managers: this runs for every test of a session. real_time: None means "real",
        # also when an enclosing context set a virtual default.
        if self._numbering is None:
            self._numbering = itertools.count(1)
        self._entered.extend(
            enter_test(
                None if self.real_time else self.clock,
                self.seed,
                self.trace,
                self.snapshots,
                self._numbering,
            )
        )
        again = bool(self._plan_handles)  # another context: the adapters are on already
        try:
            self._plan_handles.append(self.plan.activate())
            if again:
                return
            # other frameworks' tools, for the frameworks the test process imported, in a
            # test that says it uses the kit: any other is left as it is (an
            # `af.fault_scope()` in it installs them for its block)
            if self.declared:  # for the strict message: whose tools this test watches
                _, self._adapters = install_adapters(self._watched())
        except BaseException as error:
            for failed in self.stop():
                error.add_note(f"pytest-agentfaults could not switch off: {failed!r}")
            raise

    def declare(self) -> None:
        """The test asked for a kit fixture late (``request.getfixturevalue``): it uses the kit.

        As a test that names the fixture: other frameworks' tools are watched from here (in
        the calling context, as `start` would have), so its tool faults reach them and its
        trace sees them run. Twice is once.
        """
        __tracebackhide__ = True
        if self.declared:
            return
        self.declared = True
        if self._adapters is None and self._plan_handles:
            _, self._adapters = install_adapters(self._watched())

    def _watched(self) -> list[str]:
        """The plan's list of whose tools the test watches, which the adapters fill in."""
        watched = self.plan.framework_state["watched"] = ["agentfaults"]
        return watched

    def use_virtual_time(self) -> None:
        """Make the waits of this thread and its event loops virtual on the test's clock.

        For a test that uses the kit (not ``real_time``); `stop` undoes it. Twice is once.
        """
        if not self.real_time:
            self.clock.patch_sleep()

    def stop(self) -> list[Exception]:
        """Undo `start` (and any `patch_sleep` of the test's clock); safe to call twice.

        Every step runs even if an earlier one fails; the failures are returned, so the
        caller can report them without leaving anything of this test switched on.
        """
        # Each step inline, not `run_all` over a list of partials: every test stops its
        # state. Every step runs whatever an earlier one raised; a KeyboardInterrupt (or
        # another BaseException) in one lets the others run first, then goes on.
        errors: list[Exception] = []
        interrupt: BaseException | None = None
        for patch in self.clock._patches:  # noqa: SLF001 - a loop that spun, if any
            self.spun = self.spun or patch.spun
        try:
            self.clock.unpatch_sleep()
        except Exception as error:
            errors.append(error)
        except BaseException as stopped:
            interrupt = stopped
        adapters = self._adapters
        if adapters is not None:
            self._adapters = None
            try:
                adapters()
            except Exception as error:
                errors.append(error)
            except BaseException as stopped:
                interrupt = interrupt or stopped
        handles = self._plan_handles
        while handles:  # last activated first; each once
            try:
                self.plan.deactivate(handles.pop())
            except Exception as error:
                errors.append(error)
            except BaseException as stopped:
                interrupt = interrupt or stopped
        errors.extend(leave_test(self._entered))  # empties it: undone once
        if interrupt is not None:
            raise interrupt
        return errors

    # ------------------------------------------------------------------ reporting

    def counts(self) -> Counts:
        """What this test injected and what the runtime did about it."""
        return Counts(**self.counted())

    def counted(self) -> dict[str, int]:
        """`counts` in its dict form (`Counts.as_dict`), which a test's report ships."""
        events = self.trace.events
        # Every passing test of a session counts: the kinds are counted by C code, and
        # only a test with HTTP requests needs `count_retries`' look at their fields.
        kinds = Counter(map(_KIND, events))
        retries = count_retries(events, kinds)
        return {
            "faults": len(self.plan.fired),
            "retries": retries.tool + retries.llm,
            "fixer_calls": kinds.get("fixer.call", 0),
            "escalations": kinds.get("escalation", 0),
            "http_retries": retries.http,
        }

    def recorded(self) -> bool:
        """Whether the test declared a fault or recorded an event (else it has no trace)."""
        return bool(self.trace.events or self.plan.faults or self.plan.fired)

    def render(self, replay: str | None = None) -> str:
        """The "recovery trace" report section: faults fired, then the timeline (redacted).

        ``replay`` (the command that reruns the test with the same seed) comes first.
        """
        lines = [f"replay: {replay}"] if replay else []
        events = self.trace.events
        if events or self.plan.fired:
            lines.append(f"summary: {self._summary()}")
        learned = self.learned
        if learned:  # a learned key is replaced whole before a line is clipped, not after
            events = self.shown_events()
        if self.plan.faults:
            lines.append("faults:")
            fired_ids = [id(f.fault) for f in self.plan.fired]
            for fault in self.plan.faults:
                hits = plural(fired_ids.count(id(fault)), "time")
                line = f"  fired {hits}: {fault.describe()} ({fault.written})"
                lines.append(clip(redact_text(line, learned) if learned else line))
        lines.append("timeline:")
        lines.extend(f"  {line}" for line in render_events(events) or ["(no events)"])
        text: str = _shown("\n".join(lines), self._origins(), self.learned)
        return text

    def _summary(self) -> str:
        """One line of this test's figures: faults, retries by layer, fixers, escalations.

        Only the figures above zero, so the line stays short.
        """
        retries = count_retries(self.trace.events)
        ends = exhausted_after(self.trace.events).values()
        exhausted = sum(1 for line in ends if line.startswith("retries exhausted"))
        exhausted += self.trace.count("tool.exhausted") + self.trace.count("llm.exhausted")
        counted = (
            (retries.tool, "tool retry", "tool retries"),
            (retries.llm, "LLM retry", "LLM retries"),
            (retries.http, "HTTP retry", "HTTP retries"),
            (self.trace.count("fixer.call"), "fixer call", "fixer calls"),
            (self.trace.count("escalation"), "escalation", "escalations"),
        )
        parts = [f"{plural(len(self.plan.fired), 'fault')} fired"]
        parts.extend(plural(n, one, many) for n, one, many in counted if n)
        if exhausted:
            parts.append("retries exhausted " + ("once" if exhausted == 1 else f"{exhausted}x"))
        return ", ".join(parts)

    def to_json(self, outcome: str) -> str:
        """The JSON file written per test with ``--agentfaults-trace-dir``."""
        return json.dumps(self.as_dict(outcome), indent=2)

    def as_dict(self, outcome: str) -> dict[str, Any]:
        """What a trace file holds, as JSON-friendly data (xdist ships it to the controller).

        Redacted: the trace file and the HTML report are written from it.
        """
        data = {
            "nodeid": self.nodeid,
            "outcome": outcome,
            "seed": self.seed,
            "faults_fired": [
                {
                    "target": f.target,
                    "name": f.name,
                    "kind": f.kind,
                    "occurrence": f.occurrence,
                    "fault": f.fault.describe(),
                }
                for f in self.plan.fired
            ],
            "counts": self.counted(),
            "events": json.loads(self.trace.to_json())["events"],
        }
        return _shown(data, self._origins(), self.learned)  # type: ignore[no-any-return]

    def shown_events(self) -> list[Event]:
        """The trace's events as reports show them (redacted, stable loopback origins)."""
        events = json.loads(self.trace.to_json())["events"]
        return [Event.model_validate(e) for e in _shown(events, self._origins(), self.learned)]

    def _origins(self) -> dict[str, str]:
        """Each loopback `LLMServer`'s origin, and the stable one reports show instead.

        The servers bound to this test's plan, and any still running (a server the test
        started by hand).
        """
        origins = dict(self.plan.shown_origins)
        server = sys.modules.get("pytest_agentfaults.testing._httpd")
        if server is not None:  # never imported: no server runs
            for host, port in server.running_addresses():
                origins.setdefault(f"http://{host}:{port}", server.RECORDED_ORIGIN)
        return origins


def _shown(value: Any, origins: dict[str, str], learned: LearnedSecrets | None) -> Any:
    """``value`` as reports show it: redacted, the loopback server's port left out.

    Redacted with the session's ``learned`` credentials too: an event recorded before the
    kit saw a key (or quoting one of no known shape) holds it. The port and default reprs'
    addresses change from run to run; with them out, one seed gives the same bytes.
    """
    if isinstance(value, str):
        for origin, stable in origins.items():
            if origin in value:
                value = value.replace(origin, stable)
        return without_addresses(redact_text(value, learned))
    if isinstance(value, dict):
        return {key: _shown(item, origins, learned) for key, item in value.items()}
    if isinstance(value, list):
        return [_shown(item, origins, learned) for item in value]
    return value


_KIND = attrgetter("type")  # an event's kind

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def trace_file_name(nodeid: str, learned: LearnedSecrets | None = None) -> str:
    """A file name for ``nodeid``: readable, safe on every OS, unique per test id.

    Redacted, with the session's ``learned`` keys too: a test id holds its parameters.
    """
    digest = hashlib.sha1(nodeid.encode(), usedforsecurity=False).hexdigest()[:10]
    readable = _UNSAFE.sub("_", redact_text(nodeid, learned)).strip("_")[-80:]
    return f"{readable}-{digest}.json"


def write_trace_file(
    directory: Path, nodeid: str, text: str, learned: LearnedSecrets | None = None
) -> Path:
    """Write one test's trace JSON atomically (xdist workers share the directory)."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / trace_file_name(nodeid, learned)
    partial = target.with_suffix(f".{zlib.crc32(text.encode())}.tmp")
    partial.write_text(text, encoding="utf-8")
    partial.replace(target)
    return target


def write_html_report(
    path: Path,
    tests: list[dict[str, Any]],
    phases: dict[str, list[dict[str, Any]]] | None = None,
) -> Path:
    """Write the ``--agentfaults-html`` report.

    ``tests`` are `TestState.as_dict` items (the tests that had the kit's state), ``phases``
    each test's phases as pytest reported them, by node id, in the order they ran. Every
    test with phases is in the report; one without kit data shows its phases only.
    """
    kit = {test["nodeid"]: test for test in tests}
    order = list(phases or {}) + [nodeid for nodeid in kit if nodeid not in (phases or {})]
    entries = []
    for nodeid in order:
        test = kit.get(nodeid, {})
        shown = [Phase(**phase) for phase in (phases or {}).get(nodeid, [])]
        entries.append(
            ReportEntry(
                nodeid=nodeid,
                outcome=overall_outcome(shown) if shown else test.get("outcome", "passed"),
                seed=test.get("seed", 0),
                faults=[
                    f"{f['fault']} (occurrence {f['occurrence']})"
                    for f in test.get("faults_fired", [])
                ],
                counts=test.get("counts", {}),
                events=[Event.model_validate(e) for e in test.get("events", [])],
                phases=shown,
                replay=test.get("replay", ""),
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(entries), encoding="utf-8")
    return path
