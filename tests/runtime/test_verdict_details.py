"""The verdict's details a user reads or relies on: its report text, the advice for our own
client, which failures count as ambiguous, and which run end says a request recovered."""

from __future__ import annotations

from pytest_agentfaults.runtime._verdict_codes import ADVICE
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.verdict import Verdict

URL = "https://api.example.com/v1/chat/completions"


def attempt(at: float, status: int | None = 200, **fields: object) -> Event:
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


def tool_event(type: str, at: float, **fields: object) -> Event:
    fields.setdefault("run_id", "run-1")
    fields.setdefault("tool", "pay")
    return Event(type=type, at=at, **fields)


# ------------------------------------------------------------------- the report


def test_the_report_says_finding_for_one_and_findings_for_more():
    one = judge(attempt(0, 503)).render()
    assert one.splitlines()[0] == (
        "resilience verdict: 1 finding (1 HTTP requests (1 attempts), 0 retry events)"
    )
    two = judge(attempt(0, 503), attempt(0, 502, body_sha="other")).render()
    assert two.splitlines()[0].startswith("resilience verdict: 2 findings (")


def test_the_report_puts_each_finding_and_its_advice_on_their_own_lines():
    result = judge(attempt(0, 503))
    lines = result.render().splitlines()
    assert lines[1].startswith("gave_up_early: POST")
    assert lines[2].startswith("  advice: ")
    assert lines[3].startswith("  #0 http.request")
    assert result.findings[0].render().splitlines() == lines[1:]


def test_a_passed_report_lists_every_ignored_code():
    result = judge(
        attempt(0, 503),
        attempt(1, 400, body_sha="b"),
        attempt(1.01, 400, body_sha="b"),
        ignore=("gave_up_early", "retried_non_retryable"),
    )
    assert result.passed
    assert result.render().endswith("; ignored: gave_up_early, retried_non_retryable")
    assert "ignored" not in judge().render()


# ------------------------------------------------------------------- advice


def test_a_finding_on_our_own_transport_retry_gets_this_runtime_advice():
    storm = [
        Event(type="transport.retry", run_id="r", attempt=n, delay=0.0, error=failure())
        for n in range(2, 4)
    ]
    found = judge(*storm).of("no_backoff")
    assert found
    assert "transport_retry=af.TransportRetry(" in found[0].advice
    assert found[0].advice != ADVICE["no_backoff"]
    # a tool's retry is not the model client's: the general advice
    tool_retry = Event(type="tool.retry", tool="t", attempt=2, delay=0.0, error=failure())
    assert judge(tool_retry).of("no_backoff")[0].advice == ADVICE["no_backoff"]


def test_a_plain_client_finding_gets_the_general_advice_not_the_runtime_one():
    found = judge(attempt(0, 503)).of("gave_up_early")[0]
    assert "this runtime's model clients" not in found.advice


# ------------------------------------------------------------------- ambiguity


def rerun_after(error: ErrorRecord | None, **flags: object) -> Verdict:
    return judge(
        tool_event("tool.call", 0, call_id="c1", attempt=1, idempotent=False),
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=error, **flags),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
    )


def test_a_failure_the_event_marks_ambiguous_flags_a_rerun_whatever_its_type():
    result = rerun_after(failure("Oops"), ambiguous=True)
    assert result.codes == ["retried_non_idempotent"]
    assert "failed with Oops" in result.findings[0].message


def test_a_plain_failure_of_a_non_idempotent_tool_may_be_retried():
    # the call surely failed (not a timeout, not a broken connection): running it again
    # cannot do the work twice
    assert rerun_after(failure("ValueError", retryable=False)).passed
    assert rerun_after(failure("KeyError")).passed


def test_an_error_event_without_an_error_record_is_not_ambiguous():
    assert rerun_after(None).passed


def test_a_timeout_of_a_non_idempotent_tool_then_a_rerun_is_flagged():
    assert rerun_after(failure("TimeoutError")).codes == ["retried_non_idempotent"]


# ------------------------------------------------------------------- recovery


def test_only_the_request_s_own_run_ending_ok_counts_as_recovered():
    # another run ended ok, this request's own run ended in error: it gave up
    result = judge(
        attempt(0, 503, run_id="a"),
        Event(type="run.end", run_id="b", status="ok"),
        Event(type="run.end", run_id="a", status="error"),
    )
    assert result.codes == ["gave_up_early"]


def test_a_request_whose_run_never_ended_recovered_only_if_a_run_ended_ok_after_it():
    later_ok = Event(type="run.end", run_id="b", status="ok")
    assert judge(attempt(0, 503, run_id="unended"), later_ok).passed
    # a run that ended ok before the request does not cover it
    assert judge(later_ok, attempt(0, 503, run_id="unended")).codes == ["gave_up_early"]
    # a later run that ended in error does not either
    later_error = Event(type="run.end", run_id="b", status="error")
    assert judge(attempt(0, 503, run_id="unended"), later_error).codes == ["gave_up_early"]


