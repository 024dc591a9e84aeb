"""The resilience verdict: a pure function of a trace, judged in virtual time."""

from __future__ import annotations

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._verdict_codes import CODES
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.verdict import Finding, NotResilientError, Verdict, verdict

URL = "https://api.example.com/v1/chat/completions"


def attempt(at: float, status: int | None = 200, **fields: object) -> Event:
    """An http.request event of one request (same run, method, URL, body)."""
    fields.setdefault("run_id", "run-1")
    fields.setdefault("body_sha", "abc")
    return Event(type="http.request", at=at, status=status, method="POST", url=URL, **fields)


def failure(kind: str = "ReadTimeout", *, retryable: bool = True) -> ErrorRecord:
    return ErrorRecord(type=kind, message="injected", kind="runtime", retryable=retryable)


def judge(*events: Event, **options: object) -> Verdict:
    trace = Trace()
    for event in events:
        trace.add(event)
    return trace.verdict(**options)


# ---------------------------------------------------------------------------- passing


def test_an_empty_trace_has_no_findings_and_nothing_judged():
    # It used to render as "passed": a vacuous pass (assert_resilient now fails on it).
    result = judge()
    assert result.passed
    assert result.findings == ()
    assert not result.judged
    assert result.render().startswith(
        "resilience verdict: nothing to judge (0 HTTP requests (0 attempts), 0 retry events, "
        "no failure in 0 events)"
    )


def test_a_retry_with_backoff_that_honours_retry_after_passes():
    result = judge(attempt(0, 503), attempt(0.5, 429, retry_after=2), attempt(2.5, 200))
    assert result.passed, result.render()
    assert (result.requests, result.attempts) == (1, 3)


def test_separate_requests_are_not_retries_of_each_other():
    # two turns of an agent: different bodies, no wait needed between them
    result = judge(attempt(0, 200, body_sha="a"), attempt(0, 200, body_sha="b"))
    assert result.passed
    assert result.requests == 2


def test_a_success_or_an_sdk_retry_count_of_zero_starts_a_new_request():
    result = judge(
        attempt(0, 200),
        attempt(0, 200),  # the same body again after a success: a new request
        attempt(0, 503, retry_count=0),
        attempt(1, 200, retry_count=1),
        attempt(1, 200, retry_count=0),
    )
    assert result.passed, result.render()
    assert result.requests == 4


# ---------------------------------------------------------------------------- each code


def test_retry_after_ignored():
    result = judge(attempt(0, 429, retry_after=2), attempt(1.0, 200))
    assert result.codes == ["retry_after_ignored"]
    (found,) = result.findings
    assert "asked to wait 2s and the retry came 1.000s later" in found.message
    assert "Retry-After" in found.advice
    assert len(found.events) == 2


def test_retry_after_is_judged_with_a_millisecond_of_tolerance():
    assert judge(attempt(0, 429, retry_after=2), attempt(1.9995, 200)).passed


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_retried_non_retryable(status):
    result = judge(attempt(0, status), attempt(1, status))
    assert result.codes == ["retried_non_retryable"]
    assert f"got HTTP {status}" in result.findings[0].message


def test_no_backoff():
    result = judge(attempt(0, 503), attempt(0, 503), attempt(0.01, 200))
    assert result.codes == ["no_backoff"]
    assert "(2 times)" in result.findings[0].message
    assert "backoff" in result.findings[0].advice


def test_no_backoff_threshold_is_tunable():
    events = (attempt(0, None, error=failure()), attempt(0.02, 200))
    assert judge(*events).codes == ["no_backoff"]
    assert judge(*events, min_backoff=0.01).passed


def test_retry_storm_by_attempts():
    attempts = [attempt(i, 503) for i in range(6)] + [attempt(6, 200)]
    result = judge(*attempts)
    assert result.codes == ["retry_storm"]
    assert "attempted 7 times (more than 5)" in result.findings[0].message
    assert judge(*attempts, max_attempts=7).passed


def test_retry_storm_by_rate_across_requests():
    # eleven requests of one endpoint, each retried once, all within a second
    events = []
    for i in range(11):
        events += [
            attempt(i * 0.05, 503, body_sha=str(i)),
            attempt(i * 0.05 + 0.06, 200, body_sha=str(i)),
        ]
    result = judge(*events)
    assert result.codes == ["retry_storm"]
    assert "retried 11 times within 1s" in result.findings[0].message


def test_gave_up_early():
    result = judge(attempt(0, 503))
    assert result.codes == ["gave_up_early"]
    assert "failed once (HTTP 503) and was never retried" in result.findings[0].message


@pytest.mark.parametrize(
    "event",
    [
        attempt(0, 400),  # not retryable: giving up is right
        attempt(0, 429, retry_after=300),  # asked to wait five minutes
        attempt(0, None, error=failure("UnmatchedRequestError", retryable=False)),
    ],
    ids=["400", "long-retry-after", "test-mistake"],
)
def test_giving_up_is_fine_when_retrying_would_not_help(event):
    assert judge(event).passed


def test_a_run_that_recovered_another_way_did_not_give_up():
    result = judge(
        attempt(0, 503, run_id="run-7"), Event(type="run.end", run_id="run-7", status="ok")
    )
    assert result.passed


def test_a_run_that_ended_in_error_gave_up():
    ended = Event(type="run.end", run_id="run-7", status="error")
    assert judge(attempt(0, None, run_id="run-7", error=failure()), ended).codes == [
        "gave_up_early"
    ]


