"""The backoff table of runtime/backoff.py, checked against a reference model of it.

Every strategy x cap x jitter: the delay before retry n is the documented formula, capped.
The reference below is the table in the module's docstring (and docs/howto/retries.md),
written out independently of the implementation.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_agentfaults as af
from pytest_agentfaults.runtime.backoff import active_seed, backoff_delay, seeded_jitter
from pytest_agentfaults.runtime.policy import Retry, RetryPlan

STRATEGIES = ["exponential_jitter", "exponential", "linear", "fixed", "none"]


def documented_delay(strategy: str, n: int, base: float, cap: float, jitter: float, u: float):
    """The docstring's table: the delay before retry n (1-based), then min(cap, delay)."""
    uncapped = {
        "fixed": base,
        "linear": base * n,
        "exponential": base * 2 ** (n - 1),
        "exponential_jitter": base * 2 ** (n - 1) * (1 + u * jitter),
        "none": 0.0,
    }[strategy]
    return min(cap, uncapped)


delays = st.floats(0, 20, allow_nan=False)
uniforms = st.floats(0, 1, exclude_max=True, allow_nan=False)


@given(
    strategy=st.sampled_from(STRATEGIES),
    n=st.integers(1, 40),
    base=delays,
    extra_cap=st.floats(0, 500, allow_nan=False),
    jitter=st.floats(0, 1, allow_nan=False),
    u=uniforms,
)
def test_every_strategy_cap_and_jitter_gives_the_documented_delay(
    strategy, n, base, extra_cap, jitter, u
):
    cap = base + extra_cap
    expected = documented_delay(strategy, n, base, cap, jitter, u)
    got = backoff_delay(
        strategy, n, base_delay=base, max_delay=cap, jitter_factor=jitter, uniform=u
    )
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    config = af.ResilienceConfig(
        strategy=strategy, base_delay=base, max_delay=cap, jitter_factor=jitter
    )
    assert config.delay(n, u) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("cap", [0.0, 1.0, 3.0, 7.5, 1e9])
@pytest.mark.parametrize("jitter", [0.0, 0.25, 1.0])
def test_each_strategy_under_each_cap_and_jitter_on_known_numbers(strategy, cap, jitter):
    base = 1.0 if cap >= 1.0 else 0.0
    config = af.ResilienceConfig(
        max_retries=6, strategy=strategy, base_delay=base, max_delay=cap, jitter_factor=jitter
    )
    draws = random.Random(11)
    expected = [
        documented_delay(strategy, n, base, cap, jitter, draws.random()) for n in range(1, 7)
    ]
    assert config.schedule(seed=11) == pytest.approx(expected)


def test_the_first_retry_waits_the_base_delay_for_every_strategy_but_none():
    for strategy in ["exponential", "linear", "fixed"]:
        assert backoff_delay(strategy, 1, base_delay=2.0, max_delay=60.0) == 2.0
    # with jitter, the first wait is the base delay grown by up to the jitter factor
    assert (
        backoff_delay(
            "exponential_jitter", 1, base_delay=2.0, max_delay=60.0, jitter_factor=0.5, uniform=0.5
        )
        == 2.5
    )
    assert backoff_delay("none", 1, base_delay=2.0, max_delay=60.0) == 0.0


def test_jitter_is_off_unless_asked_for():
    # backoff_delay's defaults: no jitter factor, and U = 0
    assert backoff_delay("exponential_jitter", 3, base_delay=1.0, max_delay=60.0) == 4.0
    assert (
        backoff_delay("exponential_jitter", 3, base_delay=1.0, max_delay=60.0, uniform=0.9) == 4.0
    )
    assert af.ResilienceConfig(strategy="exponential_jitter").delay(3) == 4.0


def test_a_huge_retry_number_waits_the_cap_without_overflowing():
    for strategy in ["exponential", "exponential_jitter"]:
        assert backoff_delay(strategy, 5000, base_delay=0.001, max_delay=9.0) == 9.0
    assert backoff_delay("exponential", 1024, base_delay=1e-300, max_delay=1e300) == pytest.approx(
        1e-300 * 2.0**1023
    )


def test_schedule_uses_one_draw_of_the_seeded_stream_per_retry_in_order():
    config = af.ResilienceConfig(max_retries=4, base_delay=1, max_delay=60, jitter_factor=1.0)
    stream = random.Random(5)
    expected = [2 ** (n - 1) * (1 + stream.random()) for n in range(1, 5)]
    assert config.schedule(seed=5) == pytest.approx(expected)


def test_schedule_without_a_seed_follows_the_active_test_seed():
    config = af.ResilienceConfig(max_retries=5, jitter_factor=1.0)
    outer = active_seed()  # the plugin's seed for this test
    assert config.schedule() == config.schedule(seed=outer)
    with seeded_jitter(21):
        assert active_seed() == 21
        assert config.schedule() == config.schedule(seed=21)
        with seeded_jitter(22):
            assert config.schedule() == config.schedule(seed=22)
        assert active_seed() == 21
    assert active_seed() == outer
    # seed 0 is a seed like any other, not "no seed"
    assert config.schedule(seed=0) == config.schedule(seed=0) != config.schedule(seed=1)
    with seeded_jitter(0):
        assert config.schedule() == config.schedule(seed=0)


