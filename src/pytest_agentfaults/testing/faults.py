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

import itertools
import math
import random
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._loop import (
    PROCEED,
    Attempt,
    Inject,
    Interceptor,
    ModelCall,
    install_interceptor,
    remove_interceptor,
)
from pytest_agentfaults.runtime.clock import RealClock
from pytest_agentfaults.runtime.redact import redact_text
from pytest_agentfaults.runtime.tools import ToolFailure
from pytest_agentfaults.testing import _current
from pytest_agentfaults.testing._current import current_plan
from pytest_agentfaults.testing.scripted import ScriptedModel, Step, fail, malformed

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.runtime.models.base import ModelResponse
    from pytest_agentfaults.testing.http import HttpInjector

__all__ = [
    "HTTP_KINDS",
    "LLM_KINDS",
    "TRANSIENT_LLM_KINDS",
    "Fault",
    "FaultPlan",
    "FiredFault",
    "HttpFaultBuilder",
    "LlmFaultBuilder",
    "LlmFaults",
    "ToolFaultBuilder",
    "current_plan",
    "parse_marker",
    "suspend_earlier_plans",
]

Target = Literal["tool", "http", "llm"]

HTTP_KINDS: Final = (
    "timeout",
    "connect_error",
    "read_error",
    "reset",
    "malformed_body",
    "truncated_stream",
)

# llm= kind -> the scripted step that produces it.
_LLM_STEPS: Final[dict[str, Callable[..., Step]]] = {
    "malformed_tool_args": malformed.tool_args,
    "rate_limit": fail.rate_limit,
    "server_error": lambda status=503: fail.http(status),
    "timeout": fail.timeout,
    "empty": malformed.empty,
    "blocked": malformed.blocked,
    "unknown_tool": malformed.unknown_tool,
    "not_json": malformed.not_json,
    "truncated": malformed.truncated,
    "connection": fail.connection,
}
LLM_KINDS: Final = tuple(_LLM_STEPS)
#: The llm= kinds that fail the model call: the scripted step it would have used stays
#: for the call that follows (the retry). The other kinds replace the call's answer.
TRANSIENT_LLM_KINDS: Final = frozenset({"rate_limit", "server_error", "timeout", "connection"})

_MISSING: Any = object()


