"""No wait exceeds its cap: the smallest cap that applies is the one in force.

A tool retry combines an ``af.retry(...)`` action with the `ResilienceConfig` in force for
the tool (``tool_overrides`` applied). The caps that apply are the config's ``max_delay`` and
the action's own ``max_delay`` when it sets one; every strategy, jitter included, stays at or
below the smaller. An action's ``base_delay`` may be above the config's ``max_delay``: it
is then the cap that is waited.

The ``ci`` profile runs at least 500 examples (the check is a pure function, so they are
cheap); ``AGENTFAULTS_PROFILE=deep`` runs 10,000.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_agentfaults as af
from pytest_agentfaults import strategies as afst
from pytest_agentfaults.runtime.backoff import STRATEGIES

PROFILE = settings.get_profile("agentfaults-properties")
CAPS = settings(PROFILE, max_examples=max(500, PROFILE.max_examples))

# Wider than the configs' delays, so the action's base_delay is often above the config's cap.
_SECONDS = st.floats(min_value=0.0, max_value=120.0, allow_nan=False, allow_infinity=False)


@st.composite
def retry_actions(draw: st.DrawFn) -> af.Retry:
    """``af.retry(...)`` actions: each optional field left unset (None) or drawn."""
    base = draw(st.none() | _SECONDS)
    cap = draw(st.none() | _SECONDS)
    if base is not None and cap is not None and cap < base:
        base, cap = cap, base  # an action's own cap is never below its own base_delay
    return af.retry(
        draw(st.integers(min_value=1, max_value=12)),
        strategy=draw(st.none() | st.sampled_from(STRATEGIES)),
        base_delay=base,
        max_delay=cap,
        jitter_factor=draw(st.none() | st.floats(min_value=0.0, max_value=1.0)),
    )


@CAPS
@given(
    config=afst.resilience_configs(tools=["fetch"], max_retries=st.integers(0, 12)),
    action=retry_actions(),
    retry=st.integers(min_value=1, max_value=64),
    uniform=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_a_retry_never_waits_longer_than_the_smallest_cap(config, action, retry, uniform):
    in_force = config.for_tool("fetch")
    cap = (
        in_force.max_delay
        if action.max_delay is None
        else min(in_force.max_delay, action.max_delay)
    )
    delay = action.delay(retry, in_force, uniform)
    assert math.isfinite(delay)
    assert 0.0 <= delay <= cap, (delay, cap)


@CAPS
@given(
    config=afst.resilience_configs(tools=["fetch"], max_retries=st.integers(0, 12)),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_config_schedule_never_waits_longer_than_its_cap(config, seed):
    for tool in ("fetch", "other"):
        in_force = config.for_tool(tool)
        assert all(0.0 <= d <= in_force.max_delay for d in in_force.schedule(seed=seed))
