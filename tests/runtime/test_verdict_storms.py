"""The verdict's HTTP rules where a user reads the numbers: storm windows, attempt caps,
which attempts a finding names, and which requests and runs a rule looks at."""

from __future__ import annotations

import pytest

from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.verdict import Verdict

URL = "https://api.example.com/v1/chat/completions"
OTHER_URL = "https://api.example.com/v1/embeddings"


def attempt(at: float, status: int | None = 200, **fields: object) -> Event:
    fields.setdefault("run_id", "run-1")
    fields.setdefault("body_sha", "abc")
    fields.setdefault("method", "POST")
    fields.setdefault("url", URL)
    return Event(type="http.request", at=at, status=status, **fields)


def failure(kind: str = "ReadTimeout") -> ErrorRecord:
    return ErrorRecord(type=kind, message="injected", kind="runtime", retryable=True)


def judge(*events: Event, **options: object) -> Verdict:
    trace = Trace()
    for event in events:
        trace.add(event)
    return trace.verdict(**options)


def retried(at: float, n: int, **fields: object) -> list[Event]:
    """One request (its own body) that failed at ``at`` and was retried ``n`` times, 0.1 s
    apart, the last retry answered."""
    body = fields.pop("body_sha", f"body-{at}")
    attempts = [attempt(at + 0.1 * i, 503, body_sha=body, **fields) for i in range(n)]
    return [*attempts, attempt(at + 0.1 * n, 200, body_sha=body, **fields)]


# ------------------------------------------------------------------- storm windows


def test_retries_exactly_a_window_apart_count_in_the_same_window():
    # three retries of one endpoint at 0.1, 1.1 and 2.1 s: within a 2 s window, over rate 2
    events = retried(0, 1) + retried(1, 1) + retried(2, 1)
    result = judge(*events, storm_rate=2, storm_window=2.0)
    assert result.codes == ["retry_storm"]
    assert "retried 3 times within 2s (more than 2)" in result.findings[0].message


def test_retries_spread_wider_than_the_window_are_no_storm():
    # eight retries, one a second, never more than two within any 1.5 s window
    events = [e for i in range(8) for e in retried(float(i), 1)]
    assert judge(*events, storm_rate=2, storm_window=1.5).passed


def test_a_storm_late_in_a_trace_counts_only_the_retries_inside_its_window():
    calm = [e for i in range(5) for e in retried(float(i * 10), 1)]
    burst = [e for i in range(4) for e in retried(100 + i * 0.2, 1)]
    result = judge(*calm, *burst, storm_rate=3, storm_window=1.0)
    assert result.codes == ["retry_storm"]
    finding = result.findings[0]
    assert "retried 4 times within 1s (more than 3)" in finding.message
    # the finding names the retries of the burst, not the calm ones before it
    assert [e.at for e in finding.events] == pytest.approx([100.1, 100.3, 100.5, 100.7])


def test_a_storm_names_the_retries_that_first_went_over_the_rate():
    # five retries within the second; the fourth is the one over the rate of 3
    events = [e for i in range(5) for e in retried(i * 0.2, 1)]
    finding = judge(*events, storm_rate=3).findings[0]
    assert finding.code == "retry_storm"
    assert "retried 4 times within 1s (more than 3)" in finding.message
    assert [e.at for e in finding.events] == pytest.approx([0.1, 0.3, 0.5, 0.7])


def test_storms_are_counted_per_endpoint_not_across_urls():
    chat = [e for i in range(3) for e in retried(i * 0.2, 1, url=URL)]
    embed = [e for i in range(3) for e in retried(i * 0.2 + 0.05, 1, url=OTHER_URL)]
    assert judge(*chat, *embed, storm_rate=3).passed
    stormy = judge(*chat, *embed, storm_rate=2)
    assert stormy.codes == ["retry_storm"]
    assert all("retried 3 times within 1s" in f.message for f in stormy.findings)


def test_storms_are_counted_per_endpoint_not_across_methods():
    posts = [e for i in range(3) for e in retried(i * 0.2, 1, method="POST")]
    gets = [e for i in range(3) for e in retried(i * 0.2 + 0.05, 1, method="GET")]
    assert judge(*posts, *gets, storm_rate=3).passed