class _Fallback:
    """A model by its protocol (a config refuses an object that is not one)."""

    name = "fallback"

    def request(self, request: object) -> object:
        raise NotImplementedError


def test_a_tool_override_keeps_every_field_it_does_not_name():
    fallback = _Fallback()
    config = af.ResilienceConfig(
        max_retries=5,
        strategy="linear",
        base_delay=2,
        max_delay=9,
        jitter_factor=0.5,
        on_exhaustion="raise",
        timeout_seconds=4,
        fallback_model=fallback,
        tool_overrides={"pay": {"max_retries": 0}},
    )
    pay = config.for_tool("pay")
    assert pay.max_retries == 0
    assert (pay.strategy, pay.base_delay, pay.max_delay) == ("linear", 2, 9)
    assert (pay.jitter_factor, pay.on_exhaustion, pay.timeout_seconds) == (0.5, "raise", 4)
    assert pay.fallback_model is fallback
    assert pay.tool_overrides == {}


def test_a_tool_override_remembers_which_fields_were_set_on_purpose():
    # a timeout the user set cuts a sync tool, the default one does not: the merged config
    # must still tell them apart
    config = af.ResilienceConfig(tool_overrides={"slow": {"max_retries": 1}})
    assert "timeout_seconds" not in config.for_tool("slow").model_fields_set
    timed = af.ResilienceConfig(tool_overrides={"slow": {"timeout_seconds": 2}})
    assert "timeout_seconds" in timed.for_tool("slow").model_fields_set
    assert timed.for_tool("slow").timeout_seconds == 2


def test_an_empty_override_is_no_override():
    config = af.ResilienceConfig(tool_overrides={"x": {}})
    assert config.for_tool("x") is config


def test_a_bad_override_is_refused_when_the_config_is_built_naming_the_tool_field():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(base_delay=1, tool_overrides={"pay": {"max_delay": 0.5}})
    assert "max_delay (0.5) is smaller than base_delay (1)" in str(info.value)


def test_the_validation_message_names_field_value_and_hint():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(max_retries=-1, retries=3)
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid ResilienceConfig:"
    assert lines[1].startswith("  max_retries: Input should be greater than or equal to 0")
    assert lines[1].endswith(" (got -1); negative values make no sense here")
    assert lines[2] == (
        "  retries: Extra inputs are not permitted (got 3); "
        "check the spelling against the documented fields"
    )


def test_the_validation_message_of_a_config_wide_error_says_config():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(base_delay=5, max_delay=1)
    assert str(info.value).splitlines()[1].startswith("  config: max_delay (1) is smaller")


def test_the_validation_message_does_not_dump_a_mapping_input():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(tool_overrides={"x": {"max_retry": 1}})
    message = str(info.value)
    assert (
        "tool_overrides: tool_overrides['x'] has unknown field(s) max_retry; valid fields"
        in message
    )
    assert "(got" not in message
    assert message.endswith(
        "valid fields are base_delay, jitter_factor, max_delay, max_retries, on_exhaustion, "
        "strategy, timeout_seconds"
    )


def test_an_unknown_strategy_message_lists_no_extra_hint():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(strategy="fibonacci")
    assert str(info.value).splitlines()[1].endswith("(got 'fibonacci')")


def test_the_validation_message_names_a_nested_field_by_its_dotted_path():
    with pytest.raises(af.UsageError) as info:
        af.ResilienceConfig(tool_overrides={"fetch": 5})
    assert str(info.value).splitlines()[1] == (
        "  tool_overrides.fetch: Input should be a valid dictionary (got 5)"
    )


@given(
    strategy=st.sampled_from([*STRATEGIES, None]),
    n=st.integers(1, 1100),
    base=st.one_of(st.none(), delays),
    own_cap=st.one_of(st.none(), delays),
    cap=delays,
    jitter=st.one_of(st.none(), st.floats(0, 1)),
    u=uniforms,
)
def test_a_retry_plan_waits_what_its_retry_would_under_the_same_config(
    strategy, n, base, own_cap, cap, jitter, u
):
    # The plan a tool call works out once must wait, retry after retry, what `Retry.delay`
    # computes from the action and the config each time: to the last bit.
    if base is not None and own_cap is not None and own_cap < base:
        own_cap = base
    config = af.ResilienceConfig(base_delay=min(base or 0.0, cap), max_delay=cap)
    action = Retry(4, strategy, base, own_cap, jitter)
    plan = RetryPlan(action, config)
    assert plan.delay(n, u) == action.delay(n, config, u)