@dataclass(eq=False)
class Fault:
    """One fault of a plan: what it targets, what it injects, when it hits."""

    target: Target
    name: str | None = None  # the tool name, or the llm kind
    action: str | None = None  # tool: raises/returns/delay; http: status/kind; llm: kind
    value: Any = None
    times: int = 1
    at: int = 1
    probability: float | None = None
    strict: bool = True
    url: str | None = None
    method: str | None = None
    retry_after: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    # progress, relative to when this fault became the current one on its target
    seen: int = 0
    hits: int = 0

    @property
    def done(self) -> bool:
        """Whether the fault has hit all the occurrences it was meant to."""
        return self.hits >= self.times

    @property
    def key(self) -> tuple[Any, ...]:
        """The target this fault counts occurrences of."""
        if self.target == "tool":
            return ("tool", self.name)
        if self.target == "http":
            return ("http", self.url, (self.method or "").upper() or None)
        return ("llm",)

    def matches_http(self, method: str, url: str, *, any_host: bool = False) -> bool:
        """Whether this http fault applies to a ``method`` request for ``url``.

        ``method=`` compares case-insensitively. ``url=`` matches the request's URL (query
        left out) exactly or as a prefix ending at a ``/``; a ``url=`` that starts with
        ``/`` matches the path alone, on any host. ``any_host=True`` compares only the
        paths of a ``url=`` that has one (``https://api.openai.com/v1/chat/completions``
        matches ``/v1/chat/completions`` on any host): the loopback `LLMServer` stands in
        for the provider's host.
        """
        if self.method is not None and self.method != method.upper():
            return False
        pattern = self.url
        if pattern is None:
            return True
        if pattern.startswith("/"):
            return _url_matches(pattern, _path_of(url))
        if any_host and _path_of(pattern) != "/":
            return _url_matches(_path_of(pattern), _path_of(url))
        return _url_matches(pattern, url)

    def describe(self) -> str:
        """A short description for messages: ``tool 'fetch' raises ConnectionError``.

        Redacted: every report, trace file and message shows a fault through this text.
        """
        return redact_text(self._describe())

    def _describe(self) -> str:
        if self.target == "tool":
            what = {"raises": "raises", "returns": "returns", "delay": "delays"}.get(
                self.action or "", "(no action)"
            )
            shown = self.value if self.action == "delay" else _short(self.value)
            return f"tool {self.name!r} {what} {shown}"
        if self.target == "http":
            where = " ".join(p for p in (self.method, self.url) if p) or "any request"
            kind = self.value if self.action == "status" else self.action
            after = "" if self.retry_after is None else f" (retry_after={self.retry_after:g})"
            return f"http {kind}{after} on {where}"
        return f"llm {self.name}"

    def fresh(self) -> Fault:
        """A copy that has not hit anything yet (a marker's fault, for one more test)."""
        twin = object.__new__(Fault)
        twin.__dict__.update(self.__dict__)
        twin.seen = twin.hits = 0
        return twin

    def check(self) -> None:
        """Raise `UsageError` when the fault is incomplete (a fluent chain left unfinished)."""
        __tracebackhide__ = True
        if self.action is None and self.target == "http":
            raise UsageError(
                f"{self.source or 'faults.http()'} says nothing to inject; finish it with "
                ".status(503), .timeout(), .connect_error(), .read_error(), .reset(), "
                ".malformed_body() or .truncated_stream()"
            )
        if self.action is None:
            raise UsageError(
                f"{self.source or 'fault'} on {self.target} {self.name!r} says nothing to "
                "inject; finish it with .raises(...), .returns(...) or .delay(...)"
            )

    def __repr__(self) -> str:
        return f"<Fault {self.describe()} times={self.times} at={self.at}>"


@dataclass(frozen=True, slots=True)
class FiredFault:
    """One injected fault: an item of ``faults.fired``."""

    target: Target
    name: str
    kind: str
    occurrence: int
    fault: Fault

    def __str__(self) -> str:
        return f"{self.target}:{self.name} {self.kind} (occurrence {self.occurrence})"


# ----------------------------------------------------------------------------- builders


class _Builder:
    """The fluent part every fault shares: times, at, probability, strict."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault

    def times(self, n: int) -> _Builder:
        """Hit ``n`` consecutive occurrences (default 1)."""
        self.fault.times = _positive_int(n, "times", self.fault.source)
        return self

    def at(self, n: int) -> _Builder:
        """Start hitting at occurrence ``n`` (1-based; default 1)."""
        self.fault.at = _positive_int(n, "at", self.fault.source)
        return self

    def probability(self, p: float) -> _Builder:
        """Hit each occurrence with probability ``p``, drawn from the plan's seed."""
        self.fault.probability = _probability(p, self.fault.source)
        return self

    def strict(self, value: bool = True) -> _Builder:
        """Fail the test at teardown if this fault never fired (default on)."""
        self.fault.strict = bool(value)
        return self


class ToolFaultBuilder(_Builder):
    """``faults.tool("fetch")``: then `raises`, `returns` or `delay`."""

    def raises(self, exc: BaseException | type[BaseException]) -> ToolFaultBuilder:
        """Raise ``exc`` instead of running the tool."""
        if not (isinstance(exc, BaseException) or _is_exception_class(exc)):
            raise UsageError(f"{self.fault.source}: raises= needs an exception, got {exc!r}")
        self.fault.action, self.fault.value = "raises", exc
        return self

    def returns(self, value: Any) -> ToolFaultBuilder:
        """Return ``value`` (an `af.ToolFailure` or any result) instead of running the tool."""
        self.fault.action, self.fault.value = "returns", value
        return self

    def delay(self, seconds: float) -> ToolFaultBuilder:
        """Add ``seconds`` of (virtual) latency before the tool runs; may trip its timeout."""
        value = _seconds_or_none(seconds, "delay", self.fault.source)
        if value is None:
            raise UsageError(
                f"{self.fault.source}: delay= must be a finite number of seconds >= 0, got None"
            )
        self.fault.action, self.fault.value = "delay", value
        return self

    def idempotent(self, value: bool = False) -> ToolFaultBuilder:
        """Declare whether the tool may run twice; ``False`` (the point) says it must not.

        For this test the runtime treats the tool as ``@af.tool(idempotent=False)`` (no
        re-run after an ambiguous failure), its events say ``idempotent=False``, and the
        verdict flags a re-run (``retried_non_idempotent``), also for tools of other
        frameworks that the runtime does not own.
        """
        if not isinstance(value, bool):
            raise UsageError(
                f"{self.fault.source}: idempotent= must be True or False, got {value!r}"
            )
        self.fault.options["idempotent"] = value
        return self


