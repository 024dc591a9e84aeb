"""The newer ``http=`` kinds and options, as markers and as fluent calls.

Both build the same fault; bad combinations are a `UsageError` naming what was written
and the fix.
"""

from __future__ import annotations

import fnmatch

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._marker import parse_marker
from pytest_agentfaults.testing.faults import FaultPlan


@pytest.mark.parametrize(
    ("marker", "fluent", "options"),
    [
        ({"http": "not_json"}, lambda h: h.not_json(), {}),
        ({"http": "proxy_html"}, lambda h: h.proxy_html(), {"status": 502}),
        (
            {"http": "proxy_html", "status": 503, "should_retry": False},
            lambda h: h.proxy_html(503, should_retry=False),
            {"status": 503, "should_retry": False},
        ),
        ({"http": "stall", "after": 2}, lambda h: h.stall(after=2), {"after": 2}),
        ({"http": "slow_first_token"}, lambda h: h.slow_first_token(), {"delay": 30.0}),
        ({"http": "context_length"}, lambda h: h.context_length(), {}),
        (
            {"http": "quota", "retry_after": 2, "retry_after_format": "date"},
            lambda h: h.quota(retry_after=2, retry_after_format="date"),
            {"retry_after": 2.0, "retry_after_format": "date"},
        ),
        (
            {"http": "truncated_stream", "after": 0},
            lambda h: h.truncated_stream(after=0),
            {"after": 0},
        ),
        (
            {"http": 400, "should_retry": True},
            lambda h: h.status(400, should_retry=True),
            {"should_retry": True},
        ),
        (
            {"http": 429, "retry_after": 1, "retry_after_format": "both"},
            lambda h: h.status(429, retry_after=1),
            {"retry_after": 1.0},
        ),
    ],
)
def test_the_marker_and_the_fluent_call_build_the_same_fault(marker, fluent, options):
    from_marker = parse_marker((), marker)
    built = fluent(FaultPlan().http(url="/v1/x"))
    assert from_marker.options == built.fault.options == options
    assert from_marker.label == built.fault.label
    built.fault.check()


def test_the_options_show_in_the_description():
    fault = parse_marker((), {"http": "stall", "after": 2, "url": "/v1/messages"})
    assert fault.describe() == "http stall (after=2) on /v1/messages"
    fault = parse_marker((), {"http": 429, "retry_after": 2})
    assert fault.describe() == "http 429 (retry_after=2) on any request"


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            {"http": "stall", "retry_after": 2},
            "retry_after= does not apply to http='stall'; it goes with an HTTP status such as "
            "http=503, http='proxy_html', http='quota'",
        ),
        (
            {"http": 503, "after": 2},
            "after= does not apply to http=503; it goes with http='truncated_stream', http='stall'",
        ),
        (
            {"http": "timeout", "should_retry": False},
            "should_retry= does not apply to http='timeout'",
        ),
        (
            {"http": 503, "status": 502},
            "status= does not apply to http=503; it goes with http='proxy_html'",
        ),
        ({"http": "stall", "delay": 1}, "delay= does not apply to http='stall'"),
        ({"http": "proxy_html", "status": 404}, "proxy_html takes a 5xx status="),
        (
            {"http": 429, "retry_after_format": "date"},
            "retry_after=, which is missing; add retry_after=<seconds>",
        ),
        (
            {"http": 429, "retry_after": 1, "retry_after_format": "iso"},
            "retry_after_format= must be one of",
        ),
        ({"http": 503, "should_retry": "no"}, "should_retry= must be True or False"),
        ({"http": "stall", "after": -1}, "after= must be a number of stream events"),
        ({"http": "slow_first_token", "delay": 0}, "slow_first_token needs delay= seconds > 0"),
        ({"http": "flaky"}, "http= must be a status code (e.g. 503) or one of"),
    ],
)
def test_bad_combinations_name_the_marker_and_the_fix(marker, message):
    with pytest.raises(UsageError) as raised:
        parse_marker((), marker)
    text = str(raised.value)
    assert text.startswith("@pytest.mark.inject_fault(http=")
    assert fnmatch.fnmatch(text, f"*{message}*"), text


def test_a_bad_fluent_call_names_the_call():
    builder = FaultPlan().http(url="/v1/messages")
    with pytest.raises(UsageError, match=r"^faults\.http\(url='/v1/messages'\): after= must be"):
        builder.stall(after=1.5)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="which is missing; add retry_after=<seconds>"):
        builder.status(503, retry_after_format="ms")


def test_a_later_kind_does_not_replace_an_earlier_one_silently():
    builder = FaultPlan().http().status(429, retry_after=2, should_retry=True)
    with pytest.raises(UsageError, match=r"\.stall\(\) after \.status\(429\)"):
        builder.stall(after=1)
    assert (builder.fault.status, builder.fault.kind) == (429, None)
    assert (builder.fault.retry_after, builder.fault.should_retry) == (2.0, True)
