"""Retry-After in its three forms (seconds, milliseconds, an HTTP date) against every cap.

Each form is checked where the runtime uses it: `parse_retry_after` (the reading), the
transport retry's `TransportRetry.decide` (its ``max_delay`` cap: a longer ask is not
waited out) and `LlmErrorDecision.delay` (its ``max_retry_after`` cap, and the backoff as a
floor). The reference model is the contract in their docstrings.
"""

from __future__ import annotations

import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_agentfaults as af
from pytest_agentfaults.errors import ModelHTTPError, ModelServerError, RateLimitError
from pytest_agentfaults.runtime.models._retry import TransportRetry
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after

NOW = 1_800_000_000.0  # a fixed wall time the HTTP dates are measured from


def headers_asking(seconds: int, form: str) -> dict[str, str]:
    """Headers asking for a wait of ``seconds`` in one of the three forms."""
    if form == "seconds":
        return {"retry-after": str(seconds)}
    if form == "ms":
        return {"retry-after-ms": str(seconds * 1000)}
    return {"retry-after": email.utils.formatdate(NOW + seconds, usegmt=True)}


FORMS = ["seconds", "ms", "date"]
waits = st.integers(0, 4000)
caps = st.floats(0, 3600, allow_nan=False)


@given(seconds=waits, form=st.sampled_from(FORMS))
def test_each_form_reads_as_the_wait_asked_for(seconds, form):
    assert parse_retry_after(headers_asking(seconds, form), now=NOW) == seconds


@given(
    seconds=waits,
    form=st.sampled_from(FORMS),
    cap=caps,
    attempt=st.integers(1, 6),
    u=st.floats(0, 1, allow_nan=False),
)
def test_the_transport_waits_what_the_server_asks_up_to_its_cap(seconds, form, cap, attempt, u):
    retry = TransportRetry(max_attempts=7, max_delay=cap)
    error = ModelServerError("503", status=503, headers=headers_asking(seconds, form))
    # the date form is measured from the wall time: pin it through the parsed value
    asked = parse_retry_after(error.headers, now=NOW)
    assert asked == seconds
    if form == "date":
        error = ModelServerError("503", status=503, headers={"retry-after": str(seconds)})
    delay, note = retry.decide(error, attempt, u)
    if seconds > cap:
        assert delay is None
        assert note == (
            f"transport retry: not retried, the server asked to wait {seconds:g}s, "
            f"more than max_delay={cap:g}s"
        )
    elif seconds > 0:
        assert (delay, note) == (seconds, f"Retry-After {seconds:g}s")
    else:
        # Retry-After: 0 asks for nothing: the jittered backoff applies
        assert delay == pytest.approx(retry.backoff(attempt) * (1 - 0.25 * u))
        assert note == "backoff"


@given(
    seconds=waits,
    form=st.sampled_from(FORMS),
    limit=st.one_of(st.none(), caps),
    backoff=st.floats(0, 100, allow_nan=False),
    attempt=st.integers(1, 8),
)
def test_a_model_call_waits_at_least_the_ask_unless_it_is_over_the_limit(
    seconds, form, limit, backoff, attempt
):
    decision = af.LlmErrorDecision.retry(
        9, initial_backoff=backoff, max_backoff=1e6, max_retry_after=limit
    )
    headers = headers_asking(seconds, "seconds" if form == "date" else form)
    for error in (
        ModelServerError("503", status=503, headers=headers),
        RateLimitError("429", headers=headers),
        RateLimitError("429", retry_after=float(seconds)),
    ):
        plain = min(1e6, backoff * 2.0 ** (attempt - 1))
        if limit is not None and seconds > limit:
            assert decision.delay(attempt, error) is None
        else:
            assert decision.delay(attempt, error) == max(plain, seconds)


def test_a_date_in_the_past_asks_for_no_wait():
    old = email.utils.formatdate(NOW - 30, usegmt=True)
    assert parse_retry_after({"retry-after": old}, now=NOW) == 0.0


def test_a_date_is_measured_from_the_wall_clock_by_default():
    import time

    soon = email.utils.formatdate(time.time() + 3600, usegmt=True)
    assert 3500 < parse_retry_after({"retry-after": soon}) <= 3600


def test_milliseconds_win_over_seconds():
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    # an unusable milliseconds value falls back to the seconds header
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after-ms": "-5", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after-ms": "", "retry-after": "9"}) == 9.0


@pytest.mark.parametrize(
    "value",
    ["", "soon", "-1", "nan", "inf", "-inf", "Wed, 21 Oct 2015 07:28:00", "Mon, 99 Foo 2015"],
)
def test_garbage_negative_and_zoneless_values_ask_for_nothing(value):
    assert parse_retry_after({"retry-after": value}, now=NOW) is None


def test_no_header_asks_for_nothing():
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after-ms": "oops"}) is None


def test_whitespace_around_a_value_is_ignored():
    assert parse_retry_after({"retry-after": " 3 "}) == 3.0
    assert parse_retry_after({"retry-after-ms": " 250 "}) == 0.25
    date = " " + email.utils.formatdate(NOW + 5, usegmt=True) + " "
    assert parse_retry_after({"retry-after": date}, now=NOW) == 5.0


def test_a_fractional_wait_is_kept():
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "1"}) == 0.001


def test_a_429_retry_after_wins_over_its_headers():
    error = RateLimitError("429", retry_after=2.0, headers={"retry-after": "40"})
    assert TransportRetry(max_delay=10).decide(error, 1)[0] == 2.0
    assert af.LlmErrorDecision.retry(3, 0.0, max_retry_after=10).delay(1, error) == 2.0


def test_a_429_without_retry_after_reads_its_headers():
    error = RateLimitError("429", headers={"retry-after": "4"})
    assert TransportRetry().decide(error, 1)[0] == 4.0
    assert af.LlmErrorDecision.retry(3, 0.0).delay(1, error) == 4.0


def test_a_decision_that_ignores_retry_after_waits_its_backoff():
    decision = af.LlmErrorDecision.retry(3, 1.0, respect_retry_after=False, max_retry_after=1)
    error = RateLimitError("429", retry_after=500.0)
    assert decision.delay(2, error) == 2.0


def test_a_status_error_without_headers_waits_the_backoff():
    decision = af.LlmErrorDecision.retry(3, 1.0)
    assert decision.delay(3, ModelHTTPError("x", status=503)) == 4.0
    assert decision.delay(1, ValueError("not http")) == 1.0


def test_the_model_backoff_doubles_from_the_initial_wait_up_to_its_cap():
    decision = af.LlmErrorDecision.retry(20, 0.5, max_backoff=3.0)
    assert [decision.backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert decision.backoff(10_000) == 3.0
    defaults = af.LlmErrorDecision.retry()
    assert (defaults.max_attempts, defaults.initial_backoff, defaults.max_backoff) == (3, 0.5, 60.0)
    assert defaults.max_retry_after == 300.0
    assert defaults.respect_retry_after is True