class HttpFaultBuilder(_Builder):
    """``faults.http(url=..., method=...)``: then a status or a transport failure."""

    def status(self, code: int, *, retry_after: float | None = None) -> HttpFaultBuilder:
        """Answer with HTTP ``code`` (``retry_after`` adds Retry-After / retry-after-ms)."""
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise UsageError(f"{self.fault.source}: status needs an HTTP code, got {code!r}")
        self.fault.action, self.fault.value = "status", code
        self.fault.retry_after = _seconds_or_none(retry_after, "retry_after", self.fault.source)
        return self

    def _kind(self, kind: str) -> HttpFaultBuilder:
        self.fault.action, self.fault.value = kind, kind
        return self

    def timeout(self) -> HttpFaultBuilder:
        """Time out (the ReadTimeout of the client's library)."""
        return self._kind("timeout")

    def connect_error(self) -> HttpFaultBuilder:
        """Fail to connect."""
        return self._kind("connect_error")

    def read_error(self) -> HttpFaultBuilder:
        """Fail while reading the response."""
        return self._kind("read_error")

    def reset(self) -> HttpFaultBuilder:
        """Drop the connection (connection reset by peer)."""
        return self._kind("reset")

    def malformed_body(self) -> HttpFaultBuilder:
        """Answer 200 with a body that is not what the client expects."""
        return self._kind("malformed_body")

    def truncated_stream(self) -> HttpFaultBuilder:
        """Cut a streamed answer in the middle."""
        return self._kind("truncated_stream")


class LlmFaultBuilder(_Builder):
    """An ``llm`` fault; chain `times`, `at`, `probability`, `strict`."""


class LlmFaults:
    """``faults.llm``: faults on every model call of every agent in the test."""

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan

    def _add(self, kind: str, **options: Any) -> LlmFaultBuilder:
        fault = Fault(
            target="llm", name=kind, action=kind, options=options, source=f"faults.llm.{kind}"
        )
        self._plan._register(fault)
        return LlmFaultBuilder(fault)

    def malformed(self, kind: str = "tool_args", **options: Any) -> LlmFaultBuilder:
        """A malformed answer.

        ``kind`` is ``tool_args``, ``empty``, ``blocked``, ``unknown_tool``, ``not_json`` or
        ``truncated``.
        """
        name = "malformed_tool_args" if kind == "tool_args" else kind
        if name not in _LLM_STEPS:
            valid = "tool_args, empty, blocked, unknown_tool, not_json, truncated"
            raise UsageError(f"faults.llm.malformed({kind!r}): unknown kind; use one of {valid}")
        return self._add(name, **options)

    def rate_limit(self, retry_after: float | None = None) -> LlmFaultBuilder:
        """A 429 RateLimitError."""
        _seconds_or_none(retry_after, "retry_after", "faults.llm.rate_limit()")
        return self._add("rate_limit", retry_after=retry_after)

    def server_error(self, status: int = 503) -> LlmFaultBuilder:
        """A 5xx ModelServerError."""
        return self._add("server_error", status=_error_status(status, "faults.llm.server_error()"))

    def timeout(self) -> LlmFaultBuilder:
        """A ModelTimeoutError."""
        return self._add("timeout")

    def connection(self) -> LlmFaultBuilder:
        """A ModelTransportError."""
        return self._add("connection")

    def empty(self) -> LlmFaultBuilder:
        """An empty answer with no tool calls."""
        return self._add("empty")

    def blocked(self, finish_reason: str = "content_filter") -> LlmFaultBuilder:
        """An answer blocked by the provider."""
        return self._add("blocked", finish_reason=finish_reason)

    def unknown_tool(self, name: str = "nonexistent_tool") -> LlmFaultBuilder:
        """A call to a tool that does not exist."""
        return self._add("unknown_tool", name=name)

    def not_json(self, text: str = "<html>Bad Gateway</html>") -> LlmFaultBuilder:
        """A body that is not JSON."""
        return self._add("not_json", text=text)


