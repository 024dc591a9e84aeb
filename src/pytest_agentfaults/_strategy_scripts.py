"""Model-side examples: `malformed_json` arguments and whole `scripts` of steps."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from pytest_agentfaults._fakes_schema import check_fakeable
from pytest_agentfaults._strategy_common import ToolLike, given_or, one_or_many, tool_names
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.tools import Tool
from pytest_agentfaults.testing._fail_steps import fail
from pytest_agentfaults.testing._malformed import (
    MALFORMED_JSON_KINDS,
    break_json,
    can_break,
    nodes,
)
from pytest_agentfaults.testing._malformed_steps import malformed
from pytest_agentfaults.testing.steps import (
    Step,
    ToolCallStep,
    call_tool,
    call_tools,
    say,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["malformed_json", "scripts"]

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


def malformed_json(
    from_: Any = None, *, kinds: str | Iterable[str] | None = None
) -> SearchStrategy[str]:
    """Almost-JSON strings, each of which really fails `json.loads`.

    ``from_`` is the document to break: a JSON-able value, or a strategy of them (default:
    small JSON objects). ``kinds`` picks among `MALFORMED_JSON_KINDS`: ``truncated``,
    ``trailing_comma``, ``single_quotes``, ``unquoted_keys``, ``python_literals``
    (``{'a': None, 'b': True}``), ``missing_comma``, ``undefined`` (``null`` written as
    ``undefined``), ``unbalanced`` (an extra closing bracket), ``comment``,
    ``markdown_fence``, ``prose`` (``Here is the JSON: {...}``), ``unescaped_quote`` (a
    bare ``"`` inside a string of an object) and ``two_objects`` (a second document after
    the first): one vocabulary with `pytest_agentfaults.fakes`. A kind that cannot
    break a given document (no string to re-quote, say) is not used for it. ``NaN`` and
    ``Infinity`` are not among the kinds: Python's `json.loads` accepts them.

    ```python
    @given(malformed_json(from_={"url": "https://example.com"}))
    def test(raw):
        with pytest.raises(af.InvalidArgsError):
            fetch.validate(raw)
    ```
    """
    chosen = tuple(MALFORMED_JSON_KINDS if kinds is None else one_or_many(kinds))
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
        inside = nodes(from_)
        if not any(can_break(kind, from_, inside) for kind in chosen):
            raise UsageError(
                f"malformed_json(from_={from_!r}, kinds={list(chosen)!r}): none of these "
                "kinds can break that document; add a kind such as 'unbalanced' or 'prose'"
            )
        documents = st.just(from_)

    @st.composite
    def build(draw: st.DrawFn) -> str:
        document = draw(documents)
        _check_jsonable(document)
        inside = nodes(document)
        usable = [kind for kind in chosen if can_break(kind, document, inside)]
        assume(usable)
        kind = usable[draw(_indexes(len(usable)))]
        # Drawn for every kind, so that no kind is "simpler" for having one draw less.
        cut = draw(_CUTS)
        return break_json(kind, document, cut)

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


# --------------------------------------------------------------------------- scripts

_BAD_ARGUMENTS: Final = malformed_json(
    st.dictionaries(_KEYS, _SCALARS, min_size=1, max_size=3),
    kinds=("truncated", "trailing_comma", "single_quotes", "unquoted_keys", "markdown_fence"),
)
_FINAL_ANSWERS: Final = ("done", "Here is what I found.", "All set.", "I could not finish that.")
_UNKNOWN_TOOLS: Final = ("nonexistent_tool", "delete_everything", "web_search", "send_email")


class _Same:
    """A tool as a cache key by identity: a LangChain tool (a pydantic model) has no hash."""

    __slots__ = ("tool",)

    def __init__(self, tool: object) -> None:
        self.tool = tool

    def __hash__(self) -> int:
        return id(self.tool)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.tool is self.tool


@functools.lru_cache(maxsize=4096)
def _call_with_fake_args(name: str, tool: _Same, seed: int) -> Step:
    # Steps are frozen and fake_args is a function of the seed: a cached step is the same.
    from pytest_agentfaults.fakes import fake_args  # noqa: PLC0415 # lazy: Faker loads on use only

    return call_tool(name, **fake_args(tool.tool, seed=seed))


def _tool_calls(tools: Sequence[ToolLike], names: Sequence[str]) -> SearchStrategy[ToolCallStep]:
    """One call of one of ``tools``: realistic, valid arguments for any tool but a bare name.

    ``names`` are the tools' names, in the same order.
    """
    seeds = st.integers(min_value=0, max_value=2**16 - 1)
    # Strategies are built once, outside the composite: building one per draw is slow.
    choices = st.sampled_from(
        [
            (name, item if isinstance(item, str) else _Same(item))
            for name, item in zip(names, tools, strict=True)
        ]
    )
    for item in tools:
        if isinstance(item, Tool):  # refused now, not at the first draw
            check_fakeable(item, "scripts(tools=...)")
    if any(not isinstance(item, str) for item in tools):
        from pytest_agentfaults.fakes import shared_faker  # noqa: PLC0415 # lazy: Faker on use only

        shared_faker()  # built now, at collection, not inside the first draw

    @st.composite
    def build(draw: st.DrawFn) -> ToolCallStep:
        name, item = draw(choices)
        if isinstance(item, str):
            return call_tool(item)
        step = _call_with_fake_args(name, item, draw(seeds))
        assert isinstance(step, ToolCallStep)
        return step

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
    tools: ToolLike | Iterable[ToolLike] = (),
    *,
    min_steps: int = 0,
    max_steps: int = 4,
    failures: bool = True,
    bad_calls: bool = True,
    parallel: bool = True,
    final: str | SearchStrategy[str] | None = None,
) -> SearchStrategy[list[Step]]:
    """Scripts for `af.ScriptedModel`: ``min_steps`` to ``max_steps`` steps, then a ``say``.

    Steps call the ``tools`` (an `af.Tool`, a function or another framework's tool gets
    realistic, valid arguments from `pytest_agentfaults.fakes.fake_args`; a bare name is
    called with no arguments), in
    parallel too (``parallel``), send broken calls (``bad_calls``: malformed JSON
    arguments, an unknown tool) and fail the model call (``failures``: 429 / 5xx,
    timeout, connection error, empty, blocked, not-JSON and truncated answers).
    ``final`` is the last answer's text (default: a short sentence). A tool with a required
    parameter `fake_args` does not fake (``FilePath``, ``DirectoryPath``, ``NewPath``: they
    must exist on disk) is refused here with a `UsageError`; script its calls yourself.

    A fault plan's ``llm`` faults use up no step, but an agent may still ask more often
    than a generated script foresaw: build the model with ``on_exhausted="repeat_last"``
    when you combine the two.
    """
    items = one_or_many(tools)
    names = tool_names(items, "scripts")
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
        single = _tool_calls(items, names)

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
    texts = given_or(final, st.sampled_from(_FINAL_ANSWERS))
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
