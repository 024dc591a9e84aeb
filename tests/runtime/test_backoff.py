"""ResilienceConfig: validation, the five strategies, schedule() maths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_agentfaults as af

STRATEGIES = ["exponential_jitter", "exponential", "linear", "fixed", "none"]


def test_defaults_match_the_contract():
    config = af.ResilienceConfig()
    assert config.max_retries == 3
    assert config.strategy == "exponential_jitter"
    assert config.base_delay == 1.0
    assert config.max_delay == 60.0
    assert config.jitter_factor == 0.25
    assert config.on_exhaustion == "return"
    assert config.fallback_model is None
    assert config.timeout_seconds == 60.0
    assert config.tool_overrides == {}


def test_config_is_frozen():
    config = af.ResilienceConfig()
    with pytest.raises(Exception, match="frozen"):
        config.max_retries = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("fixed", [2.0, 2.0, 2.0, 2.0]),
        ("linear", [2.0, 4.0, 6.0, 8.0]),
        ("exponential", [2.0, 4.0, 8.0, 10.0]),
        ("none", [0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_deterministic_strategies_give_exact_values(strategy, expected):
    config = af.ResilienceConfig(max_retries=4, strategy=strategy, base_delay=2, max_delay=10)
    assert config.schedule() == expected


def test_strategy_is_case_insensitive():
    assert af.ResilienceConfig(strategy="LINEAR").strategy == "linear"
    assert af.ResilienceConfig(strategy=" Exponential_Jitter ").strategy == "exponential_jitter"


def test_jitter_stays_within_its_band_and_the_cap():
    config = af.ResilienceConfig(max_retries=8, base_delay=1, max_delay=20, jitter_factor=0.5)
    delays = config.schedule(seed=7)
    for n, delay in enumerate(delays, start=1):
        low = min(20.0, 2.0 ** (n - 1))
        high = min(20.0, 2.0 ** (n - 1) * 1.5)
        assert low <= delay <= high


def test_schedule_is_reproducible_from_a_seed():
    config = af.ResilienceConfig(max_retries=5)
    assert config.schedule(seed=3) == config.schedule(seed=3)
    assert config.schedule(seed=3) != config.schedule(seed=4)


def test_zero_retries_gives_an_empty_schedule():
    assert af.ResilienceConfig(max_retries=0).schedule() == []


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"base_delay": -0.5}, "base_delay"),
        ({"max_delay": -1, "base_delay": 0}, "max_delay"),
        ({"jitter_factor": 1.5}, "jitter_factor"),
        ({"strategy": "fibonacci"}, "strategy"),
        ({"on_exhaustion": "explode"}, "on_exhaustion"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"retries": 3}, "retries"),
    ],
)
def test_invalid_fields_raise_usage_error_naming_the_field(kwargs, names):
    with pytest.raises(af.UsageError, match=names):
        af.ResilienceConfig(**kwargs)


def test_max_delay_below_base_delay_names_the_fix():
    with pytest.raises(af.UsageError, match=r"max_delay \(1\) is smaller than base_delay \(5\)"):
        af.ResilienceConfig(base_delay=5, max_delay=1)


def test_usage_error_is_a_value_error():
    with pytest.raises(ValueError, match="strategy"):
        af.ResilienceConfig(strategy="nope")


def test_tool_overrides_apply_over_the_base_fields():
    config = af.ResilienceConfig(
        max_retries=3, tool_overrides={"payment_api": {"max_retries": 0, "strategy": "fixed"}}
    )
    assert config.for_tool("payment_api").max_retries == 0
    assert config.for_tool("payment_api").strategy == "fixed"
    assert config.for_tool("other") is config


def test_tool_overrides_reject_unknown_fields_and_bad_values():
    with pytest.raises(af.UsageError, match="unknown field"):
        af.ResilienceConfig(tool_overrides={"x": {"max_retry": 1}})
    with pytest.raises(af.UsageError, match="max_retries"):
        af.ResilienceConfig(tool_overrides={"x": {"max_retries": -2}})


@pytest.mark.parametrize(
    ("fallback", "message"),
    [
        (42, r"fallback_model: 42 is not a model: give an af.Model .* or a model string"),
        ("gpt-4o", r"model string 'gpt-4o' has no provider prefix.*did you mean 'openai:gpt-4o'"),
        ("opnai:gpt-4o", r"unknown model prefix 'opnai:'"),
        ("openai:", r"model string 'openai:' has no model name"),
    ],
)
def test_a_fallback_model_that_cannot_be_used_is_refused_when_the_config_is_built(
    fallback, message
):
    # Not when the primary model fails, the one moment the fallback is needed.
    with pytest.raises(af.UsageError, match=message):
        af.ResilienceConfig(fallback_model=fallback)


def test_a_usable_fallback_model_is_kept_as_given(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # resolved when used, not now
    assert af.ResilienceConfig(fallback_model="openai:gpt-4o").fallback_model == "openai:gpt-4o"
    model = af.ScriptedModel([af.say("x")], strict=False)
    config = af.ResilienceConfig(fallback_model=model, tool_overrides={"t": {"max_retries": 0}})
    assert config.fallback_model is model
    assert config.for_tool("t").fallback_model is model


def test_timeout_can_be_disabled():
    assert af.ResilienceConfig(timeout_seconds=None).timeout_seconds is None


# ----------------------------------------------------------------------- properties

configs = st.builds(
    af.ResilienceConfig,
    max_retries=st.integers(0, 12),
    strategy=st.sampled_from(STRATEGIES),
    base_delay=st.floats(0, 30, allow_nan=False),
    max_delay=st.floats(30, 600, allow_nan=False),
    jitter_factor=st.floats(0, 1, allow_nan=False),
)


@given(configs, st.integers(0, 2**32))
def test_schedule_invariants(config, seed):
    delays = config.schedule(seed=seed)
    assert len(delays) == config.max_retries
    assert all(0 <= d <= config.max_delay for d in delays)
    assert delays == config.schedule(seed=seed)
    if config.strategy != "exponential_jitter":
        assert delays == sorted(delays), "deterministic strategies never shrink"
    for n, delay in enumerate(delays, start=1):
        if config.strategy == "exponential_jitter":
            plain = config.base_delay * 2 ** (n - 1)
            assert min(config.max_delay, plain) <= delay
            assert delay <= min(config.max_delay, plain * (1 + config.jitter_factor)) + 1e-9


@given(configs)
def test_no_delay_exceeds_the_cap_even_for_huge_retry_numbers(config):
    assert 0 <= config.delay(2000, uniform=0.999) <= config.max_delay


# ----------------------------------------------------------------------- caps


def test_an_action_base_delay_above_the_config_cap_waits_the_cap():
    # The minimal example that broke: an action's base_delay above the config's max_delay.
    config = af.ResilienceConfig(strategy="fixed", base_delay=0, max_delay=0)
    assert af.retry(2, base_delay=1).delay(1, config, 0.0) == 0.0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_smallest_cap_that_applies_is_in_force(strategy):
    config = af.ResilienceConfig(strategy=strategy, base_delay=1, max_delay=3)
    # the action's own cap is larger: the config's still holds
    loose = af.retry(9, base_delay=2, max_delay=100)
    # the action's own cap is smaller: it holds
    tight = af.retry(9, base_delay=2, max_delay=2.5)
    for n in range(1, 9):
        for uniform in (0.0, 0.5, 0.999):
            assert 0.0 <= loose.delay(n, config, uniform) <= 3.0
            assert 0.0 <= tight.delay(n, config, uniform) <= 2.5
    if strategy == "fixed":
        assert loose.delay(8, config, 0.999) == tight.delay(8, config, 0.999) == 2.0
    elif strategy != "none":
        assert loose.delay(8, config, 0.999) == 3.0
        assert tight.delay(8, config, 0.999) == 2.5


def test_the_runtime_waits_no_longer_than_the_config_cap():
    from pytest_agentfaults import ScriptedModel, call_tool, say
    from pytest_agentfaults.runtime.clock import VirtualClock
    from pytest_agentfaults.testing.faults import FaultPlan

    @af.tool(on_error=af.OnError(execution=af.retry(3, strategy="linear", base_delay=5)))
    def fetch(url: str) -> str:
        """Fetch."""
        return "page"

    clock = VirtualClock()
    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="u"), say("ok")]),
        tools=[fetch],
        resilience=af.ResilienceConfig(max_delay=1.5),
        clock=clock,
    )
    plan = FaultPlan()
    plan.tool("fetch").raises(TimeoutError("slow")).times(2)
    with plan.active():
        result = agent.run("go")
    assert result.trace.delays("fetch") == [1.5, 1.5] == clock.sleeps
