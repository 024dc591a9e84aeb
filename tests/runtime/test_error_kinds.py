"""What `classify` tells a fixer or an on-error handler about failures it must not retry:
a stopped run, a budget cap, a test's own mistake, and the advice that goes with each."""

from __future__ import annotations

import asyncio

import pytest

import pytest_agentfaults as af


@pytest.mark.parametrize("exc", [asyncio.CancelledError(), KeyboardInterrupt()])
def test_a_stopped_run_is_aborted_never_retried_and_says_to_stop(exc):
    info = af.classify(exc, tool="fetch")
    assert (info.kind, info.retryable) == ("aborted", False)
    assert info.recommendations == ["The run was stopped; nothing more should be attempted."]


def test_a_spent_budget_aborts_the_run_and_is_never_retried():
    info = af.classify(af.BudgetExceededError("25 turns", limit="max_turns", value=25))
    assert (info.kind, info.retryable) == ("aborted", False)


@pytest.mark.parametrize(
    "exc", [af.UsageError("a test's mistake"), AssertionError("an unmatched mock")]
)
def test_a_developers_mistake_fails_hard_and_is_never_retried(exc):
    info = af.classify(exc, tool="fetch")
    assert (info.kind, info.retryable) == ("exception", False)
    assert info.recommendations == ["'fetch' failed hard; do not call it again in this run."]


def test_a_hard_tool_failure_says_not_to_call_the_tool_again():
    info = af.classify(af.ToolExecutionError("disk on fire"), tool="write")
    assert info.recommendations == ["'write' failed hard; do not call it again in this run."]


def test_an_escalation_says_to_change_the_approach():
    info = af.classify(af.EscalationError("needs a human"), tool="pay")
    assert info.recommendations == [
        "'pay' escalated: read the reason, then change the approach or answer."
    ]


@pytest.mark.parametrize("retryable", [True, False])
def test_an_error_that_says_whether_it_is_retryable_is_a_runtime_error(retryable):
    class Declared(Exception):
        pass

    exc = Declared("service said so")
    exc.retryable = retryable  # type: ignore[attr-defined]
    info = af.classify(exc)
    assert (info.kind, info.retryable) == ("runtime", retryable)