# ------------------------------------------------------------------- retry events


def retry(attempt: int, delay: float = 1.0, **fields: object) -> Event:
    fields.setdefault("type", "tool.retry")
    fields.setdefault("error", failure())
    return Event(attempt=attempt, delay=delay, **fields)


def test_a_retried_non_retryable_error_names_what_was_retried():
    bad = failure("ValueError", retryable=False)
    result = judge(
        retry(2, tool="parse", error=bad),
        retry(2, type="llm.retry", model="gpt-x", error=bad),
        retry(2, type="llm.retry", agent="bot", error=bad),
        retry(2, type="llm.retry", error=bad),
    )
    assert [f.message for f in result.findings] == [
        "tool.retry of parse retried ValueError, which is not retryable",
        "llm.retry of gpt-x retried ValueError, which is not retryable",
        "llm.retry of bot retried ValueError, which is not retryable",
        "llm.retry of a model call retried ValueError, which is not retryable",
    ]
    assert all(f.events for f in result.findings)


def test_a_wait_of_exactly_the_minimum_backoff_is_enough():
    assert judge(retry(2, delay=0.05, tool="t")).passed
    assert judge(retry(2, delay=0.5, tool="t"), min_backoff=0.5).passed
    assert judge(retry(2, delay=0.49, tool="t"), min_backoff=0.5).codes == ["no_backoff"]


def test_a_storm_starts_past_the_cap_once_per_call():
    at_cap = [retry(n, tool="t", call_id="c1") for n in range(2, 6)]
    assert judge(*at_cap).passed  # attempt 5 is the default cap: not more
    past = [retry(n, tool="t", call_id="c1") for n in range(2, 8)]
    result = judge(*past)
    assert result.codes == ["retry_storm"]
    assert result.findings[0].message == "tool.retry of t reached attempt 6 (more than 5)"
    assert result.findings[0].events[0].attempt == 6
    # two calls storming: one finding each
    other = [retry(n, tool="u", call_id="c2") for n in range(2, 8)]
    assert len(judge(*past, *other).of("retry_storm")) == 2


def test_an_explicit_cap_judges_retry_events_too():
    result = judge(retry(2, tool="t"), retry(3, tool="t"), max_attempts=2)
    assert result.codes == ["retry_storm"]
    assert "reached attempt 3 (more than 2)" in result.findings[0].message


def test_our_transport_retry_events_do_not_storm_by_their_attempt_number():
    transport = [retry(n, type="transport.retry", run_id="r", max_attempts=9) for n in range(2, 9)]
    assert "retry_storm" not in judge(*transport).codes


def test_a_non_idempotent_call_that_then_succeeded_is_not_a_rerun():
    result = judge(
        tool_event("tool.call", 0, call_id="c1", attempt=1, idempotent=False),
        tool_event("tool.error", 0, call_id="c1", attempt=1, error=failure("TimeoutError")),
        tool_event("tool.result", 1, call_id="c1", attempt=1),
        tool_event("tool.call", 2, call_id="c1", attempt=2),
    )
    assert result.passed


def test_an_unknown_ignored_code_is_refused_with_the_list_of_codes():
    import pytest

    from pytest_agentfaults.errors import UsageError
    from pytest_agentfaults.runtime._verdict_codes import CODES

    with pytest.raises(UsageError) as caught:
        judge(ignore=("typo",))
    assert str(caught.value).endswith(f"the codes are {', '.join(CODES)}")


# ------------------------------------------------------------------- cut streams


def cut(at: float, **fields: object) -> Event:
    return attempt(
        at, 200, fault="truncated_stream", error=failure("RemoteProtocolError"), **fields
    )


def test_a_cut_stream_whose_run_ended_ok_was_accepted():
    end = Event(type="run.end", run_id="run-1", status="ok")
    result = judge(cut(0), end)
    (found,) = result.findings
    assert found.message.endswith(
        ": the stream was cut mid-way, never requested again, and the run still ended ok"
    )
    assert [e.type for e in found.events] == ["http.request", "run.end"]


def test_a_cut_stream_given_up_on_is_gave_up_early():
    end = Event(type="run.end", run_id="other", status="error")
    result = judge(cut(0, client="openai.OpenAI"), end)
    (found,) = result.findings
    assert found.code == "gave_up_early"
    assert found.message.endswith(": the stream was cut mid-way and never requested again")
    assert [e.type for e in found.events] == ["http.request"]
    assert "no SDK re-issues a stream" in found.advice


def test_a_cut_stream_is_judged_by_a_run_end_after_it_only():
    before = Event(type="run.end", run_id="run-1", status="ok")
    # the run that ended ok ended before the stream was cut: not accepted, given up
    assert judge(before, cut(1)).codes == ["gave_up_early"]


