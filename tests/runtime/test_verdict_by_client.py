"""The verdict judges each client by its own retry rules (issue 19.3), and its advice names
the client and the setting to change (issue 21.6). Unit tests on traces; the end-to-end
tests through the real SDKs are in tests/sdk/test_verdict_sdk_rules.py."""

from __future__ import annotations

import pytest

from pytest_agentfaults.runtime._verdict_rules import RULES, client_rules
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.verdict import Verdict

URL = "https://api.example.com/v1/chat/completions"
OPENAI = "openai.OpenAI"
ANTHROPIC = "anthropic.Anthropic"
RUNTIME = "agentfaults"


def attempt(at: float, status: int | None = 200, **fields: object) -> Event:
    fields.setdefault("run_id", "")
    fields.setdefault("body_sha", "abc")
    return Event(type="http.request", at=at, status=status, method="POST", url=URL, **fields)


def failure(kind: str = "ReadTimeout", *, retryable: bool = True) -> ErrorRecord:
    return ErrorRecord(type=kind, message="injected", kind="runtime", retryable=retryable)


def judge(*events: Event, **options: object) -> Verdict:
    trace = Trace()
    for event in events:
        trace.add(event)
    return trace.verdict(**options)


# ------------------------------------------------------------------- x-should-retry


@pytest.mark.parametrize("client", [OPENAI, ANTHROPIC, RUNTIME, "httpx", None])
def test_a_5xx_the_server_marked_not_retryable_may_be_given_up(client):
    result = judge(attempt(0, 503, should_retry=False, client=client))
    assert result.passed, result.render()


@pytest.mark.parametrize("client", [OPENAI, ANTHROPIC, RUNTIME, None])
def test_a_4xx_the_server_marked_retryable_may_be_retried(client):
    result = judge(
        attempt(0, 400, should_retry=True, client=client, retry_count=0),
        attempt(0.5, 200, client=client, retry_count=1),
    )
    assert result.passed, result.render()


def test_retrying_what_the_server_marked_not_retryable_is_a_finding():
    result = judge(attempt(0, 503, should_retry=False), attempt(0.5, 200))
    assert result.codes == ["retried_non_retryable"]
    assert "x-should-retry: false" in result.findings[0].message


def test_giving_up_on_a_4xx_the_server_marked_retryable_is_a_finding():
    result = judge(attempt(0, 400, should_retry=True, client=OPENAI, retry_count=0))
    assert result.codes == ["gave_up_early"]


# ------------------------------------------------------------------- server-asked waits


def test_obeying_a_server_asked_wait_under_the_backoff_floor_is_not_no_backoff():
    result = judge(attempt(0, 429, retry_after=0.02), attempt(0.02, 200))
    assert result.passed, result.render()


def test_a_retry_after_of_zero_is_no_instruction_so_the_backoff_floor_applies():
    # the SDKs read Retry-After: 0 as "no instruction" and back off; so does the verdict
    result = judge(attempt(0, 503, retry_after=0.0), attempt(0.0, 200))
    assert result.codes == ["no_backoff"]


def test_a_date_retry_after_is_judged_with_its_one_second_resolution():
    asked = {"retry_after": 30.0, "retry_after_date": True}
    assert judge(attempt(0, 429, **asked), attempt(29.4, 200)).passed
    ignored = judge(attempt(0, 429, **asked), attempt(1.0, 200))
    assert ignored.codes == ["retry_after_ignored"]


# ------------------------------------------------------------------- storms


def test_an_sdk_with_max_retries_5_riding_out_five_faults_is_not_a_storm():
    waits = [0.0, 0.5, 1.5, 3.5, 7.5, 15.5]
    events = [
        attempt(at, 503 if n < 5 else 200, client=OPENAI, retry_count=n)
        for n, at in enumerate(waits)
    ]
    result = judge(*events)
    assert result.passed, result.render()
    assert (result.requests, result.attempts) == (1, 6)


def test_an_sdk_chain_is_still_judged_by_an_explicit_cap():
    waits = [0.0, 0.5, 1.5, 3.5, 7.5, 15.5]
    events = [attempt(at, 503, client=OPENAI, retry_count=n) for n, at in enumerate(waits)]
    assert judge(*events, max_attempts=3).codes == ["retry_storm"]


def test_the_runtime_is_held_to_the_cap_its_transport_retry_declared():
    declared = Event(type="transport.retry", run_id="r", attempt=1, max_attempts=2, delay=0.25)
    events = [attempt(i * 0.5, 503, client=RUNTIME, run_id="r") for i in range(3)]
    result = judge(declared, *events)
    assert result.codes == ["retry_storm"]
    assert "more than 2" in result.of("retry_storm")[0].message


def test_a_plain_client_keeps_the_default_cap():
    events = [attempt(i, 503, client="httpx") for i in range(6)] + [attempt(6, 200)]
    assert judge(*events).codes == ["retry_storm"]


def test_a_model_call_retried_by_the_run_is_a_new_request_for_the_runtime():
    # transport retry x3, then on_llm_error retries the model call: two requests of 3
    events: list[Event] = []
    for turn in range(2):
        events.append(Event(type="llm.request", run_id="r", attempt=turn + 1))
        events += [attempt(turn * 10 + i, 503, client=RUNTIME, run_id="r") for i in range(3)]
    events.append(Event(type="run.end", run_id="r", status="error"))
    result = judge(*events)
    assert result.passed, result.render()
    assert result.requests == 2


# ------------------------------------------------------------------- our runtime's own rules


