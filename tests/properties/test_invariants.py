"""The runtime's invariants, over generated fault plans and scripts.

Each example builds a small agent (three tools, a virtual clock), a generated
`ResilienceConfig`, `Budget`, `FaultPlan` and script, runs it (sync or async) with the jitter
seeded, and checks what the trace, the clock and the plan say:

- every injected fault appears in the trace exactly once, in the order it fired;
- ``seq`` is contiguous from 0; the run starts with ``run.start`` and ends with ``run.end``;
- the run ends within its budget;
- with ``on_exhaustion="return"`` a run never raises, except for hard failures;
- fixer rounds (a generated function fixer repairs, repeats, garbles, crashes or escalates)
  follow the invalid arguments they repair, each ``fixer.call`` has its ``fixer.result``,
  rounds stay within ``retries`` and are counted in ``usage.fixer_calls``;
- the virtual clock never goes backwards;
- recorded delays equal the schedule: the clock slept exactly the retry delays, each tool
  retry waited what the config says for that retry and that jitter draw, and each tool
  call's delays pass `check_schedule`.

``AGENTFAULTS_PROFILE=deep`` runs 10,000 examples (see conftest.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import random
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st
from pydantic import Field

import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.runtime.backoff import seeded_jitter
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.schedules import check_schedule
from pytest_agentfaults.testing.steps import CallTool, CallTools, Step

PROFILE = settings.get_profile("agentfaults-properties")


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return f"<html><title>{url}</title></html>"


@af.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@af.tool
def lookup(city: str, limit: Annotated[int, Field(ge=1, le=5)] = 3) -> list[str]:
    """Find places in a city."""
    return [f"{city} #{n}" for n in range(limit)]


TOOLS = [fetch, add, lookup]
NAMES = [t.name for t in TOOLS]

# A generated fixer's behaviour, and what a repairing fixer returns for each tool.
FIXER_KINDS = ("repair", "unchanged", "garbage", "crash", "escalate")
REPAIRED = {"fetch": {"url": "https://example.com"}, "add": {"a": 1, "b": 2}, "lookup": {}}


def fixer_for(tool: str, kind: str) -> af.Agent:
    """A function fixer for ``tool`` that behaves as ``kind`` says."""

    def fix(raw: str) -> object:
        if kind == "repair":
            return REPAIRED[tool] if tool != "lookup" else {"city": "Paris"}
        if kind == "unchanged":
            return raw
        if kind == "garbage":
            return "not json at all"
        if kind == "crash":
            raise RuntimeError("the fixer crashed")
        raise af.EscalationError("cannot repair these arguments", "high")

    return af.Agent.from_function(f"{tool}-{kind}-fixer", fix)


# Half the examples have no fixer; the rest repair invalid arguments with one, in 1-3 rounds.
fixers = st.none() | st.tuples(st.sampled_from(FIXER_KINDS), st.integers(1, 3))

# Mostly roomy budgets (the default 10 turns, no other cap), sometimes tight ones.
budgets = st.builds(
    af.Budget,
    max_turns=st.just(10) | st.integers(min_value=1, max_value=12),
    max_llm_calls=st.none() | st.integers(min_value=1, max_value=20),
    max_tool_calls=st.none() | st.integers(min_value=1, max_value=10),
)


@dataclass
class Outcome:
    """One generated run: its inputs, and everything it left behind."""

    config: af.ResilienceConfig
    budget: af.Budget
    plan: FaultPlan
    steps: list[Step]
    seed: int
    llm_backoff: float
    clock: af.VirtualClock
    trace: af.Trace
    result: af.RunResult | None
    raised: BaseException | None
    fixer: tuple[str, int] | None = None


def run_once(
    config: af.ResilienceConfig,
    budget: af.Budget,
    plan: FaultPlan,
    steps: list[Step],
    seed: int,
    llm_backoff: float,
    runner: asyncio.Runner | None = None,
    fixer: tuple[str, int] | None = None,
) -> Outcome:
    """Run the agent once under ``plan``: with ``runner``, through ``arun`` on its loop.

    ``fixer`` (kind, retries) repairs every tool's invalid arguments with a function fixer.
    """
    # Enough model retries to outlast every failing step and llm fault: model failures
    # are survivable here, so any exception out of run() must be a hard tool failure.
    attempts = len(steps) + sum(f.times for f in plan.of("llm")) + 1

    def on_llm_error(exc: Exception, attempt: int) -> af.LlmErrorDecision:
        return af.LlmErrorDecision.retry(max_attempts=attempts, initial_backoff=llm_backoff)

    on_tool_error = None
    if fixer is not None:
        kind, retries = fixer
        on_tool_error = {
            name: af.OnError(invalid_args=af.fix(fixer_for(name, kind), retries=retries))
            for name in NAMES
        }
    clock = af.VirtualClock()
    events: list[af.Event] = []
    agent = af.Agent(
        "prop",
        model=af.ScriptedModel(steps, on_exhausted="repeat_last"),
        tools=TOOLS,
        resilience=config,
        budget=budget,
        clock=clock,
        on_llm_error=on_llm_error,
        on_tool_error=on_tool_error,
        observer=events.append,
    )

    def run() -> af.RunResult:
        with seeded_jitter(seed), plan.active():
            return agent.run("go")

    async def arun() -> af.RunResult:
        with seeded_jitter(seed), plan.active():
            return await agent.arun("go")

    # An empty context: the example is a world of its own, outside the pytest plugin's
    # per-test default clock, seed and trace (which would collect every example's events).
    result: af.RunResult | None = None
    raised: BaseException | None = None
    try:
        if runner is None:
            result = contextvars.Context().run(run)
        else:
            result = runner.run(arun(), context=contextvars.Context())
    except af.ToolExecutionError as exc:
        raised = exc
    trace = af.Trace(events)
    return Outcome(
        config, budget, plan, steps, seed, llm_backoff, clock, trace, result, raised, fixer
    )


def called_tools(steps: list[Step]) -> tuple[str, ...]:
    """The agent's tools that the script calls (all of them when it calls none)."""
    names = {
        call.name
        for step in steps
        for call in (step.calls if isinstance(step, CallTools) else (step,))
        if isinstance(call, CallTool) and call.name in NAMES
    }
    return tuple(sorted(names)) or tuple(NAMES)


