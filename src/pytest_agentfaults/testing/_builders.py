"""The fluent builders of a `FaultPlan`: ``faults.tool(...)``, ``faults.http(...)``, ``faults.llm``.

```python
faults.tool("fetch").raises(ConnectionError("reset")).times(2)
faults.http(url="/v1/messages").status(429, retry_after=2)
faults.llm.rate_limit(retry_after=2).at(1)
```
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._fault import (
    LLM_FAULT_KINDS,
    MALFORMED_LLM_KINDS,
    NOTHING,
    FaultBase,
    HTTPFault,
    LLMFault,
    ToolFault,
    is_exception_class,
    short,
)
from pytest_agentfaults.testing._wire import RETRY_AFTER_FORMATS

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import FaultPlan

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "HttpFaultBuilder",
    "LlmFaultBuilder",
    "LlmFaults",
    "ToolFaultBuilder",
    "error_status",
    "positive_int",
    "probability_value",
    "seconds_or_none",
]


def no_method(owner: object, name: str, where: str) -> AttributeError:
    """The error for ``where.name``, a method ``owner`` does not have: the closest, and all."""
    methods = sorted(n for n in dir(type(owner)) if not n.startswith("_"))
    close = difflib.get_close_matches(name, methods, n=1)
    hint = f"; did you mean .{close[0]}()?" if close else ""
    listed = ", ".join(f".{m}()" for m in methods)
    # name=None: Python 3.12+ would append its own "Did you mean: ...?" to ours
    message = f"{where} has no method .{name}(){hint} (its methods: {listed})"
    return AttributeError(message, name=None, obj=None)


def _noted(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, which adds its call to the fault's ``chain`` once it has taken it."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: _Builder, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        result = method(self, *args, **kwargs)
        if self.noting:
            shown = [short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()]
            self.fault.chain += f".{name}({', '.join(shown)})"
        return result

    return call


class _Builder:
    """The fluent part every fault shares: times, at, probability, strict."""

    fault: FaultBase
    #: whether calls are the test's own (a marker builds its fault through them unnoted)
    noting = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every public method of a builder notes its call (`FaultBase.written`)."""
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and callable(value):
                setattr(cls, name, _noted(value))

    if not TYPE_CHECKING:  # a type checker still flags a typo: to it, there is no such hook

        def __getattr__(self, name: str) -> Any:
            __tracebackhide__ = True
            if name.startswith("_") or name == "fault":
                raise AttributeError(name)
            raise no_method(self, name, self.fault.source)

    @_noted
    def times(self, n: int) -> _Builder:
        """Hit ``n`` consecutive occurrences (default 1)."""
        self.fault.times = positive_int(n, "times", self.fault.source)
        return self

    @_noted
    def at(self, n: int) -> _Builder:
        """Start hitting at occurrence ``n`` (1-based; default 1)."""
        self.fault.at = positive_int(n, "at", self.fault.source)
        return self

    @_noted
    def probability(self, p: float) -> _Builder:
        """Hit each occurrence with probability ``p``, drawn from the plan's seed."""
        self.fault.probability = probability_value(p, self.fault.source)
        return self

    @_noted
    def strict(self, value: bool = True) -> _Builder:
        """Fail the test at teardown if this fault never fired (default on)."""
        if not isinstance(value, bool):  # strict("false") would read as True
            raise UsageError(f"{self.fault.source}: strict() takes True or False, got {value!r}")
        self.fault.strict = value
        return self


