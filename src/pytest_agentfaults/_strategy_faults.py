"""Faults to inject: `tool_exceptions`, `http_faults` and whole `fault_plans`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults._strategy_common import ToolLike, one_or_many, tool_names
from pytest_agentfaults.errors import ToolExecutionError, UsageError, classify
from pytest_agentfaults.testing.faults import (
    HTTP_KINDS,
    LLM_KINDS,
    Fault,
    FaultPlan,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["fault_plans", "http_faults", "tool_exceptions"]

# What tools raise in practice; retryability is whatever `classify` says of each.
_TOOL_EXCEPTIONS: Final[tuple[tuple[type[Exception], str], ...]] = (
    (ConnectionError, "connection reset by peer"),
    (TimeoutError, "read timed out after 10s"),
    (ConnectionRefusedError, "[Errno 111] Connection refused"),
    (OSError, "[Errno 101] Network is unreachable"),
    (RuntimeError, "503 Service Unavailable"),
    (RuntimeError, "rate limit exceeded; retry later"),
    (Exception, "upstream temporarily unavailable"),
    (RuntimeError, "unexpected end of data"),
    (ValueError, "invalid literal for int() with base 10: 'abc'"),
    (KeyError, "user_id"),
    (TypeError, "expected str, got NoneType"),
    (PermissionError, "[Errno 13] Permission denied: '/etc/shadow'"),
    (LookupError, "no such record"),
    (RuntimeError, "401 Unauthorized: invalid API key"),
)


_HARD_FAILURES: Final[tuple[tuple[type[Exception], str], ...]] = (
    (ToolExecutionError, "payment declined: card blocked"),
    (ToolExecutionError, "refusing to delete a production table"),
)


def tool_exceptions(
    *, retryable: bool | None = None, hard: bool = False
) -> SearchStrategy[BaseException]:
    """Exception instances a tool might raise (a new instance for every example).

    ``retryable=True`` keeps those `af.classify` calls retryable (``ConnectionError``,
    ``TimeoutError``, a "503" message ...), ``False`` those it never retries
    (``ValueError``, ``KeyError``, ``PermissionError``, an auth message ...), None both.
    ``hard=True`` adds ``ToolExecutionError``, the hard failure that ends a run at once.
    """
    specs = [
        (kind, message)
        for kind, message in _TOOL_EXCEPTIONS
        if retryable is None or classify(kind(message)).retryable is retryable
    ]
    if hard and retryable is not True:
        specs.extend(_HARD_FAILURES)

    choices = st.sampled_from(specs)

    # A composite, not .map: the example prints as the exception, not as a call.
    @st.composite
    def build(draw: st.DrawFn) -> BaseException:
        kind, message = draw(choices)
        return kind(message)

    return build()


# --------------------------------------------------------------------------- http faults

_HTTP_STATUSES: Final = (503, 429, 500, 502, 504, 529, 408, 400, 401, 403, 404)
_RETRY_AFTER: Final = st.one_of(st.none(), st.sampled_from((1.0, 0.5, 2.0, 30.0, 120.0)))


def http_faults(
    *,
    statuses: int | Iterable[int] | None = None,
    kinds: str | Iterable[str] | None = None,
    url: str | None = None,
    method: str | None = None,
    max_times: int = 3,
) -> SearchStrategy[dict[str, Any]]:
    """HTTP fault specs: keyword dicts for ``@pytest.mark.inject_fault(**spec)``.

    Each example is ``{"http": 503}``, ``{"http": 429, "retry_after": 2.0}`` or
    ``{"http": "timeout"}`` (a status, or one of ``timeout``, ``connect_error``,
    ``read_error``, ``reset``, ``malformed_body``, ``truncated_stream``), plus ``times``
    and ``at`` when not 1, and the ``url`` / ``method`` you pass. Add one to a plan with
    ``faults.inject_fault(**spec)`` (checked as the marker is), or let `fault_plans` do it
    (``http=True``).

    ``statuses`` defaults to retryable (503, 429, 500, 502, 504, 529, 408) and final (400,
    401, 403, 404) codes; ``kinds`` to the six above; pass an empty list to leave either
    out, or name the newer kinds (``stall``, ``quota`` ...) to draw them too.
    """
    if isinstance(statuses, int):  # statuses=503: one status
        statuses = [statuses]
    codes = tuple(_HTTP_STATUSES if statuses is None else statuses)
    failures = tuple(_DEFAULT_HTTP_KINDS if kinds is None else one_or_many(kinds))
    for code in codes:
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise UsageError(f"http_faults(statuses=...): {code!r} is not an HTTP status")
    for kind in failures:
        if kind not in HTTP_KINDS:
            raise UsageError(
                f"http_faults(kinds=...): unknown kind {kind!r}; use {', '.join(HTTP_KINDS)}"
            )
    if not codes and not failures:
        raise UsageError("http_faults(): statuses and kinds are both empty; nothing to draw")
    if isinstance(max_times, bool) or not isinstance(max_times, int) or max_times < 1:
        raise UsageError(f"http_faults(max_times={max_times!r}): give an int >= 1")
    targets = st.sampled_from((*codes, *failures))  # statuses first: shrinks to a 503
    where = {k: v for k, v in (("url", url), ("method", method)) if v is not None}
    times = st.integers(min_value=1, max_value=max_times)
    ats = st.integers(min_value=1, max_value=3)

    # A composite, not st.builds / .map: Hypothesis prints a built or mapped value as the
    # call that made it; a composite's value prints as itself.
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        target = draw(targets)
        spec: dict[str, Any] = {"http": target}
        if target == 429:
            seconds = draw(_RETRY_AFTER)
            if seconds is not None:
                spec["retry_after"] = seconds
        spec.update(where)
        for key, value in (("times", draw(times)), ("at", draw(ats))):
            if value != 1:
                spec[key] = value
        return spec

    return build()


#: the kinds `http_faults` draws unless told: those it drew before the newer kinds came
_DEFAULT_HTTP_KINDS: Final = HTTP_KINDS[:6]

_TOOL_FAILURES: Final = (
    ToolFailure(error="No results found", recommendations=["Try a broader query"]),
    ToolFailure(error="File not found"),
    ToolFailure(error="Quota exceeded for today"),
)
_LATENCIES: Final = (0.5, 5.0, 30.0, 90.0, 600.0)

# llm kind -> how to add it to a plan, with what options.
_LLM_FAULTS: Final[dict[str, SearchStrategy[Callable[[FaultPlan], Any]]]] = {
    "rate_limit": _RETRY_AFTER.map(lambda s: lambda plan: plan.llm.rate_limit(retry_after=s)),
    "server_error": st.sampled_from((503, 500, 502, 529)).map(
        lambda code: lambda plan: plan.llm.server_error(status=code)
    ),
    "timeout": st.just(lambda plan: plan.llm.timeout()),
    "connection": st.just(lambda plan: plan.llm.connection()),
    "empty": st.just(lambda plan: plan.llm.empty()),
    "blocked": st.just(lambda plan: plan.llm.blocked()),
    "not_json": st.just(lambda plan: plan.llm.not_json()),
    "truncated": st.just(lambda plan: plan.llm.malformed("truncated")),
    "malformed_tool_args": st.just(lambda plan: plan.llm.malformed("tool_args")),
    "unknown_tool": st.just(lambda plan: plan.llm.unknown_tool()),
}


def fault_plans(
    tools: ToolLike | Iterable[ToolLike] = (),
    *,
    llm: bool | str | Iterable[str] = True,
    http: bool = False,
    min_faults: int = 0,
    max_faults: int = 3,
    max_times: int = 3,
    max_at: int = 3,
    hard: bool = False,
    strict: bool = False,
    probability: bool = False,
    seed: int | None = 0,
) -> SearchStrategy[FaultPlan]:
    """Fresh `af.FaultPlan` objects of ``min_faults`` to ``max_faults`` faults.

    Tool faults target the ``tools`` (names or `af.Tool` objects) and raise one of
    `tool_exceptions` (``hard=True`` adds ``ToolExecutionError``), return an
    `af.ToolFailure`, or add virtual latency (0.5 to 90 s, which may trip a timeout).
    ``llm`` faults are every kind (True), none (False), or the kinds named (``"rate_limit"``,
    ``"server_error"``, ``"timeout"``, ``"connection"``, ``"empty"``, ``"blocked"``,
    ``"not_json"``, ``"truncated"``, ``"malformed_tool_args"``, ``"unknown_tool"``);
    ``malformed_tool_args`` needs a tool, so it is drawn only when ``tools`` are given.
    ``http=True`` adds `http_faults`. Each fault hits ``times`` occurrences from ``at``
    (1 to ``max_times`` / ``max_at``). Faults are not ``strict`` by default: a generated
    fault may target an occurrence the run never reaches. ``probability=True`` gives some
    faults a `probability` too (0.25, 0.5 or 0.75), drawn from the plan's ``seed``, so each
    example still replays exactly.

    A plan records what fired, so use each example for one run only.
    """
    names = tool_names(tools, "fault_plans")
    if llm is True:
        kinds = [k for k in _LLM_FAULTS if names or k != "malformed_tool_args"]
    elif llm is False:
        kinds = []
    else:
        kinds = one_or_many(llm)
        unknown = [k for k in kinds if k not in LLM_KINDS]
        if unknown:
            raise UsageError(
                f"fault_plans(llm=...): unknown kinds {unknown}; use {', '.join(_LLM_FAULTS)}"
            )
    counts = (
        ("min_faults", min_faults, 0),
        ("max_faults", max_faults, 0),
        ("max_times", max_times, 1),
        ("max_at", max_at, 1),
    )
    for label, value, lowest in counts:
        if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
            raise UsageError(f"fault_plans({label}={value!r}): give an int >= {lowest}")
    if probability and seed is None:
        raise UsageError(
            "fault_plans(probability=True, seed=None): probabilistic faults need a fixed seed "
            "so Hypothesis can replay an example; give seed=<int>"
        )
    if min_faults > max_faults:
        raise UsageError(
            f"fault_plans(min_faults={min_faults}, max_faults={max_faults}): min > max"
        )
    times = st.integers(min_value=1, max_value=max_times)
    ats = st.integers(min_value=1, max_value=max_at)
    adders: list[SearchStrategy[Callable[[FaultPlan], Any]]] = []
    if names:
        raises = tool_exceptions(hard=hard).map(lambda exc: ("raises", exc))
        # Raising is what tools mostly do wrong: half the tool faults raise.
        actions = st.one_of(
            raises,
            st.sampled_from(_TOOL_FAILURES).map(lambda failure: ("returns", failure)),
            raises,
            st.sampled_from(_LATENCIES).map(lambda seconds: ("delay", seconds)),
        )
        adders.append(st.tuples(st.sampled_from(names), actions).map(_tool_adder))
    if kinds:
        adders.append(st.sampled_from(kinds).flatmap(lambda kind: _LLM_FAULTS[kind]))
    if http:
        adders.append(http_faults(max_times=max_times).map(_http_adder))
    if not adders or max_faults == 0:
        if min_faults:
            raise UsageError(f"fault_plans(min_faults={min_faults}): no kind of fault is enabled")
        faults: SearchStrategy[list[Any]] = st.just([])
    else:
        chances = st.one_of(st.none(), st.sampled_from(_CHANCES)) if probability else st.none()
        faults = st.lists(
            st.tuples(st.one_of(adders), times, ats, chances),
            min_size=min_faults,
            max_size=max_faults,
        )

    # A composite, so a failing example prints the plan itself (see _pretty_plan), not the
    # calls that built it.
    @st.composite
    def build(draw: st.DrawFn) -> FaultPlan:
        return _plan(draw(faults), seed=seed, strict=strict)

    return build()


def _tool_adder(drawn: tuple[str, tuple[str, Any]]) -> Callable[[FaultPlan], Any]:
    name, (kind, value) = drawn

    def add(plan: FaultPlan) -> Any:
        builder = plan.tool(name)
        return getattr(builder, kind)(value)

    return add


def _http_adder(spec: dict[str, Any]) -> Callable[[FaultPlan], Any]:
    def add(plan: FaultPlan) -> Fault:
        return plan.inject_fault(**spec)  # its source names the call that adds it

    return add


# Probabilities a generated fault may get: sure hits (None) shrink first.
_CHANCES: Final = (0.25, 0.5, 0.75)


def _plan(
    faults: list[tuple[Callable[[FaultPlan], Any], int, int, float | None]],
    *,
    seed: int | None,
    strict: bool,
) -> FaultPlan:
    plan = FaultPlan(seed=seed)
    for add, times, at, chance in faults:
        add(plan)
        fault = plan.faults[-1]
        fault.times, fault.at, fault.strict = times, at, strict
        fault.probability = chance
    return plan