# Two kinds of example, drawn half and half. "mixed": anything goes (failing and malformed
# model answers, llm faults, tool faults). "tools": the script only calls tools and the plan
# only breaks them, so retries, timeouts and exhaustion get most of the attention.
SCRIPTS = {
    "mixed": afst.scripts(tools=TOOLS, min_steps=1, max_steps=6),
    "tools": afst.scripts(tools=TOOLS, min_steps=1, max_steps=4, failures=False, bad_calls=False),
}


@functools.cache
def plans_for(focus: str, tools: tuple[str, ...]) -> st.SearchStrategy[FaultPlan]:
    # Tool faults target the tools the script calls: others would never fire. Some faults
    # hit by a seeded chance, so skipped occurrences are checked too.
    return afst.fault_plans(
        tools=tools, llm=focus == "mixed", hard=True, min_faults=1, probability=True
    )


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    # One event loop for every async example: a loop per example would cost more than
    # the run itself.
    with asyncio.Runner() as loop_runner:
        yield loop_runner


@PROFILE
@given(
    focus=st.sampled_from(("mixed", "tools")),
    config=afst.resilience_configs(tools=NAMES),
    budget=budgets,
    data=st.data(),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    llm_backoff=st.sampled_from((0.0, 0.5, 1.0)),
    use_async=st.booleans(),
    fixer=fixers,
)
def test_generated_runs_keep_every_invariant(
    runner: asyncio.Runner,
    focus: str,
    config: af.ResilienceConfig,
    budget: af.Budget,
    data: st.DataObject,
    seed: int,
    llm_backoff: float,
    use_async: bool,
    fixer: tuple[str, int] | None,
) -> None:
    steps = data.draw(SCRIPTS[focus], label="steps")
    plan = data.draw(plans_for(focus, called_tools(steps)), label="plan")
    outcome = run_once(
        config, budget, plan, steps, seed, llm_backoff, runner if use_async else None, fixer
    )
    note(outcome.trace.render())
    describe(outcome, focus)
    check_faults_appear_once(outcome)
    check_seq_is_contiguous(outcome)
    check_within_budget(outcome)
    check_only_hard_failures_raise(outcome)
    check_clock_never_goes_backwards(outcome)
    check_delays_follow_the_schedule(outcome)
    check_fixer_rounds(outcome)


