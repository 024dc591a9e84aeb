"""The retry rules on a framework's ``tool.retry`` events, as pure functions of the events.

A framework's retry says who made it: ``by="code"`` (the code around the tool ran the
call again; its ``delay`` is the wait since the failure) or ``by="model"`` (a later model
turn called the tool again after reading the failure: no wait owed, no blind retry).
"""

from __future__ import annotations

from pytest_agentfaults.runtime.events import ErrorRecord, Event, Trace

NOT_RETRYABLE = ErrorRecord(type="ValueError", message="bad", kind="runtime", retryable=False)
RETRYABLE = ErrorRecord(type="ConnectionError", message="reset", kind="runtime", retryable=True)


def retry(**fields: object) -> Event:
    base: dict[str, object] = {"tool": "search", "attempt": 2, "framework": "langchain"}
    return Event(type="tool.retry", **{**base, **fields})


def test_a_non_retryable_error_retried_is_found_without_a_delay() -> None:
    assert Trace([retry(error=NOT_RETRYABLE, by="code")]).verdict().codes == [
        "retried_non_retryable"
    ]
    assert Trace([retry(error=NOT_RETRYABLE)]).verdict().codes == ["retried_non_retryable"]


def test_a_retry_by_the_code_is_judged_by_its_delay() -> None:
    assert Trace([retry(error=RETRYABLE, by="code", delay=0.0)]).verdict().codes == ["no_backoff"]
    assert Trace([retry(error=RETRYABLE, by="code", delay=1.0)]).verdict().passed


def test_a_retry_by_the_model_owes_no_wait_and_feeds_any_error_back() -> None:
    assert Trace([retry(error=NOT_RETRYABLE, by="model")]).verdict().passed
    assert Trace([retry(error=RETRYABLE, by="model", delay=0.0)]).verdict().passed
    storm = Trace([retry(error=RETRYABLE, by="model", attempt=6)]).verdict()
    assert storm.codes == ["retry_storm"]


def test_our_runtimes_output_correction_is_judged_as_before() -> None:
    correction = Event(
        type="llm.retry",
        attempt=2,
        detail="output correction",
        error=ErrorRecord(
            type="MalformedResponseError", message="not JSON", kind="runtime", retryable=True
        ),
    )
    assert Trace([correction]).verdict().passed