# ----------------------------------------------------------------------------- the plan


class FaultPlan:
    """The faults of one test (or one ``with plan.active():`` block), and what fired."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.faults: list[Fault] = []
        self.fired: list[FiredFault] = []
        self.llm = LlmFaults(self)
        self._rng: random.Random | None = None  # made on the first probabilistic draw
        self._occurrences: dict[tuple[Any, ...], int] = {}
        self._active = 0
        self._epoch = 0  # when it was last activated (see `suspend_earlier_plans`)
        self._http_hooks: list[Callable[[FaultPlan], Any]] = []
        #: Where ``http.request`` / ``http.fault`` events go when no agent run is in
        #: progress (an SDK client called straight from a test). The plugin points it at
        #: the test's trace; left None, the first HTTP event makes one on the default clock.
        self.http_recorder: Recorder | None = None
        self._http: HttpInjector | None = None
        #: set when the layer stops: the ``http_faults`` routes never requested (`check`)
        self.unused_routes: str | None = None
        # the loopback server counts occurrences from its own threads
        self._http_lock = threading.Lock()
        self._checks: list[Callable[[], None]] = []
        self._call_ids = 0
        #: origins that reports show under a stable name (``http://127.0.0.1:<port>`` of a
        #: bound `LLMServer` -> ``http://llm_server``): a port differs from run to run
        self.shown_origins: dict[str, str] = {}

    # ------------------------------------------------------------------ declaring

    def tool(self, name: str) -> ToolFaultBuilder:
        """A fault on the tool called ``name``, in every agent."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"faults.tool(name): give a tool name, got {name!r}")
        fault = Fault(target="tool", name=name, source=f"faults.tool({name!r})")
        self._register(fault)
        return ToolFaultBuilder(fault)

    def http(self, url: str | None = None, method: str | None = None) -> HttpFaultBuilder:
        """A fault on HTTP requests (all of them, or those matching ``url`` / ``method``)."""
        fault = Fault(
            target="http",
            url=url,
            method=method.upper() if method else None,
            source="faults.http("
            + ", ".join(f"{k}={v!r}" for k, v in (("url", url), ("method", method)) if v)
            + ")",
        )
        self._register(fault)
        if self._active:
            self.http_layer()  # declared in the test body, after activation
        return HttpFaultBuilder(fault)

    def add(self, fault: Fault) -> Fault:
        """Add a ready-made `Fault` (the marker does this)."""
        fault.check()
        self._register(fault)
        return fault

    def _register(self, fault: Fault) -> None:
        self.faults.append(fault)

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
        lines = [f"fault on {_what(f)} never fired ({f.source})" for f in self.unfired()]
        if self.unused_routes:
            lines.append(self.unused_routes)
        for check in list(self._checks):
            try:
                check()
            except AssertionError as exc:
                lines.append(str(exc))
        if lines:
            raise AssertionError(redact_text("\n".join(lines)))

    def of(self, target: Target) -> list[Fault]:
        """The faults on ``target`` ("tool", "http" or "llm")."""
        return [f for f in self.faults if f.target == target]

    def __repr__(self) -> str:
        return f"<FaultPlan {len(self.faults)} faults, {len(self.fired)} fired>"

    # ------------------------------------------------------------------ activation

    @contextmanager
    def active(self) -> Iterator[FaultPlan]:
        """Inject this plan's faults into every agent run (and HTTP request) in the block."""
        handle = self.activate()
        try:
            yield self
        finally:
            self.deactivate(handle)

    def activate(self) -> object:
        """Switch the plan on; returns a handle for `deactivate` (`active` does both)."""
        self._epoch = next(_epochs)
        for fault in self.faults:
            if fault.target != "llm":
                fault.check()
        interceptor = _PlanInterceptor(self)
        install_interceptor(interceptor)
        self._active += 1
        token = _current.enter(self)
        undo = [hook(self) for hook in self._http_hooks]
        try:
            if self.of("http"):
                self.http_layer()
        except BaseException:
            self.deactivate((interceptor, undo, token))
            raise
        return interceptor, undo, token

    def deactivate(self, handle: object) -> None:
        """Undo one `activate`."""
        interceptor: Interceptor
        undo: list[Any]
        token: Token[FaultPlan | None]
        interceptor, undo, token = handle  # type: ignore[misc]
        # Every step runs whatever an earlier one raised: nothing may stay switched on.
        steps: list[Callable[[], Any]] = [lambda: _current.leave(self, token)]
        steps.extend(stop for stop in reversed(undo) if callable(stop))
        self._active -= 1
        if not self._active and self._http is not None:
            layer, self._http = self._http, None
            steps.append(layer.stop)
        steps.append(lambda: remove_interceptor(interceptor))
        errors: list[Exception] = []
        for step in steps:
            try:
                step()
            except Exception as error:
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup("FaultPlan.deactivate: some layers failed to switch off", errors)

    def on_activate(self, hook: Callable[[FaultPlan], Any]) -> None:
        """Run ``hook(plan)`` whenever the plan is activated; it may return an undo callable.

        An extension point for injecting faults into layers the plan does not know; the
        plan's own http faults need no hook (see `http_layer`).
        """
        self._http_hooks.append(hook)

    def http_layer(self) -> HttpInjector:
        """Switch on (once) and return the in-process HTTP layer of this active plan.

        It injects the plan's http faults into every httpx / httpx2 request and records
        each attempt; the plan switches it on by itself when it has http faults, and the
        ``http_faults`` fixture when a test asks for the router. Only inside `active`.
        """
        if not self._active:
            raise UsageError("plan.http_layer() works inside `with plan.active():` only")
        if self._http is None:
            from pytest_agentfaults.testing.http import HttpInjector  # noqa: PLC0415 - respx

            layer = HttpInjector(self)
            layer.start()
            self._http = layer
        return self._http

    # ------------------------------------------------------------------ matching

    def next_fault(self, key: tuple[Any, ...], candidates: list[Fault]) -> tuple[Fault, int] | None:
        """Count one occurrence of ``key``; return the fault that hits it, if any.

        ``candidates`` are the faults on that target, in declared order: the first that is
        not done is the current one and sees the occurrence.
        """
        if self._epoch < _floor.get():
            return None  # suspended by a fault_scope() entered after this plan's activation
        occurrence = self._occurrences.get(key, 0) + 1
        self._occurrences[key] = occurrence
        for fault in candidates:
            if fault.done:
                continue
            fault.seen += 1
            if fault.seen < fault.at:
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
        self, method: str, url: str, *, any_host: bool = False
    ) -> tuple[Fault, int] | None:
        """Count one HTTP request (``method`` ``url``); return the fault that hits it, if any.

        The request is one occurrence of every http fault target it matches (a target is
        a ``(url, method)`` filter, see `Fault.matches_http`); targets are asked in declared
        order and the first that hits answers, so later ones do not see that request.
        Thread-safe: the loopback server asks from its own threads.
        """
        http = [f for f in self.faults if f.target == "http"]
        if not http:
            return None
        with self._http_lock:
            groups: dict[tuple[Any, ...], list[Fault]] = {}
            for fault in http:
                if fault.matches_http(method, url, any_host=any_host):
                    groups.setdefault(fault.key, []).append(fault)
            for key, candidates in groups.items():
                hit = self.next_fault(key, candidates)
                if hit is not None:
                    return hit
        return None

    def next_call_id(self) -> str:
        """An id for a tool call an llm fault makes up: numbered per plan, so per test."""
        self._call_ids += 1
        return f"fault_call_{self._call_ids}"

    def record(self, fault: Fault, name: str, kind: str, occurrence: int) -> FiredFault:
        """Note that ``fault`` fired. ``name`` is redacted: it often holds a request's URL."""
        item = FiredFault(fault.target, redact_text(name), kind, occurrence, fault)
        self.fired.append(item)
        return item