def test_truncated_stream_accepted():
    cut = attempt(0, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    result = judge(cut, Event(type="run.end", run_id="run-1", status="ok"))
    assert result.codes == ["truncated_stream_accepted"]
    assert "[DONE]" in result.findings[0].advice


def test_a_truncated_stream_requested_again_is_fine():
    cut = attempt(0, 200, fault="truncated_stream", error=failure("RemoteProtocolError"))
    result = judge(cut, attempt(0.5, 200), Event(type="run.end", run_id="run-1", status="ok"))
    assert result.passed, result.render()


def test_retry_events_without_backoff_or_of_non_retryable_errors():
    result = judge(
        Event(type="tool.retry", tool="fetch", call_id="c1", attempt=2, delay=0.0, error=failure()),
        Event(
            type="tool.retry",
            tool="parse",
            call_id="c2",
            attempt=2,
            delay=1.0,
            error=failure("ValueError", retryable=False),
        ),
        Event(type="llm.retry", attempt=2, detail="output correction", error=failure()),
    )
    assert result.codes == ["no_backoff", "retried_non_retryable"]
    assert result.findings[0].message == (
        "tool.retry of fetch waited 0s before attempt 2 (less than 0.05s)"
    )
    assert result.retries == 3


def test_a_tool_retried_into_a_storm():
    retries = [
        Event(type="tool.retry", tool="fetch", call_id="c1", attempt=n, delay=1.0, error=failure())
        for n in range(2, 9)
    ]
    result = judge(*retries)
    assert result.codes == ["retry_storm"]
    assert len(result.findings) == 1


# ---------------------------------------------------------------------------- the API


def test_ignore_drops_codes_and_unknown_codes_are_refused():
    assert judge(attempt(0, 503), ignore=("gave_up_early",)).passed
    assert "ignored: gave_up_early" in judge(attempt(0, 503), ignore=("gave_up_early",)).render()
    with pytest.raises(UsageError, match="unknown code 'typo'"):
        judge(ignore=("typo",))


def test_assert_resilient_raises_an_assertion_error_with_the_rendering():
    trace = Trace([attempt(0, 429, retry_after=2), attempt(0.1, 200)])
    with pytest.raises(AssertionError) as caught:
        trace.assert_resilient()
    assert isinstance(caught.value, NotResilientError)
    text = str(caught.value)
    assert text.startswith("resilience verdict: 1 finding")
    assert "retry_after_ignored:" in text
    assert "advice:" in text
    assert "http.request" in text
    assert caught.value.verdict.of("retry_after_ignored")
    trace.assert_resilient(ignore=("retry_after_ignored",))


def test_findings_render_their_events():
    found = judge(attempt(0, 503)).findings[0]
    assert isinstance(found, Finding)
    assert str(found).startswith("gave_up_early: POST")
    assert "#0 http.request" in found.render()


def test_every_code_has_advice():
    from pytest_agentfaults.runtime._verdict_codes import ADVICE

    assert set(ADVICE) == set(CODES)


def test_verdict_takes_a_plain_list_of_events():
    assert verdict([attempt(0, 503)]).codes == ["gave_up_early"]


# ---------------------------------------------------------------------------- end to end


@pytest.mark.inject_fault(http=503, url=URL, times=5)
def test_a_naive_retry_loop_is_caught(http_faults, trace):
    http_faults.post(URL).respond(200)
    with httpx.Client() as client:
        for _ in range(6):
            if client.post(URL, content=b"{}").status_code == 200:
                break
    result = trace.verdict()
    assert result.codes == ["no_backoff", "retry_storm"]  # six attempts, no wait between
    assert "(5 times)" in result.of("no_backoff")[0].message


@pytest.mark.inject_fault(http=429, retry_after=2)
def test_our_transport_retry_honours_retry_after(http_faults, trace):
    http_faults.post(URL).respond(
        200,
        json={"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]},
    )
    with af.OpenAIModel("m", base_url="https://api.example.com/v1", api_key="k") as model:
        assert af.Agent("bot", model=model).run("hi").output == "ok"
    trace.assert_resilient()


# ---------------------------------------------------------------------- retried_non_idempotent


def tool_event(type: str, at: float, **fields: object) -> Event:
    fields.setdefault("run_id", "run-1")
    fields.setdefault("tool", "pay")
    return Event(type=type, at=at, **fields)


def test_a_declared_non_idempotent_tool_rerun_after_a_timeout_is_flagged():
    # A framework the runtime does not own: the marker's fault event declares the tool.
    result = judge(
        tool_event("tool.fault", 0, call_id="c1", idempotent=False, status="raises"),
        tool_event("tool.call", 0, call_id="c1", attempt=1),
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=failure("ReadTimeout")),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
        tool_event("tool.result", 1, call_id="c1", attempt=2),
    )
    assert result.codes == ["retried_non_idempotent"]
    found = result.of("retried_non_idempotent")[0]
    assert "'pay' must not run twice, failed with ReadTimeout" in found.message
    assert [e.type for e in found.events] == ["tool.error", "tool.call"]


def test_non_idempotent_reruns_that_are_safe_are_not_flagged():
    declared = tool_event("tool.call", 0, call_id="c1", attempt=1, idempotent=False)
    refused = failure("ConnectionRefusedError")
    assert judge(
        declared,
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=refused),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
    ).passed
    # the model called it again (a new call), after checking: its choice, not a rerun
    assert judge(
        declared,
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=failure("TimeoutError")),
        tool_event("tool.call", 1, call_id="c2", attempt=1),
    ).passed
    # an idempotent tool may be retried after a timeout
    assert judge(
        tool_event("tool.call", 0, call_id="c1", attempt=1),
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=failure("TimeoutError")),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
    ).passed
    # the event's own ambiguous field wins over the error type
    assert judge(
        declared,
        tool_event(
            "tool.error", 0, call_id="c1", attempt=1, error=failure("Oops"), ambiguous=False
        ),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
    ).passed
