"""`FaultPlan`: which faults to inject into tools, model calls and HTTP requests.

The `faults` fixture is a `FaultPlan`; the ``inject_fault`` marker adds to it. Outside
pytest a plan works the same way:

```python
plan = af.FaultPlan(seed=1)
plan.tool("fetch").raises(ConnectionError("reset")).times(2)
plan.llm.rate_limit(retry_after=2).at(1)
with plan.active():
    result = agent.run("...")
assert len(plan.fired) == 3
```

An *occurrence* is one attempt at a target (a tool run, a model call, an HTTP request),
retries included. A fault hits ``times`` occurrences starting at occurrence ``at``;
several faults on one target apply one after another, in the order they were declared.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Callable, Sequence
from contextvars import Token
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime.hooks import Interceptor, install_interceptor, remove_interceptor
from pytest_agentfaults.testing import _current
from pytest_agentfaults.testing._builders import (
    HttpFaultBuilder,
    LlmFaultBuilder,
    LlmFaults,
    ToolFaultBuilder,
)
from pytest_agentfaults.testing._current import current_plan, floor, suspend_earlier_plans
from pytest_agentfaults.testing._fault import (
    HTTP_KINDS,
    LLM_KINDS,
    TRANSIENT_LLM_KINDS,
    Fault,
    FaultBase,
    FiredFault,
    HTTPFault,
    LLMFault,
    Target,
    ToolFault,
    check_url,
    fired_fault,
)
from pytest_agentfaults.testing._frameworks import imported_late, not_watched, watched_names
from pytest_agentfaults.testing._frameworks.function import check_path, patch_function
from pytest_agentfaults.testing._marker import parse_marker
from pytest_agentfaults.testing._plan_interceptor import PlanInterceptor
from pytest_agentfaults.testing._undo import raise_together, run_all
from pytest_agentfaults.testing._unfired import explain_unfired

if TYPE_CHECKING:
    from pytest_agentfaults._redact import LearnedSecrets
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.testing.http import HttpInjector
    from pytest_agentfaults.testing.scripted import ScriptedModel

# `testing.faults` is where the kit's users (and the docs) find the fault vocabulary: the
# names below are defined in the private modules named for their jobs and shown here.
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "HTTP_KINDS",
    "LLM_KINDS",
    "TRANSIENT_LLM_KINDS",
    "ActivePlan",
    "Fault",
    "FaultPlan",
    "FiredFault",
    "HTTPFault",
    "HttpFaultBuilder",
    "LLMFault",
    "LlmFaultBuilder",
    "LlmFaults",
    "ToolFault",
    "ToolFaultBuilder",
    "current_plan",
    "parse_marker",
    "suspend_earlier_plans",
]

_F = TypeVar("_F", bound=FaultBase)
#: how many distinct requests a plan keeps for its messages (`FaultPlan.requests_made`)
_REQUESTS_KEPT = 20


class FaultPlan:
    """The faults of one test (or one ``with plan.active():`` block), and what fired."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.faults: list[Fault] = []
        self.fired: list[FiredFault] = []
        self._rng: random.Random | None = None  # made on the first probabilistic draw
        self._occurrences: dict[tuple[Any, ...], int] = {}
        self._active = 0
        self._epoch = 0  # when it was last activated (see `suspend_earlier_plans`)
        #: Where ``http.request`` / ``http.fault`` events go when no agent run is in
        #: progress (an SDK client called straight from a test). The plugin points it at
        #: the test's trace; left None, the first HTTP event makes one on the default clock.
        self.http_recorder: Recorder | None = None
        #: Where the credentials of the requests the plan's HTTP layer and the loopback
        #: server see are learned, to be redacted by value: the plugin's session's. Left
        #: None (a plan outside pytest), nothing is learned.
        self.learned: LearnedSecrets | None = None
        self._http: HttpInjector | None = None
        #: set when the layer stops: the ``http_faults`` routes never requested (`check`)
        self.unused_routes: str | None = None
        # the loopback server counts occurrences from its own threads
        self._http_lock = threading.Lock()
        self._checks: list[Callable[[], None]] = []
        self._call_ids = 0
        #: every tool an attempt was made at while the plan was active (with a fault or not)
        self.tools_called: set[str] = set()
        #: the agents whose model calls an llm fault of this plan saw (for its messages)
        self.agents_called: set[str] = set()
        #: origins that reports show under a stable name (``http://127.0.0.1:<port>`` of a
        #: bound `LLMServer` -> ``http://llm_server``): a port differs from run to run
        self.shown_origins: dict[str, str] = {}
        #: the distinct HTTP requests the http faults saw (``"POST <url>"``, redacted, the
        #: first `_REQUESTS_KEPT`), for the message of one whose ``url=`` matched none
        self.requests_made: dict[str, None] = {}
        #: requests sent from contexts the plan is not active in (`next_http_fault`)
        self.foreign_requests = 0
        #: of which the test's own calls to an app it serves in process (a TestClient)
        self.app_requests = 0
        self._requests_seen: set[tuple[str, str]] = set()
        #: what `testing._frameworks` keeps per plan: its recorders, attempt counts, and
        #: the frameworks watched (``"watched"``, set by the plugin) for the strict message
        self.framework_state: dict[str, Any] = {}
        #: the ``http_faults.script`` routes' models, with the host each answers for (the
        #: fault coverage reads the answers they served)
        self.scripts: list[tuple[str, ScriptedModel]] = []
        self._functions: dict[str, Callable[[], None]] = {}  # function= path -> undo

    # ------------------------------------------------------------------ declaring

    @property
    def llm(self) -> LlmFaults:
        """``faults.llm``: faults on every model call (``faults.llm.rate_limit()``).

        Made on each use rather than kept: a plan holding it, and it the plan, would be a
        cycle only the garbage collector frees, once per test.
        """
        return LlmFaults(self)

    def tool(self, name: str | BaseTool[Any, Any]) -> ToolFaultBuilder:
        """A fault on the tool called ``name`` (or on an ``@af.tool`` itself), in every agent."""
        __tracebackhide__ = True
        if isinstance(name, BaseTool):
            name = name.name
        if not isinstance(name, str) or not name:
            raise UsageError(f"faults.tool(name): give a tool name, got {name!r}")
        fault = ToolFault(tool=name, source=f"faults.tool({name!r})")
        self.faults.append(fault)
        return ToolFaultBuilder(fault)

    def function(self, path: str) -> ToolFaultBuilder:
        """A fault on the callable at import path ``"pkg.module:attr"``, patched while active.

        Each call of it is an occurrence; the attribute is replaced as
        ``unittest.mock.patch`` would replace it, and put back when the plan switches off.
        """
        source = f"faults.function({path!r})"
        check_path(path, source)
        fault = ToolFault(tool=path, function=True, source=source)
        if self._active and path not in self._functions:  # declared after activation
            self._functions[path] = patch_function(path, source)
        self.faults.append(fault)
        return ToolFaultBuilder(fault)

    def http(self, url: str | None = None, method: str | None = None) -> HttpFaultBuilder:
        """A fault on HTTP requests (all of them, or those matching ``url`` / ``method``)."""
        __tracebackhide__ = True
        for key, value in (("url", url), ("method", method)):
            if value is not None and not isinstance(value, str):
                raise UsageError(
                    f"faults.http({key}={value!r}): {key}= must be a str "
                    + ("(a URL, or a part of one)" if key == "url" else "such as 'POST'")
                )
        given = [f"url={url!r}"] if url else []  # what the test wrote, for messages
        check_url(url, f"faults.http({given[0] if given else ''})")
        if method:
            given.append(f"method={method!r}")
        fault = HTTPFault(
            url=url,
            method=method.upper() if method else None,
            source=f"faults.http({', '.join(given)})",
        )
        self.faults.append(fault)
        if self._active:
            self.http_layer()  # declared in the test body, after activation
        return HttpFaultBuilder(fault)

    def inject_fault(self, **kwargs: Any) -> Fault:
        """Add the fault ``@pytest.mark.inject_fault(**kwargs)`` adds, checked as it is.

        For a fault given as data (a hypothesis ``http_faults()`` spec, a table of cases).
        """
        __tracebackhide__ = True
        return self.add(parse_marker((), kwargs, call="faults.inject_fault"))

    def add(self, fault: Fault) -> Fault:
        """Add a ready-made `Fault`; one added to an active plan fires as declared ones do."""
        __tracebackhide__ = True
        fault.check()
        self.faults.append(fault)
        if self._active:  # added after activation: switch on what it needs, as activate does
            if fault.target == "http":
                self.http_layer()
            elif isinstance(fault, ToolFault) and fault.function:
                self._patch_functions()
        return fault

    # ------------------------------------------------------------------ questions

    def unfired(self) -> list[Fault]:
        """Strict faults that never fired (the plugin fails the test over these)."""
        fired = {id(f.fault) for f in self.fired}
        return [f for f in self.faults if f.strict and id(f) not in fired]

    def add_check(self, check: Callable[[], None]) -> None:
        """Run ``check()`` in `check` (at the end of the test, under pytest).

        It raises `AssertionError` to fail the test; a `ScriptedModel` built while this
        plan is active adds its leftover-steps check here.
        """
        self._checks.append(check)

    def check(self) -> None:
        """Raise AssertionError naming every strict fault that never fired.

        And every ``http_faults`` route never requested, once the HTTP layer has stopped;
        the checks added with `add_check` run too. Every failure is reported, together.
        """
        __tracebackhide__ = True
        if not (self.faults or self.unused_routes or self._checks):
            return  # nothing declared, nothing to check (the usual unmarked test)
        lines = [self._explain(f) for f in self.unfired()]
        if self.unused_routes:
            lines.append(self.unused_routes)
        for check in list(self._checks):
            try:
                check()
            except AssertionError as exc:
                lines.append(str(exc))
        if lines:
            raise AssertionError(redact_text("\n".join(lines)))

    def _explain(self, fault: Fault) -> str:
        """Why ``fault`` never fired: unfinished (nothing to inject), or never reached."""
        try:
            fault.check()
        except UsageError as unfinished:  # a fluent chain left without an action
            return str(unfinished)
        return explain_unfired(
            fault,
            self._occurrences,
            self.tools_called,
            agents_called=self.agents_called,
            requests_made=list(self.requests_made),
            requests_capped=len(self.requests_made) >= _REQUESTS_KEPT,
            foreign_requests=self.foreign_requests,
            app_requests=self.app_requests,
            unwatched=bool(imported_late(self.framework_state.get("watched"))),
            refused=self.framework_state.get("refused", frozenset()),
        ) + self._watched(fault)

    def _watched(self, fault: Fault) -> str:
        """For a tool fault's message: whose tools were watched for that name."""
        if not isinstance(fault, ToolFault):
            return ""
        if fault.function:  # what happened says it: the path was patched, never called
            return ""
        watched = self.framework_state.get("watched")
        # "agentfaults" is af.Agent's tools (@af.tool); the others are frameworks' modules
        reached = watched_names(watched or ["agentfaults"])
        return f"\n  the fault watches the tools of: {', '.join(reached)}" + not_watched(watched)

    def of(self, target: Target) -> list[Fault]:
        """The faults on ``target`` ("tool", "http" or "llm")."""
        return [f for f in self.faults if f.target == target]

    def __repr__(self) -> str:
        return f"<FaultPlan {len(self.faults)} faults, {len(self.fired)} fired>"

    # ------------------------------------------------------------------ activation

    def active(self) -> ActivePlan:
        """Inject this plan's faults into every agent run (and HTTP request) in the block."""
        return ActivePlan(self)

    def activate(self) -> object:
        """Switch the plan on; returns a handle for `deactivate` (`active` does both)."""
        __tracebackhide__ = True
        self._epoch = next(_current.epochs)
        http = functions = False
        for fault in self.faults:  # one pass: every test under the plugin activates a plan
            fault.check()
            if fault.target == "http":
                http = True
            elif isinstance(fault, ToolFault) and fault.function:
                functions = True
        interceptor = PlanInterceptor(self)
        install_interceptor(interceptor)
        self._active += 1
        token = _current.enter(self)
        try:
            if http:
                self.http_layer()
            if functions:
                self._patch_functions()
        except BaseException:
            self.deactivate((interceptor, token))
            raise
        return interceptor, token

    def deactivate(self, handle: object) -> None:
        """Undo one `activate`."""
        interceptor: Interceptor
        token: Token[FaultPlan | None]
        interceptor, token = handle  # type: ignore[misc]
        # Every step runs whatever an earlier one raised: nothing may stay switched on.
        # Partials, not lambdas: no frame of our own per step (every test deactivates).
        steps: list[Callable[[], Any]] = [partial(_current.leave, self, token)]
        self._active -= 1
        if not self._active and self._http is not None:
            layer, self._http = self._http, None
            steps.append(layer.stop)
        if not self._active and self._functions:
            functions, self._functions = self._functions, {}
            steps.extend(reversed(functions.values()))
        steps.append(partial(remove_interceptor, interceptor))
        errors = run_all(steps)
        if errors:
            raise_together(errors, "FaultPlan.deactivate: some layers failed to switch off")

    def _patch_functions(self) -> None:
        """Patch (once each) the callables this plan's ``function=`` faults name."""
        __tracebackhide__ = True
        for fault in self.faults:
            path = fault.tool if isinstance(fault, ToolFault) and fault.function else None
            if path is not None and path not in self._functions:
                self._functions[path] = patch_function(path, fault.source)

    def http_layer(self) -> HttpInjector:
        """Switch on (once) and return the in-process HTTP layer of this active plan.

        It injects the plan's http faults into every httpx / httpx2 request and records
        each attempt; the plan switches it on by itself when it has http faults, and the
        ``http_faults`` fixture when a test asks for the router. Only inside `active`.
        """
        __tracebackhide__ = True
        if not self._active:
            raise UsageError("plan.http_layer() works inside `with plan.active():` only")
        if self._http is None:
            # lazy: testing.http imports respx, needed only once a plan has http faults;
            # once imported, found in sys.modules (a ``from`` import costs ~7k instructions)
            http: Any = sys.modules.get("pytest_agentfaults.testing.http")
            if http is None:
                from pytest_agentfaults.testing import http  # noqa: PLC0415 - respx loads with the first http fault

            layer = http.HttpInjector(self)
            layer.start()
            self._http = layer
        return self._http

    # ------------------------------------------------------------------ matching

    def next_fault(self, key: tuple[Any, ...], candidates: Sequence[_F]) -> tuple[_F, int] | None:
        """Count one occurrence of ``key``; return the fault that hits it, if any.

        ``candidates`` are the faults on that target, in declared order: the first that is
        not done is the current one and sees the occurrence.
        """
        if self._epoch < floor.get():
            return None  # suspended by a fault_scope() entered after this plan's activation
        occurrence = self._occurrences.get(key, 0) + 1
        self._occurrences[key] = occurrence
        for fault in candidates:
            if fault.done:
                continue
            seen = fault.seen = fault.seen + 1
            if seen < fault.at:
                return None
            if fault.probability is not None:
                if self._rng is None:
                    self._rng = random.Random(self.seed)
                if self._rng.random() >= fault.probability:
                    return None
            fault.hits += 1
            return fault, occurrence
        return None

    def next_http_fault(
        self, method: str, url: str, *, any_host: bool = False, foreign: bool = False
    ) -> tuple[HTTPFault, int] | None:
        """Count one HTTP request (``method`` ``url``); return the fault that hits it, if any.

        The request is one occurrence of every http fault target it matches (a target is
        a ``(url, method)`` filter, see `Fault.matches_http`); targets are asked in declared
        order and the first that hits answers, so later ones do not see that request.
        ``foreign``: sent from a context this plan is not active in (a background thread):
        only faults with ``url=`` see it. Thread-safe: the loopback server asks from its
        own threads.
        """
        # the http faults with what they match on: the groups below follow from these
        http = [(f, f.url, f.method) for f in self.faults if isinstance(f, HTTPFault)]
        if not http:
            return None
        with self._http_lock:
            made = self.requests_made
            if len(made) < _REQUESTS_KEPT and (method, url) not in self._requests_seen:
                self._note_request(made, method, url)
            memo = self._http_groups
            if memo is None:
                memo = self._http_groups = {}
            known = memo.get((method, url, any_host, foreign))
            if known is not None and known[0] == http:
                groups = known[1]
            else:
                groups = {}
                for fault, where, _ in http:
                    if foreign and where is None:
                        continue  # about the code under test: not a background thread's
                    if fault.matches_http(method, url, any_host=any_host):
                        groups.setdefault(fault.key, []).append(fault)
                if len(memo) >= 64:  # a test's endpoints; bounded all the same
                    memo.clear()
                memo[(method, url, any_host, foreign)] = (http, groups)
            if foreign:  # for the message of a fault without url= that never fired
                self.foreign_requests += 1
            for key, candidates in groups.items():
                hit = self.next_fault(key, candidates)
                if hit is not None:
                    return hit
        return None

    def _note_request(self, made: dict[str, None], method: str, url: str) -> None:
        self._requests_seen.add((method, url))  # each redacted once
        for origin, shown in self.shown_origins.items():  # the loopback server's port
            if url.startswith(origin):
                url = shown + url[len(origin) :]
                break
        made[redact(f"{method} {url}")] = None

    #: (method, url, any_host) -> (the http faults then, their matching groups), per plan
    _http_groups: dict[tuple[Any, ...], tuple[list[Any], dict[Any, list[HTTPFault]]]] | None = None

    def next_call_id(self) -> str:
        """An id for a tool call an llm fault makes up: numbered per plan, so per test."""
        self._call_ids += 1
        return f"fault_call_{self._call_ids}"

    def record(self, fault: Fault, name: str, kind: str, occurrence: int) -> FiredFault:
        """Note that ``fault`` fired. ``name`` is redacted: it often holds a request's URL."""
        item = fired_fault(fault.target, redact(name), kind, occurrence, fault)
        self.fired.append(item)
        return item


class ActivePlan:
    """What `FaultPlan.active` returns: the plan switched on for a ``with`` block.

    A class rather than a ``@contextmanager``: no generator to make and run through for
    each test's plan.
    """

    __slots__ = ("_handle", "_plan")

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self._handle: object = None

    def __enter__(self) -> FaultPlan:
        self._handle = self._plan.activate()
        return self._plan

    def __exit__(self, *exc_info: object) -> None:
        handle, self._handle = self._handle, None
        self._plan.deactivate(handle)
