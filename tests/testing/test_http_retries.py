"""The summary's count of retries made below the runtime: an SDK's own, the loop around
it, a plain client's loop (`count_retries`)."""

from __future__ import annotations

from pytest_agentfaults.runtime.events import Event
from pytest_agentfaults.testing.report import count_retries


def request(run_id="http", url="https://api.openai.com/v1/chat/completions", body="ab12", **extra):
    return Event(type="http.request", run_id=run_id, method="POST", url=url, body_sha=body, **extra)


def http_retries(events: list[Event]) -> int:
    return count_retries(events).http


def test_an_sdk_says_which_attempts_are_retries():
    events = [request(retry_count=0), request(retry_count=1), request(retry_count=2)]
    assert http_retries(events) == 2


def test_a_new_sdk_call_with_the_same_body_after_a_success_is_not_a_retry():
    ok = {"retry_count": 0, "status": 200}
    assert http_retries([request(**ok), request(**ok)]) == 0


def test_a_new_sdk_call_after_a_failure_is_the_apps_retry():
    # the loop around the SDK: each call starts at 0, and follows a failed attempt
    failed = request(retry_count=0, status=503)
    assert http_retries([failed, request(retry_count=0, status=503), request(retry_count=0)]) == 2
    other = request(retry_count=0, status=200, body="other")  # another request in between
    assert http_retries([failed, other, request(retry_count=0, status=200)]) == 1


def test_an_sdk_chain_then_the_apps_call_counts_both():
    chain = [request(retry_count=n, status=503) for n in range(3)]
    assert http_retries([*chain, request(retry_count=0, status=200)]) == 3


def test_a_client_that_says_nothing_retries_when_it_sends_the_same_request_again():
    events = [request(), request(), request(body="other"), request(url="https://x.test/")]
    assert http_retries(events) == 1


def test_our_own_runs_count_their_retries_themselves():
    assert http_retries([request(run_id="run-1"), request(run_id="run-1")]) == 0
    failed = {"run_id": "run-1", "retry_count": 0, "status": 503}
    assert http_retries([request(**failed), request(**failed)]) == 0


def test_other_events_do_not_count():
    assert http_retries([Event(type="http.fault"), Event(type="tool.call")]) == 0