_epochs = itertools.count(1)
_floor: ContextVar[int] = ContextVar("agentfaults_plan_floor", default=0)


class suspend_earlier_plans:
    """While entered, only ``plan`` and plans activated after it inject faults.

    `fault_scope` enters this right after activating its fresh plan, so the enclosing
    test's plan sits out the block. A ContextVar: other threads (the loopback server's)
    and other contexts are not affected.
    """

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan
        self._token: object = None

    def __enter__(self) -> None:
        self._token = _floor.set(self._plan._epoch)

    def __exit__(self, *exc_info: object) -> None:
        _floor.reset(self._token)  # type: ignore[arg-type]


class _PlanInterceptor(Interceptor):
    """Applies a plan's tool and llm faults at the runtime's interception seam."""

    def __init__(self, plan: FaultPlan) -> None:
        self.plan = plan

    def tool_attempt(self, attempt: Attempt) -> Any:
        name = attempt.tool.name
        candidates = [f for f in self.plan.faults if f.target == "tool" and f.name == name]
        if not candidates:
            return PROCEED
        hit = self.plan.next_fault(("tool", name), candidates)
        if hit is None:
            return PROCEED
        fault, occurrence = hit
        fault.check()
        self.plan.record(fault, name, fault.action or "", occurrence)
        attempt.emit(
            "tool.fault",
            tool=name,
            call_id=attempt.call_id,
            attempt=attempt.number,
            status=fault.action,
            detail=fault.describe(),
            **({"idempotent": False} if self.declares_non_idempotent(name) else {}),
        )
        if fault.action == "raises":
            exc = fault.value
            return Inject(exc() if isinstance(exc, type) else exc)
        if fault.action == "returns":
            return fault.value
        # delay: latency, then the tool runs, unless the latency trips the attempt deadline
        clock = attempt.clock
        if isinstance(clock, RealClock):
            clock.sleep(fault.value)
        else:
            advance = getattr(clock, "advance", None)
            if advance is not None:
                advance(fault.value)
            else:
                clock.sleep(fault.value)
        return PROCEED

    def declares_non_idempotent(self, tool: str) -> bool:
        return any(
            f.target == "tool" and f.name == tool and f.options.get("idempotent") is False
            for f in self.plan.faults
        )

    def model_call(self, call: ModelCall) -> Any:
        candidates = self.plan.of("llm")
        if not candidates:
            return PROCEED
        hit = self.plan.next_fault(("llm",), candidates)
        if hit is None:
            return PROCEED
        fault, occurrence = hit
        model = call.model
        model_name = str(getattr(model, "name", type(model).__name__))
        kind = fault.name or ""
        self.plan.record(fault, model_name, kind, occurrence)
        call.request.emit("llm.fault", status=kind, detail=f"{fault.describe()} on {model_name}")
        step = _LLM_STEPS[kind](**_step_options(fault))
        return _respond_instead(
            model, call, step, model_name, self.plan, kind not in TRANSIENT_LLM_KINDS
        )


