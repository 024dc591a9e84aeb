"""How the verdict names the client that sent a request, and the advice fitted to it."""

from __future__ import annotations

import pytest

from pytest_agentfaults.runtime._verdict_codes import ADVICE
from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace
from pytest_agentfaults.runtime.verdict import Verdict

URL = "https://api.example.com/v1/chat/completions"


def attempt(at: float, status: int | None = 200, **fields: object) -> Event:
    fields.setdefault("run_id", "")
    fields.setdefault("body_sha", "abc")
    return Event(type="http.request", at=at, status=status, method="POST", url=URL, **fields)


def failure(kind: str = "ReadTimeout") -> ErrorRecord:
    return ErrorRecord(type=kind, message="injected", kind="runtime", retryable=True)


def judge(*events: Event) -> Verdict:
    trace = Trace()
    for event in events:
        trace.add(event)
    return trace.verdict()


def gave_up(client: object) -> tuple[str, str]:
    found = judge(attempt(0, 503, client=client, retry_count=0)).of("gave_up_early")[0]
    return found.message, found.advice


@pytest.mark.parametrize(
    ("client", "named", "cls"),
    [
        ("openai.OpenAI", "the official openai SDK (openai.OpenAI)", "openai.OpenAI"),
        (
            "openai.AsyncOpenAI",
            "the official openai SDK (openai.AsyncOpenAI)",
            "openai.AsyncOpenAI",
        ),
        (
            "anthropic.AsyncAnthropic",
            "the official anthropic SDK (anthropic.AsyncAnthropic)",
            "anthropic.AsyncAnthropic",
        ),
        # a bare package name: the SDK's usual class
        ("openai", "the official openai SDK", "openai.OpenAI"),
        ("anthropic", "the official anthropic SDK", "anthropic.Anthropic"),
    ],
)
def test_an_sdk_finding_names_the_sdk_and_advises_on_its_class(client, named, cls):
    message, advice = gave_up(client)
    assert message == f"POST {URL} by {named}: failed once (HTTP 503) and was never retried"
    assert f"build the client with {cls}(max_retries=2)" in advice


def test_plain_httpx_and_httpx2_get_the_httpx_advice():
    for client in ("httpx", "httpx2"):
        message, advice = gave_up(client)
        assert " by plain httpx: failed once" in message
        assert advice != ADVICE["gave_up_early"]
        assert f"plain {client}" in advice


def test_another_client_is_named_as_it_calls_itself():
    message, advice = gave_up("requests")
    assert " by the client 'requests': failed once" in message
    assert advice == ADVICE["gave_up_early"]


def test_a_request_without_a_client_names_none():
    message, _ = gave_up(None)
    assert message == f"POST {URL}: failed once (HTTP 503) and was never retried"


@pytest.mark.parametrize("status", [500, 501, 599])
def test_an_sdk_retries_every_5xx_so_one_attempt_gave_up(status):
    assert judge(attempt(0, status, client="openai.OpenAI", retry_count=0)).codes == [
        "gave_up_early"
    ]


def test_our_client_retries_only_its_listed_5xx():
    # this runtime's transport retry: 500/502/503/504/529, not 501
    end = Event(type="run.end", run_id="r", status="error")
    assert judge(attempt(0, 500, client="agentfaults", run_id="r"), end).codes == ["gave_up_early"]
    assert judge(attempt(0, 501, client="agentfaults", run_id="r"), end).passed


def test_a_failure_is_shown_by_its_status_from_400_up_else_by_its_error():
    found = judge(
        attempt(
            0,
            400,
            error=failure("HTTPStatusError"),
            client="openai.OpenAI",
            retry_count=0,
            should_retry=True,
        )
    )
    assert "(HTTP 400)" in found.findings[0].message
    cut = judge(
        attempt(
            0, None, error=failure("RemoteProtocolError"), client="openai.OpenAI", retry_count=0
        )
    )
    assert "failed once (RemoteProtocolError) and" in cut.findings[0].message
    faulted = judge(
        attempt(
            0,
            None,
            error=failure("ReadTimeout"),
            fault="timeout",
            client="openai.OpenAI",
            retry_count=0,
        )
    )
    assert "failed once (ReadTimeout (timeout)) and" in faulted.findings[0].message


def test_a_cut_stream_of_an_unknown_client_gets_the_general_stream_advice():
    cut = attempt(
        0,
        200,
        fault="truncated_stream",
        error=failure("RemoteProtocolError"),
        client="requests",
        run_id="r",
    )
    result = judge(cut, Event(type="run.end", run_id="r", status="ok"))
    assert result.findings[0].advice == ADVICE["truncated_stream_accepted"]


def test_a_retry_after_at_the_client_s_cap_is_still_waited_out():
    # plain clients wait up to 60 s: a request asked to wait exactly that should be retried
    at_cap = judge(attempt(0, 429, retry_after=60.0, client="httpx"))
    assert at_cap.codes == ["gave_up_early"]
    assert judge(attempt(0, 429, retry_after=60.5, client="httpx")).passed


def test_a_failure_is_worth_retrying_if_retryable_or_of_a_transient_type():
    retryable = ErrorRecord(type="FlakyError", message="m", kind="runtime", retryable=True)
    assert judge(attempt(0, None, error=retryable, client="httpx")).codes == ["gave_up_early"]
    transient = ErrorRecord(type="ConnectError", message="m", kind="runtime", retryable=False)
    assert judge(attempt(0, None, error=transient, client="httpx")).codes == ["gave_up_early"]
    neither = ErrorRecord(type="ValueError", message="m", kind="runtime", retryable=False)
    assert judge(attempt(0, None, error=neither, client="httpx")).passed