def describe(outcome: Outcome, focus: str) -> None:
    """Label the example, so `--hypothesis-show-statistics` shows what the runs covered."""
    trace = outcome.trace
    fired = len(outcome.plan.fired)
    event(f"focus: {focus}")
    event(f"run ended: {'raised' if outcome.result is None else outcome.result.status}")
    event(f"faults fired: {fired if fired < 3 else '3+'}")
    for kind in ("tool.call", "tool.retry", "llm.retry", "tool.fault", "llm.fault", "escalation"):
        if trace.count(kind):
            event(f"has {kind}")
    if any(e.error is not None and e.error.type == "ToolTimeoutError" for e in trace.events):
        event("has a tool timeout")
    if outcome.fixer is not None:
        event(f"fixer: {outcome.fixer[0]}" + (" (called)" if trace.count("fixer.call") else ""))


# ------------------------------------------------------------------------- the invariants


def had_parallel_turn(trace: af.Trace) -> bool:
    """Whether the model asked for several tool calls in one answer."""
    return any(
        e.type == "llm.response"
        and (e.detail or "").startswith("tool calls: ")
        and ", " in e.detail
        for e in trace
    )


def check_faults_appear_once(outcome: Outcome) -> None:
    fired = outcome.plan.fired
    tool_fired = [(f.name, f.kind) for f in fired if f.target == "tool"]
    tool_events = [(e.tool, e.status) for e in outcome.trace.of("tool.fault")]
    if had_parallel_turn(outcome.trace):
        # Concurrent calls (arun) fire in the order they get there; the trace is ordered
        # by time, then call index: the same faults, maybe not in the same order.
        tool_events, tool_fired = sorted(tool_events), sorted(tool_fired)  # type: ignore[type-var]
    assert tool_events == tool_fired, "each fired tool fault is one tool.fault event, in order"
    llm_fired = [f.kind for f in fired if f.target == "llm"]
    llm_events = [e.status for e in outcome.trace.of("llm.fault")]
    assert llm_events == llm_fired, "each fired llm fault is one llm.fault event, in order"
    assert all(f.target in ("tool", "llm") for f in fired), "no HTTP in these runs"
    for index, fault in enumerate(outcome.trace.events):
        if fault.type == "tool.fault":
            before = outcome.trace.events[:index]
            assert any(
                e.type == "tool.call" and e.call_id == fault.call_id and e.attempt == fault.attempt
                for e in before
            ), f"tool.fault {fault.seq} hit an attempt that never started"


def check_seq_is_contiguous(outcome: Outcome) -> None:
    events = outcome.trace.events
    assert [e.seq for e in events] == list(range(len(events)))
    assert events[0].type == "run.start"
    assert events[-1].type == "run.end"
    assert outcome.trace.count("run.start") == outcome.trace.count("run.end") == 1


def check_within_budget(outcome: Outcome) -> None:
    budget, trace = outcome.budget, outcome.trace
    if budget.max_llm_calls is not None:
        assert trace.count("llm.request") <= budget.max_llm_calls
    if budget.max_turns is not None:
        assert trace.count("llm.response") <= budget.max_turns
    if budget.max_tool_calls is not None:
        calls = {e.call_id for e in trace.events if e.type.startswith("tool.") and e.call_id}
        assert len(calls) <= budget.max_tool_calls
    result = outcome.result
    if result is not None:
        stopped = trace.count("budget.exceeded") == 1
        assert (result.status == "max_iterations") == stopped
        assert result.status != "cancelled"
        assert result.usage.llm_calls == trace.count("llm.request")


def check_only_hard_failures_raise(outcome: Outcome) -> None:
    raised = outcome.raised
    if raised is None:
        assert outcome.result is not None
        return
    assert isinstance(raised, af.ToolExecutionError)
    assert raised.tool in NAMES
    hard_fault = any(
        f.target == "tool"
        and f.name == raised.tool
        and isinstance(getattr(f.fault, "raises", None), af.ToolExecutionError)
        for f in outcome.plan.fired
    )
    exhausted_with_raise = outcome.config.for_tool(raised.tool).on_exhaustion == "raise"
    assert hard_fault or exhausted_with_raise, (
        f"run raised {raised!r} though on_exhaustion is 'return' for {raised.tool!r} "
        "and no hard failure was injected"
    )
    assert outcome.trace.events[-1].field("status") == "error"