def _respond_instead(
    model: Any, call: ModelCall, step: Step, model_name: str, plan: FaultPlan, uses_step: bool
) -> ModelResponse | Inject:
    """Answer ``call`` with ``step`` in place of the model.

    A transient kind fails the call and leaves the scripted step for the next call; a
    malformed kind replaces the answer and uses the step up (``uses_step``). A step that
    fails (a 503, a timeout ...) comes back as `Inject(error)`.
    """
    try:
        if isinstance(model, ScriptedModel):
            return model.substitute(call.request, step, uses_step=uses_step)
        return step.respond(call.request, model=model_name, next_call_id=plan.next_call_id)
    except Exception as exc:  # the injected failure itself
        return Inject(exc)


def _step_options(fault: Fault) -> dict[str, Any]:
    options = {k: v for k, v in fault.options.items() if v is not None}
    if fault.name == "rate_limit" and fault.retry_after is not None:
        options.setdefault("retry_after", fault.retry_after)
    return options


# ----------------------------------------------------------------------------- the marker

_COMMON: Final = ("times", "at", "probability", "strict")
_VALID_KEYS: Final[dict[str, tuple[str, ...]]] = {
    "tool": ("tool", "raises", "returns", "delay", "idempotent", *_COMMON),
    "http": ("http", "url", "method", "retry_after", *_COMMON),
    "llm": ("llm", "retry_after", "status", "finish_reason", "name", "text", *_COMMON),
}


