"""Hypothesis strategies for property-testing agents and their retry policies.

```python
from hypothesis import given
from hypothesis import strategies as st
import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst

@given(afst.resilience_configs(), st.integers(0, 2**32 - 1))
def test_schedules_obey_their_config(config, seed):
    af.check_schedule(config, config.schedule(seed=seed))

@given(afst.fault_plans(tools=["fetch"]), afst.scripts(tools=[fetch]))
def test_the_agent_survives(plan, steps):
    agent = af.Agent("bot", model=af.ScriptedModel(steps, on_exhausted="repeat_last"),
                     tools=[fetch], clock=af.VirtualClock())
    with plan.active():
        agent.run("go")
```

| strategy | yields |
|---|---|
| `resilience_configs` | valid `af.ResilienceConfig` objects |
| `fault_plans` | fresh `af.FaultPlan` objects with tool, llm (and http) faults |
| `tool_exceptions` | exception instances a tool might raise, by retryability |
| `http_faults` | keyword dicts for ``@pytest.mark.inject_fault(http=...)`` |
| `malformed_json` | almost-JSON strings that always fail `json.loads` |
| `scripts` | lists of `ScriptedModel` steps ending with a final ``say`` |

Every strategy shrinks towards a small, readable example: few faults, ``times=1``, the first
choice of each list (``ConnectionError``, HTTP 503, ``say('done')``). This is the only
module of the package that imports Hypothesis, and nothing imports it at start-up.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Final, TypeVar

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults.errors import ToolExecutionError, UsageError, classify
from pytest_agentfaults.runtime.backoff import STRATEGIES, ResilienceConfig
from pytest_agentfaults.runtime.tools import Tool
from pytest_agentfaults.testing.faults import (
    HTTP_KINDS,
    LLM_KINDS,
    Fault,
    FaultPlan,
    parse_marker,
)
from pytest_agentfaults.testing.scripted import (
    Step,
    ToolCallStep,
    call_tool,
    call_tools,
    fail,
    malformed,
    say,
)

__all__ = [
    "MALFORMED_JSON_KINDS",
    "fault_plans",
    "http_faults",
    "malformed_json",
    "resilience_configs",
    "scripts",
    "tool_exceptions",
]

T = TypeVar("T")

ToolLike = Tool[Any, Any] | str


def _strategy(value: T | SearchStrategy[T] | None, default: SearchStrategy[T]) -> SearchStrategy[T]:
    """A strategy as given, a fixed value as `st.just`, None as the default strategy."""
    if value is None:
        return default
    if isinstance(value, SearchStrategy):
        return value
    return st.just(value)


def _names(tools: Iterable[ToolLike], where: str) -> list[str]:
    names: list[str] = []
    for item in tools:
        if isinstance(item, Tool):
            names.append(item.name)
        elif isinstance(item, str) and item:
            names.append(item)
        else:
            raise UsageError(
                f"{where}(tools=...): give tool names or af.Tool objects, got {item!r}"
            )
    return names


# --------------------------------------------------------------------------- configs

_DELAYS: Final = st.floats(min_value=0.0, max_value=5.0, allow_nan=False, allow_infinity=False)
_HEADROOM: Final = st.floats(min_value=0.0, max_value=60.0, allow_nan=False, allow_infinity=False)
_JITTER: Final = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_infinity=False)
_FRACTIONS: Final = _JITTER
_TIMEOUTS: Final = st.one_of(
    st.just(60.0),
    st.none(),
    st.floats(min_value=0.01, max_value=120.0, allow_nan=False, allow_infinity=False),
)


def resilience_configs(
    *,
    strategy: str | SearchStrategy[str] | None = None,
    max_retries: int | SearchStrategy[int] | None = None,
    base_delay: float | SearchStrategy[float] | None = None,
    max_delay: float | SearchStrategy[float] | None = None,
    jitter_factor: float | SearchStrategy[float] | None = None,
    on_exhaustion: str | SearchStrategy[str] | None = None,
    timeout_seconds: float | SearchStrategy[float | None] | None = None,
    tools: Iterable[ToolLike] = (),
) -> SearchStrategy[ResilienceConfig]:
    """Valid `af.ResilienceConfig` objects.

    Each field takes a fixed value or a strategy; left as None it is drawn from a sensible
    default: every strategy, 0 to 5 retries, ``base_delay`` in [0, 5] s, ``max_delay`` at
    least ``base_delay`` (up to 60 s above it), any ``jitter_factor``, either
    ``on_exhaustion``, and a timeout of 60 s, none, or anything up to 120 s (pass
    ``timeout_seconds=st.none()`` for no timeout at all). With ``tools``, some configs get
    ``tool_overrides`` for those tools (one of retries, strategy, jitter, on_exhaustion).

    ```python
    @given(resilience_configs(strategy="exponential", max_retries=st.integers(1, 3)))
    def test(config): ...
    ```
    """
    names = _names(tools, "resilience_configs")
    strategies = _strategy(strategy, st.sampled_from(STRATEGIES))
    retries = _strategy(max_retries, st.integers(min_value=0, max_value=5))
    jitter = _strategy(jitter_factor, _JITTER)
    exhaustion = _strategy(on_exhaustion, st.sampled_from(("return", "raise")))
    timeouts: SearchStrategy[float | None] = _strategy(timeout_seconds, _TIMEOUTS)
    caps = None if max_delay is None else _strategy(max_delay, _HEADROOM)
    bases = None if base_delay is None else _strategy(base_delay, _DELAYS)

    @st.composite
    def build(draw: st.DrawFn) -> ResilienceConfig:
        cap = None if caps is None else draw(caps)
        if bases is not None:
            base = draw(bases)
        elif cap is not None:
            # Below a given cap: a fraction of it (or of 5 s), so nothing is rejected.
            base = draw(_FRACTIONS) * min(5.0, cap)
        else:
            base = draw(_DELAYS)
        if cap is None:
            cap = base + draw(_HEADROOM)
        assume(cap >= base)
        return ResilienceConfig(
            max_retries=draw(retries),
            strategy=draw(strategies),
            base_delay=base,
            max_delay=cap,
            jitter_factor=draw(jitter),
            on_exhaustion=draw(exhaustion),
            timeout_seconds=draw(timeouts),
            tool_overrides=_draw_overrides(draw, names),
        )

    return build()


# One field per override, most tools none: cheap to draw, and enough to tell tools apart.
_OVERRIDES: Final = st.one_of(
    st.none(),
    st.integers(min_value=0, max_value=5).map(lambda n: {"max_retries": n}),
    st.sampled_from(STRATEGIES).map(lambda name: {"strategy": name}),
    st.sampled_from(("return", "raise")).map(lambda how: {"on_exhaustion": how}),
    _JITTER.map(lambda factor: {"jitter_factor": factor}),
)


def _draw_overrides(draw: st.DrawFn, names: Sequence[str]) -> dict[str, dict[str, Any]]:
    overrides: dict[str, dict[str, Any]] = {}
    for name in names:
        fields = draw(_OVERRIDES)
        if fields is not None:
            overrides[name] = fields
    return overrides


# --------------------------------------------------------------------------- exceptions

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
    statuses: Iterable[int] | None = None,
    kinds: Iterable[str] | None = None,
    url: str | None = None,
    method: str | None = None,
    max_times: int = 3,
) -> SearchStrategy[dict[str, Any]]:
    """HTTP fault specs: keyword dicts for ``@pytest.mark.inject_fault(**spec)``.

    Each example is ``{"http": 503}``, ``{"http": 429, "retry_after": 2.0}`` or
    ``{"http": "timeout"}`` (a status, or one of ``timeout``, ``connect_error``,
    ``read_error``, ``reset``, ``malformed_body``, ``truncated_stream``), plus ``times``
    and ``at`` when not 1, and the ``url`` / ``method`` you pass. Add one to a plan with
    ``plan.add(parse_marker((), spec))`` (`pytest_agentfaults.testing.faults.parse_marker`),
    or let `fault_plans` do it (``http=True``).

    ``statuses`` defaults to retryable (503, 429, 500, 502, 504, 529, 408) and final (400,
    401, 403, 404) codes; ``kinds`` to every transport failure; pass an empty list to
    leave either out.
    """
    codes = tuple(_HTTP_STATUSES if statuses is None else statuses)
    failures = tuple(HTTP_KINDS if kinds is None else kinds)
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


# --------------------------------------------------------------------------- broken JSON

MALFORMED_JSON_KINDS: Final = (
    "truncated",
    "trailing_comma",
    "single_quotes",
    "unquoted_keys",
    "python_literals",
    "missing_comma",
    "undefined",
    "unbalanced",
    "comment",
    "markdown_fence",
    "prose",
)
"""The ways `malformed_json` breaks a document, in the order examples shrink towards."""

_CUTS: Final = st.integers(min_value=0, max_value=1 << 16)
_KEYS: Final = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_SCALARS: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-1000, max_value=1000),
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False),
    st.text(max_size=10),
)
# Two levels deep at most: deep enough to break in every way, cheap enough to draw often.
_JSON_VALUES: Final = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
    st.dictionaries(_KEYS, _SCALARS, max_size=3),
)
_JSON_OBJECTS: Final = st.dictionaries(_KEYS, _JSON_VALUES, max_size=4)


def malformed_json(from_: Any = None, *, kinds: Iterable[str] | None = None) -> SearchStrategy[str]:
    """Almost-JSON strings, each of which really fails `json.loads`.

    ``from_`` is the document to break: a JSON-able value, or a strategy of them (default:
    small JSON objects). ``kinds`` picks among `MALFORMED_JSON_KINDS`: ``truncated``,
    ``trailing_comma``, ``single_quotes``, ``unquoted_keys``, ``python_literals``
    (``{'a': None, 'b': True}``), ``missing_comma``, ``undefined`` (``null`` written as
    ``undefined``), ``unbalanced`` (an extra closing bracket), ``comment``,
    ``markdown_fence`` and ``prose`` (``Here is the JSON: {...}``). A kind that cannot
    break a given document (no string to re-quote, say) is not used for it. ``NaN`` and
    ``Infinity`` are not among the kinds: Python's `json.loads` accepts them.

    ```python
    @given(malformed_json(from_={"url": "https://example.com"}))
    def test(raw):
        with pytest.raises(af.InvalidArgsError):
            fetch.validate(raw)
    ```
    """
    chosen = tuple(MALFORMED_JSON_KINDS if kinds is None else kinds)
    unknown = [k for k in chosen if k not in MALFORMED_JSON_KINDS]
    if unknown or not chosen:
        raise UsageError(
            f"malformed_json(kinds={list(chosen)!r}): use some of {', '.join(MALFORMED_JSON_KINDS)}"
        )
    if from_ is None:
        documents: SearchStrategy[Any] = _JSON_OBJECTS
    elif isinstance(from_, SearchStrategy):
        documents = from_
    else:
        _check_jsonable(from_)
        nodes = list(_walk(from_))
        if not any(_can_break(kind, from_, nodes) for kind in chosen):
            raise UsageError(
                f"malformed_json(from_={from_!r}, kinds={list(chosen)!r}): none of these "
                "kinds can break that document; add a kind such as 'unbalanced' or 'prose'"
            )
        documents = st.just(from_)

    @st.composite
    def build(draw: st.DrawFn) -> str:
        document = draw(documents)
        _check_jsonable(document)
        nodes = list(_walk(document))
        usable = [kind for kind in chosen if _can_break(kind, document, nodes)]
        assume(usable)
        kind = usable[draw(_indexes(len(usable)))]
        # Drawn for every kind, so that no kind is "simpler" for having one draw less.
        cut = draw(_CUTS)
        return _break(kind, document, cut)

    return build()


@functools.cache
def _indexes(count: int) -> SearchStrategy[int]:
    """Positions in a list of ``count`` items; shrinks towards the first."""
    return st.integers(min_value=0, max_value=count - 1)


def _check_jsonable(value: Any) -> None:
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"malformed_json(from_=...): {value!r} is not JSON-able ({exc})") from exc


def _walk(value: Any) -> Iterable[Any]:
    yield value
    if isinstance(value, Mapping):
        yield from value.keys()
        for child in value.values():
            yield from _walk(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _walk(child)


def _can_break(kind: str, value: Any, nodes: list[Any]) -> bool:
    if kind == "truncated":
        return not isinstance(value, int | float) or isinstance(value, bool)
    if kind == "trailing_comma":
        return any(isinstance(n, Mapping | list | tuple) and len(n) > 0 for n in nodes)
    if kind == "single_quotes":
        return any(isinstance(n, str) for n in nodes)
    if kind == "unquoted_keys":
        return any(isinstance(n, Mapping) and len(n) > 0 for n in nodes)
    if kind == "python_literals":
        return any(n is None or isinstance(n, str | bool) for n in nodes)
    if kind == "missing_comma":
        return any(isinstance(n, Mapping | list | tuple) and len(n) > 1 for n in nodes)
    if kind == "undefined":
        return any(n is None for n in nodes)
    return True


def _break(kind: str, value: Any, cut: int) -> str:
    text = _write(value)
    if kind == "truncated":
        # Keep at least one character, and never the whole document.
        broken = text[: 1 + cut % (len(text) - 1)] if len(text) > 1 else ""
    elif kind == "trailing_comma":
        broken = _write(value, trailing_comma=True)
    elif kind == "single_quotes":
        broken = _write(value, quote="'")
    elif kind == "unquoted_keys":
        broken = _write(value, bare_keys=True)
    elif kind == "python_literals":
        broken = _write(value, quote="'", python=True)
    elif kind == "missing_comma":
        broken = _write(value, separator=" ")
    elif kind == "undefined":
        broken = _write(value, null="undefined")
    elif kind == "unbalanced":
        broken = text + ("}" if isinstance(value, Mapping) else "]")
    elif kind == "comment":
        broken = "/* arguments */ " + text + " // end"
    elif kind == "markdown_fence":
        broken = f"```json\n{text}\n```"
    else:
        broken = f"Here is the JSON you asked for: {text}"
    if _parses(broken):  # pragma: no cover - each kind is built to fail; keep the promise
        broken += "]"
    return broken


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _write(
    value: Any,
    *,
    quote: str = '"',
    bare_keys: bool = False,
    python: bool = False,
    separator: str = ", ",
    trailing_comma: bool = False,
    null: str = "null",
) -> str:
    """JSON text of ``value``, written with the requested mistakes."""
    write = partial(
        _write,
        quote=quote,
        bare_keys=bare_keys,
        python=python,
        separator=separator,
        trailing_comma=trailing_comma,
        null=null,
    )

    def string(text: str) -> str:
        if quote == '"':
            return json.dumps(text)
        return "'" + json.dumps(text)[1:-1].replace("'", "\\'") + "'"

    if value is None:
        return "None" if python else null
    if isinstance(value, bool):
        return ("True" if value else "False") if python else ("true" if value else "false")
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return string(value)
    tail = "," if trailing_comma and len(value) > 0 else ""
    if isinstance(value, Mapping):
        items = [
            f"{key if bare_keys else string(str(key))}: {write(item)}"
            for key, item in value.items()
        ]
        return "{" + separator.join(items) + tail + "}"
    return "[" + separator.join(write(item) for item in value) + tail + "]"


# --------------------------------------------------------------------------- scripts

_BAD_ARGUMENTS: Final = malformed_json(
    st.dictionaries(_KEYS, _SCALARS, min_size=1, max_size=3),
    kinds=("truncated", "trailing_comma", "single_quotes", "unquoted_keys", "markdown_fence"),
)
_FINAL_ANSWERS: Final = ("done", "Here is what I found.", "All set.", "I could not finish that.")
_UNKNOWN_TOOLS: Final = ("nonexistent_tool", "delete_everything", "web_search", "send_email")


@functools.lru_cache(maxsize=4096)
def _call_with_fake_args(tool: Tool[Any, Any], seed: int) -> Step:
    # Steps are frozen and fake_args is a function of the seed: a cached step is the same.
    from pytest_agentfaults.fakes import fake_args  # noqa: PLC0415 - Faker loads on use only

    return call_tool(tool.name, **fake_args(tool, seed=seed))


def _tool_calls(tools: Sequence[ToolLike]) -> SearchStrategy[ToolCallStep]:
    """One call of one of ``tools``: realistic, valid arguments for an `af.Tool`."""
    seeds = st.integers(min_value=0, max_value=2**16 - 1)
    # Strategies are built once, outside the composite: building one per draw is slow.
    choices = st.sampled_from(tools)
    if any(isinstance(item, Tool) for item in tools):
        from pytest_agentfaults.fakes import shared_faker  # noqa: PLC0415 - Faker on use only

        shared_faker()  # built now, at collection, not inside the first draw

    @st.composite
    def build(draw: st.DrawFn) -> ToolCallStep:
        item = draw(choices)
        if isinstance(item, Tool):
            step = _call_with_fake_args(item, draw(seeds))
            assert isinstance(step, ToolCallStep)
            return step
        return call_tool(item)

    return build()


def _failing_calls() -> list[Step]:
    """Model calls that fail: 429 / 5xx, timeout, connection error, unusable answers."""
    retry_afters = (None, 1.0, 0.5, 2.0, 30.0)
    return [
        *(fail.rate_limit(retry_after=seconds) for seconds in retry_afters),
        *(fail.http(status) for status in (503, 500, 502, 529)),
        fail.timeout(),
        fail.connection(),
        malformed.empty(),
        malformed.blocked(),
        malformed.not_json(),
        malformed.truncated(),
    ]


def scripts(
    tools: Iterable[ToolLike] = (),
    *,
    min_steps: int = 0,
    max_steps: int = 4,
    failures: bool = True,
    bad_calls: bool = True,
    parallel: bool = True,
    final: str | SearchStrategy[str] | None = None,
) -> SearchStrategy[list[Step]]:
    """Scripts for `af.ScriptedModel`: ``min_steps`` to ``max_steps`` steps, then a ``say``.

    Steps call the ``tools`` (an `af.Tool` gets realistic, valid arguments from
    `pytest_agentfaults.fakes.fake_args`; a bare name is called with no arguments), in
    parallel too (``parallel``), send broken calls (``bad_calls``: malformed JSON
    arguments, an unknown tool) and fail the model call (``failures``: 429 / 5xx,
    timeout, connection error, empty, blocked, not-JSON and truncated answers).
    ``final`` is the last answer's text (default: a short sentence).

    A fault plan's ``llm`` faults use up the scripted step they replace, so build the model
    with ``on_exhausted="repeat_last"`` when you combine the two.
    """
    items = list(tools)
    names = _names(items, "scripts")
    for label, value in (("min_steps", min_steps), ("max_steps", max_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"scripts({label}={value!r}): give an int >= 0")
    if min_steps > max_steps:
        raise UsageError(f"scripts(min_steps={min_steps}, max_steps={max_steps}): min > max")
    # Three groups drawn about equally often, so a script mostly calls its tools (half the
    # steps, when there are tools) and still meets broken calls and failing model calls.
    # Steps come from composites and prebuilt steps (never .map / st.builds), so a failing
    # example prints them as the step constructors a user writes.
    groups: list[SearchStrategy[Step]] = []
    if items:
        single = _tool_calls(items)

        several = st.lists(single, min_size=2, max_size=3)

        @st.composite
        def parallel_calls(draw: st.DrawFn) -> Step:
            return call_tools(draw(several))

        calls: list[SearchStrategy[Step]] = [single, single]
        if parallel:
            calls.append(parallel_calls())
        groups.append(st.one_of(calls))
    broken: list[SearchStrategy[Step]] = []
    if bad_calls:
        if items:
            targets = st.sampled_from(names)

            @st.composite
            def bad_arguments(draw: st.DrawFn) -> Step:
                return malformed.tool_args(draw(_BAD_ARGUMENTS), draw(targets))

            broken.append(bad_arguments())
        unknown = [malformed.unknown_tool(name) for name in _UNKNOWN_TOOLS if name not in names]
        if unknown:
            broken.append(st.sampled_from(unknown))
    if broken:
        groups.append(st.one_of(broken))
    if failures:
        groups.append(st.sampled_from(_failing_calls()))
    if items and len(groups) > 1:
        groups.insert(1, groups[0])
    texts = _strategy(final, st.sampled_from(_FINAL_ANSWERS))
    if not groups or max_steps == 0:
        if min_steps:
            raise UsageError(f"scripts(min_steps={min_steps}): every kind of step is switched off")
        body: SearchStrategy[list[Step]] = st.just([])
    else:
        body = st.lists(st.one_of(groups), min_size=min_steps, max_size=max_steps)

    @st.composite
    def build(draw: st.DrawFn) -> list[Step]:
        return [*draw(body), say(draw(texts))]

    return build()


# --------------------------------------------------------------------------- fault plans

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
    tools: Iterable[ToolLike] = (),
    *,
    llm: bool | Iterable[str] = True,
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
    names = _names(tools, "fault_plans")
    if llm is True:
        kinds = [k for k in _LLM_FAULTS if names or k != "malformed_tool_args"]
    elif llm is False:
        kinds = []
    else:
        kinds = list(llm)
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
        return plan.add(parse_marker((), spec, label="http_faults"))

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


# --------------------------------------------------------------------------- printing


def _fault_source(fault: Fault, *, show_strict: bool = True) -> str:
    """The builder calls that add ``fault`` to a plan, as a user would write them."""
    if fault.target == "tool":
        call = f"tool({fault.name!r}).{fault.action}({fault.value!r})"
    elif fault.target == "http":
        where = ", ".join(
            f"{key}={value!r}"
            for key, value in (("url", fault.url), ("method", fault.method))
            if value
        )
        if fault.action == "status":
            extra = "" if fault.retry_after is None else f", retry_after={fault.retry_after!r}"
            call = f"http({where}).status({fault.value!r}{extra})"
        else:
            call = f"http({where}).{fault.action}()"
    elif fault.name in ("malformed_tool_args", "truncated"):
        call = (
            "llm.malformed('tool_args')"
            if fault.name == "malformed_tool_args"
            else ("llm.malformed('truncated')")
        )
    else:
        options = ", ".join(f"{k}={v!r}" for k, v in fault.options.items() if v is not None)
        call = f"llm.{fault.name}({options})"
    if fault.times != 1:
        call += f".times({fault.times})"
    if fault.at != 1:
        call += f".at({fault.at})"
    if fault.probability is not None:
        call += f".probability({fault.probability!r})"
    if show_strict and not fault.strict:
        call += ".strict(False)"
    return call


def _plan_source(plan: FaultPlan) -> str:
    """``plan`` as the builder calls that make it, one per line."""
    lines = [f"plan = FaultPlan(seed={plan.seed!r})"]
    lines.extend(f"plan.{_fault_source(fault)}" for fault in plan.faults)
    return "\n".join(lines)


def _pretty_plan(plan: FaultPlan, printer: Any, cycle: bool) -> None:
    """Print ``FaultPlan(seed=0, faults=[tool('fetch').raises(...).times(2), ...])``."""
    lenient = bool(plan.faults) and not any(fault.strict for fault in plan.faults)
    calls = [_fault_source(fault, show_strict=not lenient) for fault in plan.faults]
    opening = f"FaultPlan(seed={plan.seed!r}{', strict=False' if lenient else ''}, faults=["
    with printer.group(4, opening, "])"):
        for index, call in enumerate(calls):
            if index:
                printer.text(",")
            printer.breakable("" if index == 0 else " ")
            printer.text(call)


def _pretty_step(step: Step, printer: Any, cycle: bool) -> None:
    """Print a scripted step as its constructor (``call_tool('fetch', '{}')``), not its fields."""
    printer.text(repr(step))


def _step_classes() -> list[type[Any]]:
    found: list[type[Any]] = []
    pending: list[type[Any]] = [Step]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def _register_printers() -> None:
    # Hypothesis prints a falsifying example with its vendored pretty-printer, which shows a
    # dataclass field by field and a plan as `<FaultPlan 2 faults, 0 fired>`. Teach it to
    # print both as the code that makes them.
    try:
        from hypothesis.vendor import pretty  # noqa: PLC0415 - optional hook

        pretty.for_type_by_name("pytest_agentfaults.testing.faults", "FaultPlan", _pretty_plan)
        for cls in _step_classes():
            pretty.for_type_by_name(cls.__module__, cls.__name__, _pretty_step)
    except (ImportError, AttributeError):  # pragma: no cover - a future Hypothesis
        pass


_register_printers()
