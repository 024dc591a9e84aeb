"""`check_schedule` against the runtime's schedules, and against schedules that are wrong."""

from __future__ import annotations

import contextvars

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.runtime.backoff import seeded_jitter
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.schedules import (
    SCHEDULE_INVARIANTS,
    ScheduleViolation,
    check_schedule,
)

PROFILE = settings.get_profile("agentfaults-properties")
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@af.tool
def fetch(url: str) -> str:
    """Fetch a page."""
    return url


# How a schedule gets broken -> the invariant that must be named first.
BREAKS = {
    "above the cap": "cap",
    "negative": "non-negative",
    "one too few": "count",
    "too short": None,  # "exact" for deterministic strategies, "jitter" for jitter
}


@PROFILE
@given(afst.resilience_configs(), seeds, st.data())
def test_check_schedule_passes_real_schedules_and_names_broken_ones(
    config: af.ResilienceConfig, seed: int, data: st.DataObject
) -> None:
    # One property, not four: each example costs little, and one draw of a config serves
    # every check (the deep profile's 10,000 examples stay quick).
    schedule = config.schedule(seed=seed)
    check_schedule(config, schedule)
    assert config.schedule(seed=seed) == schedule, "a pure function of config and seed"
    if not schedule:
        return
    index = data.draw(st.integers(min_value=0, max_value=len(schedule) - 1), label="index")
    how = data.draw(st.sampled_from(sorted(BREAKS)), label="how")
    broken = list(schedule)
    expected = BREAKS[how]
    if how == "above the cap":
        broken[index] = config.max_delay + 1.0
    elif how == "negative":
        broken[index] = -1.0
    elif how == "one too few":
        del broken[index]
    else:
        # Under the lowest wait the strategy allows for that retry: its exact value, or the
        # bottom of the jitter band; both are min(cap, base * 2^(n-1)) or the like.
        floor = min(schedule[index], config.max_delay)
        if config.strategy == "exponential_jitter":
            floor = min(config.max_delay, config.base_delay * 2.0 ** min(index, 1000))
        if floor <= 1e-6:
            return  # nothing below zero-ish that is not also negative
        broken[index] = floor * 0.5
        expected = "jitter" if config.strategy == "exponential_jitter" else "exact"
    with pytest.raises(ScheduleViolation) as caught:
        check_schedule(config, broken)
    found = [v.invariant for v in caught.value.violations]
    assert set(found) <= set(SCHEDULE_INVARIANTS)
    assert expected in found, (how, found)
    if how != "too short":
        assert caught.value.invariant == expected
        assert f"schedule violates {expected!r}" in str(caught.value)


@PROFILE
@given(
    afst.resilience_configs(
        max_retries=st.integers(min_value=1, max_value=4),
        timeout_seconds=st.none(),
        on_exhaustion="return",
    ),
    seeds,
)
def test_a_tool_that_always_fails_waits_exactly_the_schedule(
    config: af.ResilienceConfig, seed: int
) -> None:
    plan = FaultPlan(seed=0)
    plan.tool("fetch").raises(ConnectionError("reset")).times(config.max_retries + 1)
    clock = af.VirtualClock()
    model = af.ScriptedModel([af.call_tool("fetch", url="https://example.com"), af.say("ok")])
    agent = af.Agent("bot", model=model, tools=[fetch], resilience=config, clock=clock)

    def run() -> af.RunResult:
        with seeded_jitter(seed), plan.active():
            return agent.run("go")

    # Outside the plugin's per-test context, so thousands of examples stay cheap.
    result = contextvars.Context().run(run)
    assert result.trace.delays("fetch") == config.schedule(seed=seed) == clock.sleeps
    check_schedule(config, result.trace.delays("fetch"))
    assert result.trace.retries("fetch") == config.max_retries
    assert len(plan.fired) == config.max_retries + 1