def check_clock_never_goes_backwards(outcome: Outcome) -> None:
    moments = [e.at for e in outcome.trace.events]
    assert all(a <= b for a, b in itertools.pairwise(moments)), moments
    assert outcome.clock.now() >= moments[-1]


def check_delays_follow_the_schedule(outcome: Outcome) -> None:
    trace, config = outcome.trace, outcome.config
    # Tool retries draw their jitter, in trace order, from one generator seeded by the run.
    # The calls of a parallel turn (several calls in one answer) draw from their own
    # streams: the first retry of the turn draws one seed from the run's generator, and
    # call i of the turn then draws from random.Random(seed + i).
    draws = random.Random(outcome.seed)
    turn_calls: list[str] = []  # the current parallel turn's call ids, in call order
    turn_size = 0
    turn_seed: list[int] = []
    streams: dict[str, random.Random] = {}
    parallel = False
    per_call: dict[str, list[float]] = defaultdict(list)
    for happened in trace:
        detail = happened.detail or ""
        if happened.type == "llm.response" and detail.startswith("tool calls: "):
            assert not detail.endswith("..."), "a turn too long to read its calls"
            turn_size = len(detail.removeprefix("tool calls: ").split(", "))
            parallel = parallel or turn_size > 1
            turn_calls, turn_seed = [], []
            continue
        call_id = happened.call_id
        if (
            turn_size > 1
            and happened.type.startswith("tool.")
            and call_id
            and call_id not in turn_calls
            and len(turn_calls) < turn_size
        ):
            turn_calls.append(call_id)
        if happened.type != "tool.retry":
            continue
        assert happened.tool is not None
        assert happened.attempt is not None
        assert call_id is not None
        if call_id in turn_calls and call_id not in streams:
            if not turn_seed:
                turn_seed.append(draws.getrandbits(64))
            streams[call_id] = random.Random(turn_seed[0] + turn_calls.index(call_id))
        stream = streams.get(call_id, draws)
        expected = config.for_tool(happened.tool).delay(happened.attempt - 1, stream.random())
        assert happened.delay == expected, (happened.seq, happened.delay, expected)
        per_call[call_id].append(expected)
    if parallel:  # concurrent calls (arun) sleep in the order they get there
        assert sorted(outcome.clock.sleeps) == sorted(trace.delays())
    else:
        assert outcome.clock.sleeps == trace.delays(), "the clock slept exactly the retry delays"
    for call_id, delays in per_call.items():
        tool = trace.of("tool.retry", call_id=call_id)[0].tool
        assert tool is not None
        check_schedule(config.for_tool(tool), delays, partial=True)
    if per_call and not parallel:
        # The first call that retried drew the first jitter values: its waits are the start
        # of exactly the schedule that config.schedule(seed) computes.
        first_call, delays = next(iter(per_call.items()))
        tool = trace.of("tool.retry", call_id=first_call)[0].tool
        assert tool is not None
        schedule = config.for_tool(tool).schedule(seed=outcome.seed)
        assert delays == schedule[: len(delays)]
    for retry in trace.of("llm.retry"):
        assert retry.attempt is not None
        backoff = min(60.0, outcome.llm_backoff * 2.0 ** (retry.attempt - 2))
        assert retry.error is not None
        if retry.error.type == "RateLimitError":
            # the server's Retry-After may lengthen the wait, never shorten it
            assert retry.delay is not None
            assert retry.delay >= backoff
        else:
            assert retry.delay == backoff


_FIXER_STATUSES = {
    "repair": {"fixed", "unchanged"},  # unchanged when the model already sent those arguments
    "unchanged": {"unchanged"},
    # New arguments that fail validation again; the next round returns them unchanged.
    "garbage": {"fixed", "unchanged"},
    "crash": {"error"},  # a crashed fixer ends the rounds at once
    "escalate": {"escalated"},
}