def parse_marker(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], *, label: str = "inject_fault"
) -> Fault:
    """Turn ``@pytest.mark.inject_fault(...)`` arguments into a validated `Fault`.

    Bad arguments raise `UsageError` naming the marker, the bad key and the valid ones.
    """
    shown = _marker_repr(label, args, kwargs)
    if args:
        raise UsageError(
            f"{shown}: takes keyword arguments only, such as tool='fetch', http=503 or "
            "llm='rate_limit'"
        )
    targets = [t for t in ("tool", "http", "llm") if t in kwargs]
    if len(targets) != 1:
        problem = "has no target" if not targets else f"has {len(targets)} targets"
        raise UsageError(
            f"{shown} {problem}: give exactly one of tool=..., http=..., llm=... "
            "(stack several markers for several faults)"
        )
    target = targets[0]
    valid = _VALID_KEYS[target]
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise UsageError(
            f"{shown}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))} for a {target} fault; "
            f"valid keys: {', '.join(valid)}"
        )
    fault = Fault(target=target, source=shown)  # type: ignore[arg-type]
    fault.times = _positive_int(kwargs.get("times", 1), "times", shown)
    fault.at = _positive_int(kwargs.get("at", 1), "at", shown)
    if kwargs.get("probability") is not None:
        fault.probability = _probability(kwargs["probability"], shown)
    strict = kwargs.get("strict", True)
    if not isinstance(strict, bool):
        raise UsageError(f"{shown}: strict= must be True or False, got {strict!r}")
    fault.strict = strict
    if target == "tool":
        _parse_tool(fault, kwargs, shown)
    elif target == "http":
        _parse_http(fault, kwargs, shown)
    else:
        _parse_llm(fault, kwargs, shown)
    return fault


def _parse_tool(fault: Fault, kwargs: Mapping[str, Any], shown: str) -> None:
    name = kwargs["tool"]
    if not isinstance(name, str) or not name:
        raise UsageError(f"{shown}: tool= must be a tool name (str), got {name!r}")
    fault.name = name
    actions = [k for k in ("raises", "returns", "delay") if k in kwargs]
    if len(actions) != 1:
        raise UsageError(
            f"{shown}: a tool fault needs exactly one of raises=..., returns=..., delay=... "
            f"(got {', '.join(actions) or 'none'})"
        )
    builder = ToolFaultBuilder(fault)
    builder.fault.source = shown
    getattr(builder, actions[0])(kwargs[actions[0]])
    if "idempotent" in kwargs:
        builder.idempotent(kwargs["idempotent"])


def _parse_http(fault: Fault, kwargs: Mapping[str, Any], shown: str) -> None:
    spec = kwargs["http"]
    builder = HttpFaultBuilder(fault)
    url, method = kwargs.get("url"), kwargs.get("method")
    if url is not None and not isinstance(url, str):
        raise UsageError(f"{shown}: url= must be a str, got {url!r}")
    if method is not None and not isinstance(method, str):
        raise UsageError(f"{shown}: method= must be a str such as 'POST', got {method!r}")
    fault.url, fault.method = url, method.upper() if method else None
    if isinstance(spec, int) and not isinstance(spec, bool):
        builder.status(spec, retry_after=kwargs.get("retry_after"))
    elif spec in HTTP_KINDS:
        if kwargs.get("retry_after") is not None:
            raise UsageError(f"{shown}: retry_after= only goes with an HTTP status, like http=429")
        builder._kind(spec)
    else:
        raise UsageError(
            f"{shown}: http= must be a status code (e.g. 503) or one of "
            f"{', '.join(HTTP_KINDS)}; got {spec!r}"
        )