def test_a_cut_stream_on_a_retried_request_is_the_caller_s_policy():
    first = attempt(0, 503, client="httpx")
    second = cut(1, client="httpx")
    assert judge(first, second).passed


def test_without_call_ids_a_rerun_is_an_attempt_numbered_above_one():
    def no_id(type: str, at: float, **fields: object) -> Event:
        return tool_event(type, at, call_id=None, **fields)

    timeout = failure("TimeoutError")
    declared = no_id("tool.call", 0, attempt=1, idempotent=False)
    rerun = judge(
        declared,
        no_id("tool.error", 0, attempt=1, error=timeout),
        no_id("tool.call", 1, attempt=2),
    )
    assert rerun.codes == ["retried_non_idempotent"]
    # a new call the model made (attempt 1, or no attempt number) is its choice; a rerun
    # after it is still caught
    new_then_rerun = judge(
        declared,
        no_id("tool.error", 0, attempt=1, error=timeout),
        no_id("tool.call", 1, attempt=1),
        no_id("tool.call", 2),
        no_id("tool.call", 3, attempt=2),
    )
    assert new_then_rerun.codes == ["retried_non_idempotent"]
    assert new_then_rerun.findings[0].events[-1].attempt == 2


def test_a_rerun_after_a_failure_flagged_ambiguous_without_an_error_says_so():
    result = judge(
        tool_event("tool.call", 0, call_id="c1", attempt=1, idempotent=False),
        tool_event("tool.error", 0, call_id="c1", attempt=1, ambiguous=True),
        tool_event("tool.call", 1, call_id="c1", attempt=2),
    )
    assert "failed with an ambiguous failure (it may have taken effect)" in (
        result.findings[0].message
    )


# ------------------------------------------------------------------- malformed bodies


def test_a_malformed_body_used_is_named_with_its_status_and_fault():
    bad = attempt(0, 200, fault="not_json")
    result = judge(bad, Event(type="run.end", run_id="run-1", status="ok"))
    (found,) = result.findings
    assert found.code == "malformed_body_accepted"
    assert found.message.endswith(
        ": answered 200 with a body that is not the provider's JSON (not_json), never "
        "requested again, and used"
    )
    assert [e.type for e in found.events] == ["http.request"]


def test_each_request_is_judged_for_a_malformed_body_on_its_own():
    ok = attempt(0, 200, body_sha="a")
    refused = attempt(1, 200, fault="malformed_body", body_sha="b", run_id="failed-run")
    used = attempt(2, 200, fault="malformed_body", body_sha="c")
    result = judge(
        ok,
        refused,
        used,
        Event(type="run.end", run_id="failed-run", status="error"),
        Event(type="run.end", run_id="run-1", status="ok"),
    )
    assert [f.code for f in result.findings] == ["malformed_body_accepted"]
    assert result.findings[0].events[0].field("body_sha") == "c"


# ------------------------------------------------------------------- what one request is


def test_another_method_or_url_is_another_request_not_a_retry():
    failed = attempt(0, 503)
    other_method = Event(
        type="http.request", at=1, status=200, method="GET", url=URL, run_id="run-1", body_sha="abc"
    )
    other_url = Event(
        type="http.request",
        at=1,
        status=200,
        method="POST",
        url=URL + "/x",
        run_id="run-1",
        body_sha="abc",
    )
    assert judge(failed, other_method).codes == ["gave_up_early"]
    assert judge(failed, other_url).codes == ["gave_up_early"]
    assert judge(failed, attempt(1, 200)).passed


def test_every_request_is_checked_for_giving_up_whatever_came_before():
    earlier = [
        attempt(0, 200, body_sha="fine"),  # succeeded
        attempt(1, 400, body_sha="client-error"),  # not worth retrying
        attempt(2, 503, body_sha="retried"),  # retried...
        attempt(3, 200, body_sha="retried"),  # ...and recovered
        attempt(
            4, 200, fault="truncated_stream", error=failure("RemoteProtocolError"), body_sha="cut"
        ),  # a cut stream requested again
        attempt(5, 200, body_sha="cut"),
    ]
    result = judge(*earlier, attempt(9, 503, body_sha="last"))
    assert result.codes == ["gave_up_early"]
    assert result.findings[0].events[0].field("body_sha") == "last"


def test_a_quick_retry_says_how_quick_and_a_wait_of_the_minimum_is_enough():
    quick = judge(attempt(0, 503), attempt(0.01, 200))
    assert quick.codes == ["no_backoff"]
    assert "retried 0.010s after HTTP 503 (less than 0.05s)" in quick.findings[0].message
    assert judge(attempt(0, 503), attempt(0.05, 200)).passed