# ------------------------------------------------------------------- attempt caps


def test_a_request_over_its_attempt_cap_names_every_attempt():
    attempts = [attempt(i, 503) for i in range(6)] + [attempt(6, 200)]
    finding = judge(*attempts).of("retry_storm")[0]
    assert [e.at for e in finding.events] == [0, 1, 2, 3, 4, 5, 6]


def test_our_runtime_without_a_declared_cap_is_held_to_its_default_of_three_attempts():
    # no transport.retry event declared a cap: the default TransportRetry's 3 applies
    attempts = [attempt(i, 503, client="agentfaults") for i in range(3)]
    assert judge(*attempts, attempt(3, 200, client="agentfaults")).codes == ["retry_storm"]
    assert judge(*attempts[:2], attempt(2, 200, client="agentfaults")).passed


def test_a_declared_cap_of_another_run_does_not_apply():
    declared = Event(type="transport.retry", run_id="run-2", attempt=2, delay=1.0, max_attempts=9)
    attempts = [attempt(i, 503, client="agentfaults") for i in range(3)]
    result = judge(declared, *attempts, attempt(3, 200, client="agentfaults"))
    assert "retry_storm" in result.codes


# ------------------------------------------------------------------- pair findings


def test_one_pair_is_reported_without_a_count_and_more_pairs_with_theirs():
    once = judge(attempt(10, 400), attempt(11, 200)).findings[0]
    assert once.message.endswith("got HTTP 400 and was sent again 1.000s later")
    twice = judge(attempt(0, 400), attempt(1, 400), attempt(2, 200)).findings[0]
    assert twice.message.endswith("got HTTP 400 and was sent again 1.000s later (2 times)")


def test_a_pair_finding_names_the_failed_attempt_and_every_retry_after_it():
    finding = judge(attempt(0, 400), attempt(1, 400), attempt(2, 200)).findings[0]
    assert finding.code == "retried_non_retryable"
    assert [e.at for e in finding.events] == [0, 1, 2]


def test_a_retry_after_date_is_obeyed_to_its_one_second_resolution():
    # "Retry-After: <date>" two seconds away, retried one second later: the date's own
    # rounding can account for the second, so this is not retry_after_ignored
    asked = attempt(0, 429, retry_after=2.0, retry_after_date="Wed, 21 Oct 2026 07:28:02 GMT")
    assert judge(asked, attempt(1.0, 200)).passed
    asked_in_seconds = attempt(0, 429, retry_after=2.0)
    assert judge(asked_in_seconds, attempt(1.0, 200)).codes == ["retry_after_ignored"]


def test_an_sdk_call_the_app_makes_again_after_a_failure_is_a_retry_of_the_same_request():
    # an SDK numbers its own attempts (x-stainless-retry-count) from 0 at each call, so
    # the app's own loop around it starts at 0 every time: still the same request
    first = attempt(0, 400, retry_count=0)
    again = attempt(0.001, 200, retry_count=0)
    result = judge(first, again)
    assert result.requests == 1
    assert result.codes == ["retried_non_retryable"]


def test_the_sdks_attempt_cap_applies_to_each_of_its_calls_not_to_the_loop_around_them():
    # two calls of an SDK with max_retries=2, each making its 3 attempts with backoff, the
    # app waiting 10 s between them: 6 attempts of one request, none a storm
    calls = [
        attempt(10.0 * call + wait, status, retry_count=n)
        for call in range(2)
        for n, (wait, status) in enumerate([(0, 503), (0.5, 503), (1.5, 503 if call == 0 else 200)])
    ]
    result = judge(*calls)
    assert result.requests == 1
    assert result.passed, result.codes


def test_one_call_of_the_sdk_over_a_cap_is_a_storm_even_inside_an_app_loop():
    # the SDKs' cap is their max_retries, which the verdict does not know: a cap given to
    # the verdict applies to each call, and one call made 5 attempts
    calls = [attempt(n * 1.0, 503, retry_count=n) for n in range(5)]
    calls.append(attempt(20.0, 200, retry_count=0))
    result = judge(*calls, max_attempts=3)
    storms = [f for f in result.findings if f.code == "retry_storm"]
    assert len(storms) == 1
    assert "attempted 5 times (more than 3)" in storms[0].message
    assert len(storms[0].events) == 5  # that call's attempts, not the app's next call
    assert judge(*calls[:3], calls[-1], max_attempts=3).passed  # 3 + 1: within the cap