def _parse_llm(fault: Fault, kwargs: Mapping[str, Any], shown: str) -> None:
    kind = kwargs["llm"]
    if kind not in _LLM_STEPS:
        raise UsageError(f"{shown}: llm= must be one of {', '.join(LLM_KINDS)}; got {kind!r}")
    fault.name = fault.action = kind
    allowed = {
        "rate_limit": ("retry_after",),
        "server_error": ("status",),
        "blocked": ("finish_reason",),
        "unknown_tool": ("name",),
        "not_json": ("text",),
    }.get(kind, ())
    for key in ("retry_after", "status", "finish_reason", "name", "text"):
        if key in kwargs and key not in allowed:
            raise UsageError(f"{shown}: {key}= does not apply to llm={kind!r}")
        if key in kwargs:
            fault.options[key] = kwargs[key]
    if kind == "rate_limit":
        fault.retry_after = _seconds_or_none(kwargs.get("retry_after"), "retry_after", shown)
    if "status" in fault.options:
        fault.options["status"] = _error_status(fault.options["status"], shown)
    try:
        _LLM_STEPS[kind](**_step_options(fault))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{shown}: {exc}") from exc


# ----------------------------------------------------------------------------- helpers


def _positive_int(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{where}: {name}= must be an int >= 1, got {value!r}")
    return value


def _probability(value: Any, where: str) -> float:
    # `not 0 < value <= 1` is also true of NaN and of the infinities
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise UsageError(f"{where}: probability= must be a number in (0, 1], got {value!r}")
    return float(value)


def _seconds_or_none(value: Any, name: str, where: str) -> float | None:
    """``value`` as seconds; NaN, the infinities and negatives are a `UsageError`."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise UsageError(f"{where}: {name}= must be a finite number of seconds >= 0, got {value!r}")
    return float(value)


def _error_status(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 599:
        raise UsageError(
            f"{where}: status= must be an HTTP error status (an int from 400 to 599), got {value!r}"
        )
    return value


def _is_exception_class(value: object) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+>")


def without_addresses(text: str) -> str:
    """``text`` with default reprs' addresses left out: ``<Box object>``, the same every run."""
    return _ADDRESS.sub(">", text) if " at 0x" in text else text


def _short(value: object) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}({str(value)!r})"
    if _is_exception_class(value):
        return str(getattr(value, "__name__", value))
    if isinstance(value, ToolFailure):
        return f"ToolFailure({value.error!r})"
    # redacted before it is cut (a key cut short loses its shape); no per-run address
    text = without_addresses(redact_text(repr(value)))
    return text if len(text) <= 60 else text[:57] + "..."


def _path_of(url: str) -> str:
    """The path of ``url`` (``/v1/messages``), or ``url`` itself when it is a path."""
    if url.startswith("/"):
        return url.split("?", 1)[0]
    _, sep, rest = url.partition("://")
    if not sep:
        return url
    slash = rest.find("/")
    return rest[slash:].split("?", 1)[0] if slash >= 0 else "/"


def _url_matches(pattern: str, url: str) -> bool:
    url = url.split("?", 1)[0]
    pattern = pattern.split("?", 1)[0]
    if pattern != "/":
        pattern = pattern.rstrip("/")
    if url == pattern or url.rstrip("/") == pattern:
        return True
    return url.startswith(pattern if pattern.endswith("/") else pattern + "/")


def _what(fault: Fault) -> str:
    if fault.target == "tool":
        return f"tool {fault.name!r}"
    if fault.target == "http":
        where = " ".join(p for p in (fault.method, fault.url) if p)
        return f"http {where}".strip() if where else "http (any request)"
    return f"llm {fault.name!r}"


def _marker_repr(label: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()]
    return f"@pytest.mark.{label}({', '.join(parts)})"