class ToolFaultBuilder(_Builder):
    """``faults.tool("fetch")``: then `raises`, `returns` or `delay`."""

    def __init__(self, fault: ToolFault) -> None:
        self.fault: ToolFault = fault

    def raises(self, exc: BaseException | type[BaseException]) -> ToolFaultBuilder:
        """Raise ``exc`` instead of running the tool."""
        __tracebackhide__ = True
        if not (isinstance(exc, BaseException) or is_exception_class(exc)):
            raise UsageError(f"{self.fault.source}: raises= needs an exception, got {exc!r}")
        self._one_action("raises")
        fault = self.fault
        fault.raises, fault.returns, fault.delay = exc, NOTHING, None
        return self

    def returns(self, value: Any) -> ToolFaultBuilder:
        """Return ``value`` (an `af.ToolFailure` or any result) instead of running the tool."""
        __tracebackhide__ = True
        where = self.fault.source
        if isinstance(value, BaseException) or is_exception_class(value):
            # fed back to the model as a successful result, the test would pass untouched
            raise UsageError(
                f"{where}: returns={value!r} is an exception, which the tool would return as "
                f"its result; to make the tool fail, use raises={value!r}, or "
                "returns=af.ToolFailure(error=...) for an expected failure"
            )
        if value is ToolFailure:
            raise UsageError(
                f"{where}: returns=af.ToolFailure is the class; give an instance, "
                "returns=af.ToolFailure(error='what went wrong')"
            )
        self._one_action("returns")
        fault = self.fault
        fault.raises, fault.returns, fault.delay = None, value, None
        return self

    def _one_action(self, action: str) -> None:
        """A second action on one fault would silently replace the first: refused."""
        __tracebackhide__ = True
        done = self.fault.action
        if done is not None:
            raise UsageError(
                f"{self.fault.source}: .{action}() after .{done}(): a fault does one thing; "
                f"declare another fault ({self.fault.source}) for the next occurrences"
            )

    def delay(self, seconds: float) -> ToolFaultBuilder:
        """Add ``seconds`` of (virtual) latency before the tool runs; may trip its timeout."""
        value = seconds_or_none(seconds, "delay", self.fault.source)
        if value is None:
            raise UsageError(
                f"{self.fault.source}: delay= must be a finite number of seconds >= 0, got None"
            )
        self._one_action("delay")
        fault = self.fault
        fault.raises, fault.returns, fault.delay = None, NOTHING, value
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
        self.fault.idempotent = value
        return self


