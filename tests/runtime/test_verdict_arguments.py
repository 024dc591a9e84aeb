"""The verdict's options are checked, and a trace with nothing to judge fails
`assert_resilient` instead of passing vacuously (tester's report A and B)."""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.events import Event, Trace
from pytest_agentfaults.runtime.verdict import NotResilientError, verdict


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


def _run(*faults: str) -> Trace:
    plan = af.FaultPlan(seed=1)
    for _ in faults:
        plan.tool("fetch").raises(ConnectionError("reset"))
    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch", url="u"), say("done")]),
        tools=[fetch],
        clock=af.VirtualClock(),
    )
    with plan.active():
        return agent.run("go").trace


def test_ignore_takes_one_code_as_a_str():
    trace = Trace([Event(type="tool.retry", tool="t", attempt=2, delay=0.0)])
    assert verdict(trace).codes == ["no_backoff"]
    judged = verdict(trace, ignore="no_backoff")
    assert judged.passed
    assert judged.ignored == ("no_backoff",)
    trace.assert_resilient(ignore="no_backoff")


def test_an_unknown_code_names_the_closest():
    with pytest.raises(
        UsageError, match=r"'gave_up_erly' \(did you mean 'gave_up_early'\?\); the codes are"
    ):
        verdict(Trace(), ignore=("gave_up_erly",))
    with pytest.raises(UsageError, match=r"ignore=5\): give a code or a tuple of codes"):
        verdict(Trace(), ignore=5)  # type: ignore[arg-type]


def test_a_misspelt_option_is_a_usage_error_listing_the_options():
    trace = _run("fault")
    with pytest.raises(UsageError, match=r"max_attempt=\.\.\.\): no such option; did you mean"):
        trace.assert_resilient(max_attempt=3)
    with pytest.raises(UsageError, match="the options are ignore, max_attempts, min_backoff"):
        trace.verdict(strom_rate=3)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_attempts", -1),
        ("max_attempts", 0),
        ("max_attempts", True),
        ("max_attempts", 2.5),
        ("storm_rate", 0),
        ("min_backoff", -0.1),
        ("min_backoff", float("nan")),
        ("min_backoff", "0.1"),
        ("storm_window", 0),
        ("storm_window", float("inf")),
    ],
)
def test_a_threshold_that_cannot_be_one_is_refused(option, value):
    with pytest.raises(UsageError, match=rf"verdict\({option}={value!r}\): give"):
        verdict(Trace(), **{option: value})


def test_an_empty_trace_fails_assert_resilient_saying_why():
    with pytest.raises(NotResilientError) as caught:
        Trace().assert_resilient()
    message = str(caught.value)
    assert message.startswith("resilience verdict: nothing to judge (0 HTTP requests")
    assert "the trace is empty: is it the trace of the code under test?" in message
    assert "fix: inject a fault" in message
    assert isinstance(caught.value, AssertionError)


def test_a_run_in_which_nothing_failed_fails_assert_resilient():
    trace = _run()
    judged = trace.verdict()
    assert judged.passed  # nothing held against it...
    assert not judged.judged  # ...because there was nothing to judge
    with pytest.raises(AssertionError, match="nothing failed: no fault fired"):
        trace.assert_resilient()


def test_a_failure_that_was_ridden_out_is_judged_and_passes():
    trace = _run("fault")
    judged = trace.verdict()
    assert judged.judged
    assert judged.passed, judged.render()
    trace.assert_resilient()


def test_a_failure_that_was_not_retried_is_still_something_judged():
    error = af.ErrorRecord(type="ValueError", message="x", kind="bad_input", retryable=False)
    trace = Trace([Event(type="tool.error", tool="t", error=error)])
    trace.assert_resilient()


def test_a_failed_http_attempt_is_judged():
    trace = Trace([Event(type="http.request", status=404, method="GET", url="https://x.test/")])
    assert verdict(trace).judged