def test_an_app_loop_that_waits_nothing_between_sdk_calls_is_no_backoff_and_a_storm():
    calls = [attempt(0.0, 503, retry_count=0) for _ in range(20)]
    result = judge(*calls)
    assert result.requests == 1
    assert {"no_backoff", "retry_storm"} <= set(result.codes)
    assert "gave_up_early" not in result.codes  # it was retried, 19 times


def test_an_app_loop_with_backoff_around_an_sdk_without_retries_passes():
    # max_retries=0: the app backs off 1 s, 2 s, 4 s and the fourth call is answered
    waits = [(0.0, 503), (1.0, 503), (3.0, 503), (7.0, 200)]
    result = judge(*[attempt(at, status, retry_count=0) for at, status in waits])
    assert result.requests == 1
    assert result.passed, result.codes


def test_an_sdk_call_made_again_after_a_success_is_a_new_request():
    result = judge(attempt(0, 200, retry_count=0), attempt(0.001, 200, retry_count=0))
    assert result.requests == 2


def test_a_cut_stream_requested_again_at_once_is_no_finding():
    # no SDK re-issues a started stream: the app's own re-request is the recovery, and a
    # cut is not an overloaded server asking for a wait
    cut = attempt(0, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    cut.__dict__["retry_count"] = 0
    again = attempt(0.0, 200, retry_count=0)
    assert judge(cut, again).passed


# ------------------------------------------------------------------- give-ups, cut streams


def test_every_request_is_judged_after_a_cut_stream():
    cut = attempt(0, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    cut_again = attempt(0.5, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    gave_up = attempt(1, 503, body_sha="other")
    result = judge(cut, cut_again, gave_up, Event(type="run.end", run_id="run-1", status="error"))
    assert result.codes == ["gave_up_early"]
    assert "failed once (HTTP 503)" in result.findings[0].message


def test_every_request_is_judged_after_one_whose_run_recovered():
    recovered = attempt(0, 503, run_id="run-1")
    gave_up = attempt(1, 503, run_id="run-2")
    ends = [
        Event(type="run.end", run_id="run-1", status="ok"),
        Event(type="run.end", run_id="run-2", status="error"),
    ]
    result = judge(recovered, gave_up, *ends)
    assert result.codes == ["gave_up_early"]
    assert result.findings[0].events[0].field("run_id") == "run-2"


def test_every_request_is_judged_after_a_malformed_body_the_run_rejected():
    rejected = attempt(0, 200, fault="not_json", run_id="run-1")
    used = attempt(1, 200, fault="malformed_body", run_id="run-2")
    ends = [
        Event(type="run.end", run_id="run-1", status="error"),
        Event(type="run.end", run_id="run-2", status="ok"),
    ]
    result = judge(rejected, used, *ends)
    assert result.codes == ["malformed_body_accepted"]
    assert "(malformed_body)" in result.findings[0].message


def test_a_cut_stream_is_judged_by_its_own_run_not_by_another_run_that_ended_ok():
    cut = attempt(0, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    ends = [
        Event(type="run.end", run_id="run-1", status="error"),
        Event(type="run.end", run_id="run-2", status="ok"),
    ]
    result = judge(cut, *ends)
    assert "truncated_stream_accepted" not in result.codes
    assert result.codes == ["gave_up_early"]


def test_a_run_with_two_transport_policies_is_held_to_the_larger_cap():
    # a primary model retrying up to 5 attempts, then a fallback declaring 2
    declared = [
        Event(type="transport.retry", run_id="run-1", attempt=1, delay=1.0, max_attempts=5),
        Event(type="transport.retry", run_id="run-1", attempt=1, delay=1.0, max_attempts=2),
    ]
    attempts = [attempt(i, 503, client="agentfaults") for i in range(4)]
    result = judge(*declared, *attempts, attempt(4, 200, client="agentfaults"))
    assert "retry_storm" not in result.codes