class HttpFaultBuilder(_Builder):
    """``faults.http(url=..., method=...)``: then a status or a transport failure."""

    def __init__(self, fault: HTTPFault) -> None:
        self.fault: HTTPFault = fault

    def status(
        self,
        code: int,
        *,
        retry_after: float | None = None,
        retry_after_format: str | None = None,
        should_retry: bool | None = None,
    ) -> HttpFaultBuilder:
        """Answer with HTTP ``code``.

        ``retry_after`` adds ``Retry-After`` and ``retry-after-ms`` (``retry_after_format``
        ``"seconds"`` / ``"ms"`` / ``"date"`` sends only one, or the date form);
        ``should_retry`` adds ``x-should-retry: true|false``.
        """
        __tracebackhide__ = True
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise UsageError(f"{self.fault.source}: status needs an HTTP code, got {code!r}")
        self._reset(None)
        self.fault.status = code
        return self._retry_options(retry_after, retry_after_format, should_retry)

    def _reset(self, kind: str | None) -> HttpFaultBuilder:
        __tracebackhide__ = True
        fault = self.fault
        if fault.status is not None or fault.kind is not None:  # would silently replace it
            done = f"status({fault.status})" if fault.status is not None else f"{fault.kind}()"
            raise UsageError(
                f"{fault.source}: .{'status' if kind is None else kind}() after .{done}: a "
                f"fault does one thing; declare another fault ({fault.source}) for the next "
                "requests"
            )
        fault.status, fault.kind, fault.kind_status = None, kind, None
        fault.retry_after = fault.retry_after_format = fault.should_retry = None
        fault.after = fault.delay = None
        return self

    _kind = _reset

    def _retry_options(
        self, retry_after: Any, retry_after_format: Any, should_retry: Any
    ) -> HttpFaultBuilder:
        where = self.fault.source
        seconds = seconds_or_none(retry_after, "retry_after", where)
        if retry_after_format is not None:
            if retry_after_format not in RETRY_AFTER_FORMATS:
                raise UsageError(
                    f"{where}: retry_after_format= must be one of "
                    f"{', '.join(map(repr, RETRY_AFTER_FORMATS))}, got {retry_after_format!r}"
                )
            if seconds is None:
                raise UsageError(
                    f"{where}: retry_after_format={retry_after_format!r} says how to send "
                    "retry_after=, which is missing; add retry_after=<seconds>"
                )
        if should_retry is not None and not isinstance(should_retry, bool):
            raise UsageError(f"{where}: should_retry= must be True or False, got {should_retry!r}")
        fault = self.fault
        fault.retry_after, fault.should_retry = seconds, should_retry
        fault.retry_after_format = None if retry_after_format == "both" else retry_after_format
        return self

    def timeout(self) -> HttpFaultBuilder:
        """Time out (the ReadTimeout of the client's library)."""
        return self._reset("timeout")

    def connect_error(self) -> HttpFaultBuilder:
        """Fail to connect."""
        return self._reset("connect_error")

    def read_error(self) -> HttpFaultBuilder:
        """Fail while reading the response."""
        return self._reset("read_error")

    def reset(self) -> HttpFaultBuilder:
        """Drop the connection (connection reset by peer)."""
        return self._reset("reset")

    def malformed_body(self) -> HttpFaultBuilder:
        """Answer 200 with a body that is not what the client expects."""
        return self._reset("malformed_body")

    def truncated_stream(self, *, after: int | None = None) -> HttpFaultBuilder:
        """Cut a streamed answer: after ``after`` events (default: half of them)."""
        self._reset("truncated_stream").fault.after = _events(after, self.fault.source)
        return self

    def not_json(self) -> HttpFaultBuilder:
        """Answer 200 with a JSON content type and a body that is not JSON (a proxy's text)."""
        return self._reset("not_json")

    def proxy_html(
        self,
        status: int = 502,
        *,
        retry_after: float | None = None,
        retry_after_format: str | None = None,
        should_retry: bool | None = None,
    ) -> HttpFaultBuilder:
        """Answer a proxy's HTML error page with the 5xx ``status`` (default 502)."""
        where = self.fault.source
        if isinstance(status, bool) or not isinstance(status, int) or not 500 <= status <= 599:
            raise UsageError(
                f"{where}: proxy_html takes a 5xx status= (a proxy's error page), got {status!r}"
            )
        self._reset("proxy_html").fault.kind_status = status
        return self._retry_options(retry_after, retry_after_format, should_retry)

    def stall(self, *, after: int | None = None) -> HttpFaultBuilder:
        """Send ``after`` events of a stream (default: half), then stall.

        Nothing more comes until the client gives up: its read timeout fires (at once
        in-process; on ``llm_server`` in real time, at most ``timeout_hold``).
        """
        self._reset("stall").fault.after = _events(after, self.fault.source)
        return self

    def slow_first_token(self, *, delay: float = 30.0) -> HttpFaultBuilder:
        """Hold the answer's first chunk ``delay`` seconds, then send the answer.

        In-process the wait is virtual; a client whose read timeout is shorter than
        ``delay`` times out instead. On ``llm_server`` it waits in real time, at most
        ``timeout_hold``.
        """
        seconds = seconds_or_none(delay, "delay", self.fault.source)
        if not seconds:
            raise UsageError(
                f"{self.fault.source}: slow_first_token needs delay= seconds > 0, got {delay!r}"
            )
        self._reset("slow_first_token").fault.delay = seconds
        return self

    def context_length(self, *, should_retry: bool | None = None) -> HttpFaultBuilder:
        """Answer the provider's real context-length-exceeded 400."""
        return self._reset("context_length")._retry_options(None, None, should_retry)  # noqa: SLF001

    def quota(
        self,
        *,
        retry_after: float | None = None,
        retry_after_format: str | None = None,
        should_retry: bool | None = None,
    ) -> HttpFaultBuilder:
        """Answer the provider's per-minute quota 429 (its body and rate-limit headers)."""
        self._reset("quota")
        return self._retry_options(retry_after, retry_after_format, should_retry)


def _events(after: Any, where: str) -> int | None:
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise UsageError(
            f"{where}: after= must be a number of stream events (an int >= 0), got {after!r}"
        )
    return after


