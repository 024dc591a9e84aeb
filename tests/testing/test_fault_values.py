"""Numbers given to the fluent fault API and the recovery actions: NaN and ±inf are refused.

The marker's own checks are tested through pytester in tests/plugin; these call the fluent
builders (and the runtime's actions) directly.
"""

from __future__ import annotations

import math

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing import fail
from pytest_agentfaults.testing.faults import FaultPlan

NAN, INF = math.nan, math.inf
NON_FINITE = [NAN, INF, -INF]
NON_FINITE_IDS = ["nan", "inf", "-inf"]


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_a_tool_delay_must_be_finite(bad):
    plan = FaultPlan()
    with pytest.raises(
        UsageError, match=r"faults\.tool\('fetch'\): delay= must be a finite number of seconds >= 0"
    ):
        plan.tool("fetch").delay(bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("key", ["times", "at"])
def test_times_and_at_must_be_whole_numbers(key, bad):
    builder = FaultPlan().tool("fetch").delay(1)
    with pytest.raises(UsageError, match=rf"faults\.tool\('fetch'\): {key}= must be an int >= 1"):
        getattr(builder, key)(bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_a_probability_must_be_finite(bad):
    builder = FaultPlan().tool("fetch").delay(1)
    with pytest.raises(UsageError, match=r"probability= must be a number in \(0, 1\]"):
        builder.probability(bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_an_http_retry_after_must_be_finite(bad):
    builder = FaultPlan().http(url="/v1/x")
    with pytest.raises(
        UsageError,
        match=r"faults\.http\(url='/v1/x'\): retry_after= must be a finite number of seconds",
    ):
        builder.status(429, retry_after=bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_an_llm_rate_limit_retry_after_is_refused_when_declared(bad):
    plan = FaultPlan()
    with pytest.raises(
        UsageError,
        match=r"faults\.llm\.rate_limit\(\): retry_after= must be a finite number of seconds",
    ):
        plan.llm.rate_limit(retry_after=bad)
    assert plan.faults == []  # nothing half-declared is left in the plan


def test_an_llm_server_error_status_is_checked_when_declared():
    plan = FaultPlan()
    with pytest.raises(UsageError, match=r"faults\.llm\.server_error\(\): status= must be"):
        plan.llm.server_error(status=NAN)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"faults\.llm\.server_error\(\): status= must be"):
        plan.llm.server_error(status=200)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_a_scripted_retry_after_must_be_finite(bad):
    with pytest.raises(
        UsageError, match=r"fail\.http\(429\): retry_after must be seconds >= 0 \(finite\)"
    ):
        fail.rate_limit(retry_after=bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("key", ["base_delay", "max_delay", "jitter_factor"])
def test_a_retry_action_refuses_non_finite_numbers(key, bad):
    with pytest.raises(UsageError, match=rf"retry\({key}={bad!r}\): must be a finite number"):
        af.retry(3, **{key: bad})


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
def test_an_llm_error_decision_refuses_a_non_finite_backoff(bad):
    with pytest.raises(UsageError, match=r"initial_backoff=.*must be a finite number"):
        af.LlmErrorDecision.retry(initial_backoff=bad)


@pytest.mark.parametrize("bad", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("key", ["base_delay", "max_delay", "jitter_factor", "timeout_seconds"])
def test_a_resilience_config_refuses_non_finite_numbers(key, bad):
    kwargs = {key: bad}
    if key == "base_delay":
        kwargs["max_delay"] = 1e9  # so only the NaN / infinity is wrong
    with pytest.raises(UsageError, match=rf"{key}: .*finite"):
        af.ResilienceConfig(**kwargs)
    with pytest.raises(UsageError, match=rf"{key}: .*finite"):
        af.ResilienceConfig(tool_overrides={"fetch": kwargs})