@pytest.mark.parametrize(
    "outcome",
    [
        {"status": 409},
        {"status": 501},
        {"status": 520},
        {"status": None, "error": failure("ReadTimeout")},
        {"status": None, "error": failure("ModelTimeoutError")},
        {"status": 429, "retry_after": 90.0},
    ],
    ids=["409", "501", "520", "timeout", "model-timeout", "retry-after-above-cap"],
)
def test_the_runtime_giving_up_by_its_declared_rules_is_not_gave_up_early(outcome):
    outcome = dict(outcome)  # the parameter is shared by every run of this test in a process
    status = outcome.pop("status")
    end = Event(type="run.end", run_id="r", status="error")
    result = judge(attempt(0, status, client=RUNTIME, run_id="r", **outcome), end)
    assert result.passed, result.render()


def test_the_openai_sdk_gives_up_above_its_two_minute_cap_and_anthropic_does_not():
    assert judge(attempt(0, 429, retry_after=130.0, client=OPENAI, retry_count=0)).passed
    result = judge(attempt(0, 429, retry_after=130.0, client=ANTHROPIC, retry_count=0))
    assert result.codes == ["gave_up_early"]


# ------------------------------------------------------------------- streams


def cut(at: float = 0.0, **fields: object) -> Event:
    return attempt(
        at, 200, fault="truncated_stream", error=failure("RemoteProtocolError"), **fields
    )


def test_a_cut_stream_the_app_requested_again_is_resilient():
    result = judge(
        cut(client=OPENAI, retry_count=0), attempt(0.6, 200, client=OPENAI, retry_count=0)
    )
    assert result.passed, result.render()


def test_a_cut_stream_never_requested_again_is_a_finding_for_sdk_apps():
    result = judge(cut(client=OPENAI, retry_count=0))
    assert result.codes == ["gave_up_early"]
    (found,) = result.findings
    assert "cut mid-way" in found.message
    assert "openai" in found.advice
    assert "stream" in found.advice
    assert "above 0" not in found.advice


# ------------------------------------------------------------------- advice per client


@pytest.mark.parametrize(
    ("client", "names"),
    [
        (OPENAI, ["official openai SDK", "max_retries", "openai.OpenAI"]),
        ("anthropic.AsyncAnthropic", ["official anthropic SDK", "max_retries", "AsyncAnthropic"]),
        (RUNTIME, ["TransportRetry", "transport_retry="]),
        ("httpx", ["httpx", "does not retry"]),
    ],
)
def test_gave_up_early_advice_names_the_client_and_its_setting(client, names):
    result = judge(attempt(0, 503, client=client, retry_count=0 if "." in client else None))
    (found,) = result.of("gave_up_early")
    for name in names:
        assert name in found.advice, found.advice
    assert "above 0" not in found.advice


def test_storm_advice_for_the_runtime_names_its_setting():
    declared = Event(type="transport.retry", run_id="r", attempt=1, max_attempts=2, delay=0.25)
    events = [attempt(i * 0.5, 503, client=RUNTIME, run_id="r") for i in range(3)]
    (found,) = judge(declared, *events).of("retry_storm")
    assert "TransportRetry(max_attempts=" in found.advice


def test_the_finding_says_which_client_made_the_requests():
    (found,) = judge(attempt(0, 503, client=OPENAI, retry_count=0)).findings
    assert "official openai SDK (openai.OpenAI)" in found.message


def test_every_client_kind_has_its_rules():
    assert {rules.kind for rules in RULES.values()} >= {
        "openai",
        "anthropic",
        "agentfaults",
        "httpx",
        "other",
    }
    assert client_rules("openai.AsyncOpenAI").kind == "openai"
    assert client_rules("anthropic.AsyncAnthropic").kind == "anthropic"
    assert client_rules(None).kind == "other"


def test_a_cut_stream_that_was_itself_a_retry_may_be_given_up_on():
    # the app requested the cut stream again, got it cut again, and stopped: its policy
    first, again = cut(0.0, run_id="r"), cut(0.5, run_id="r")
    turn = Event(type="llm.request", run_id="r", attempt=2)
    ended = Event(type="run.end", run_id="r", status="error")
    result = judge(first, turn, again, ended)
    assert result.passed, result.render()


def test_our_runtime_leaves_a_cut_stream_to_the_run_and_an_sdk_app_does_not():
    ended = Event(type="run.end", run_id="r", status="error")
    assert judge(cut(client=RUNTIME, run_id="r"), ended).passed
    assert judge(cut(client=OPENAI, run_id="r", retry_count=0), ended).codes == ["gave_up_early"]
    accepted = Event(type="run.end", run_id="r", status="ok")
    assert judge(cut(client=RUNTIME, run_id="r"), accepted).codes == ["truncated_stream_accepted"]


def test_a_malformed_body_in_a_run_that_ended_in_error_was_not_accepted():
    html = attempt(0, 200, fault="malformed_body", client=RUNTIME, run_id="r")
    assert judge(html, Event(type="run.end", run_id="r", status="error")).passed
    accepted = judge(html, Event(type="run.end", run_id="r", status="ok"))
    assert accepted.codes == ["malformed_body_accepted"]


def test_a_transport_retry_without_backoff_gets_advice_for_our_runtime():
    event = Event(type="transport.retry", run_id="r", attempt=1, max_attempts=3, delay=0.0)
    (found,) = judge(event).findings
    assert found.code == "no_backoff"
    assert "TransportRetry(initial_backoff=" in found.advice