def check_fixer_rounds(outcome: Outcome) -> None:
    trace, events = outcome.trace, outcome.trace.events
    calls = trace.of("fixer.call")
    if outcome.fixer is None:
        assert calls == []
        assert trace.of("fixer.result") == []
        return
    kind, retries = outcome.fixer
    rounds: dict[str | None, int] = defaultdict(int)
    for call in calls:
        before, after = events[call.seq - 1], events[call.seq + 1]
        assert before.type == "tool.error"
        assert before.call_id == call.call_id
        assert before.error is not None
        assert before.error.type == "InvalidArgsError"
        assert after.type == "fixer.result"
        assert after.call_id == call.call_id
        assert after.attempt == call.attempt, "a function fixer's result follows its call"
        assert after.status in _FIXER_STATUSES[kind], (kind, after.status)
        if after.status == "escalated":
            assert events[call.seq + 2].type == "escalation"
        rounds[call.call_id] += 1
        assert call.attempt == rounds[call.call_id]
        assert call.max_attempts == retries
    assert all(n <= retries for n in rounds.values()), "fixer rounds stay within retries"
    assert trace.count("fixer.result") == len(calls)
    if outcome.result is not None:
        assert outcome.result.usage.fixer_calls == len(calls)


# ------------------------------------------------------------------------- helpers' own tests


def test_a_hand_written_run_passes_the_same_checks() -> None:
    plan = FaultPlan(seed=0)
    plan.tool("fetch").raises(ConnectionError("reset")).times(2)
    plan.llm.rate_limit(retry_after=1.0).at(2)
    config = af.ResilienceConfig(max_retries=3, strategy="exponential", base_delay=1.0)
    steps: list[Step] = [af.call_tool("fetch", url="https://example.com"), af.say("done")]
    outcome = run_once(config, af.Budget(), plan, steps, seed=7, llm_backoff=0.5, runner=None)
    assert outcome.result is not None
    assert outcome.result.output == "done"
    # the model retry waits the rate limit's Retry-After (1 s), not the shorter backoff
    assert outcome.clock.sleeps == [1.0, 2.0, 1.0]
    for check in (
        check_faults_appear_once,
        check_seq_is_contiguous,
        check_within_budget,
        check_only_hard_failures_raise,
        check_clock_never_goes_backwards,
        check_delays_follow_the_schedule,
    ):
        check(outcome)


def test_a_hard_failure_is_the_one_exception_a_run_lets_out() -> None:
    plan = FaultPlan(seed=0)
    plan.tool("add").raises(af.ToolExecutionError("card blocked"))
    config = af.ResilienceConfig(on_exhaustion="return")
    steps: list[Step] = [af.call_tool("add", a=1, b=2), af.say("done")]
    with asyncio.Runner() as loop:
        outcome = run_once(config, af.Budget(), plan, steps, seed=0, llm_backoff=0.0, runner=loop)
    assert isinstance(outcome.raised, af.ToolExecutionError)
    check_only_hard_failures_raise(outcome)
    check_faults_appear_once(outcome)


def test_the_checks_catch_a_wrong_delay() -> None:
    plan = FaultPlan(seed=0)
    plan.tool("fetch").raises(ConnectionError("reset"))
    config = af.ResilienceConfig(max_retries=2, strategy="fixed", base_delay=1.0)
    steps: list[Step] = [af.call_tool("fetch", url="https://example.com"), af.say("done")]
    outcome = run_once(config, af.Budget(), plan, steps, seed=0, llm_backoff=0.0, runner=None)
    outcome.config = af.ResilienceConfig(max_retries=2, strategy="fixed", base_delay=2.0)
    with pytest.raises(AssertionError):
        check_delays_follow_the_schedule(outcome)


@pytest.mark.parametrize("kind", FIXER_KINDS)
def test_a_hand_written_fixer_run_passes_the_fixer_checks(kind: str) -> None:
    steps: list[Step] = [af.malformed.tool_args("{a: 1, b: 2}", tool="add"), af.say("done")]
    outcome = run_once(
        af.ResilienceConfig(), af.Budget(), FaultPlan(seed=0), steps, 0, 0.0, fixer=(kind, 2)
    )
    assert outcome.result is not None
    expected_rounds = {"repair": 1, "unchanged": 1, "garbage": 2, "crash": 1, "escalate": 1}
    assert outcome.result.usage.fixer_calls == expected_rounds[kind]
    check_fixer_rounds(outcome)
    check_seq_is_contiguous(outcome)


def test_the_fixer_checks_catch_a_round_too_many() -> None:
    steps: list[Step] = [af.malformed.tool_args("{a: 1}", tool="add"), af.say("done")]
    outcome = run_once(
        af.ResilienceConfig(), af.Budget(), FaultPlan(seed=0), steps, 0, 0.0, fixer=("garbage", 2)
    )
    outcome.fixer = ("garbage", 1)
    with pytest.raises(AssertionError):
        check_fixer_rounds(outcome)
