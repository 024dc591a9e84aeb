"""The summary's count of retries made below the runtime: an SDK's own, a plain loop's."""

from __future__ import annotations

from pytest_agentfaults.runtime.events import Event
from pytest_agentfaults.testing._http_retries import http_retries


def request(run_id="http", url="https://api.openai.com/v1/chat/completions", body="ab12", **extra):
    return Event(type="http.request", run_id=run_id, method="POST", url=url, body_sha=body, **extra)


def test_an_sdk_says_which_attempts_are_retries():
    events = [request(retry_count=0), request(retry_count=1), request(retry_count=2)]
    assert http_retries(events) == 2


def test_a_new_sdk_call_with_the_same_body_is_not_a_retry_of_the_sdk():
    assert http_retries([request(retry_count=0), request(retry_count=0)]) == 0


def test_a_client_that_says_nothing_retries_when_it_sends_the_same_request_again():
    events = [request(), request(), request(body="other"), request(url="https://x.test/")]
    assert http_retries(events) == 1


def test_our_own_runs_count_their_retries_themselves():
    assert http_retries([request(run_id="run-1"), request(run_id="run-1")]) == 0


def test_other_events_do_not_count():
    assert http_retries([Event(type="http.fault"), Event(type="tool.call")]) == 0