class LlmFaultBuilder(_Builder):
    """An ``llm`` fault; chain `times`, `at`, `probability`, `strict`."""

    def __init__(self, fault: LLMFault) -> None:
        self.fault: LLMFault = fault

    def agent(self, name: str) -> LlmFaultBuilder:
        """Hit only the model calls of the agent called ``name`` (e.g. a fixer's)."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"{self.fault.source}: agent= needs an agent's name, got {name!r}")
        self.fault.agent = name
        return self


class LlmFaults:
    """``faults.llm``: faults on every model call of every agent in the test."""

    def __init__(self, plan: FaultPlan) -> None:
        self._plan = plan

    if not TYPE_CHECKING:  # as for `_Builder`

        def __getattr__(self, name: str) -> Any:
            __tracebackhide__ = True
            if name.startswith("_"):
                raise AttributeError(name)
            raise no_method(self, name, "faults.llm")

    def _add(self, kind: str, called: str = "", **options: Any) -> LlmFaultBuilder:
        __tracebackhide__ = True
        if not called:  # the call as the test wrote it: options left at their defaults unsaid
            said = inspect.signature(getattr(LlmFaults, kind)).parameters
            given = [f"{k}={short(v)}" for k, v in options.items() if v != said[k].default]
            called = f"faults.llm.{kind}({', '.join(given)})"
        source = called
        fault = LLMFault(kind=kind, options=options, source=source)
        try:  # checked here, as the marker's are, not at the first model call
            fault.step()
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{source}: {exc}") from None
        self._plan.add(fault)
        return LlmFaultBuilder(fault)

    def malformed(self, kind: str = "tool_args", **options: Any) -> LlmFaultBuilder:
        """A malformed answer.

        ``kind`` is ``tool_args``, ``empty``, ``blocked``, ``unknown_tool``, ``not_json`` or
        ``truncated``.
        """
        name = "malformed_tool_args" if kind == "tool_args" else kind
        if name not in LLM_FAULT_KINDS or LLM_FAULT_KINDS[name].transient:
            valid = ", ".join(MALFORMED_LLM_KINDS)
            raise UsageError(f"faults.llm.malformed({kind!r}): unknown kind; use one of {valid}")
        shown = [short(kind)] + [f"{k}={short(v)}" for k, v in options.items()]
        return self._add(name, f"faults.llm.malformed({', '.join(shown)})", **options)

    def rate_limit(self, retry_after: float | None = None) -> LlmFaultBuilder:
        """A 429 RateLimitError."""
        seconds_or_none(retry_after, "retry_after", "faults.llm.rate_limit()")
        return self._add("rate_limit", retry_after=retry_after)

    def server_error(self, status: int = 503) -> LlmFaultBuilder:
        """A 5xx ModelServerError."""
        return self._add("server_error", status=error_status(status, "faults.llm.server_error()"))

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


# ----------------------------------------------------------------------------- validators


def positive_int(value: Any, name: str, where: str) -> int:
    """``value`` as ``times=`` / ``at=``: an int >= 1, else a `UsageError` naming ``where``."""
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{where}: {name}= must be an int >= 1, got {value!r}")
    return value


def probability_value(value: Any, where: str) -> float:
    """``value`` as ``probability=``: a number in (0, 1]."""
    __tracebackhide__ = True
    # `not 0 < value <= 1` is also true of NaN and of the infinities
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise UsageError(f"{where}: probability= must be a number in (0, 1], got {value!r}")
    return float(value)


def seconds_or_none(value: Any, name: str, where: str) -> float | None:
    """``value`` as seconds; NaN, the infinities and negatives are a `UsageError`."""
    __tracebackhide__ = True
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


def error_status(value: Any, where: str) -> int:
    """``value`` as an HTTP error status (400 to 599)."""
    __tracebackhide__ = True
    if isinstance(value, bool) or not isinstance(value, int) or not 400 <= value <= 599:
        raise UsageError(
            f"{where}: status= must be an HTTP error status (an int from 400 to 599), got {value!r}"
        )
    return value
