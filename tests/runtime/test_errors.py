"""The exception tree and classify()."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import errors


def test_tree_matches_the_contract():
    assert issubclass(af.UsageError, af.AgentFaultsError)
    assert issubclass(af.UsageError, ValueError)
    for cls in (
        af.InvalidArgsError,
        af.UnknownToolError,
        af.ToolExecutionError,
        af.ToolTimeoutError,
        af.EscalationError,
    ):
        assert issubclass(cls, af.ToolError)
    assert issubclass(af.ToolTimeoutError, TimeoutError)
    assert issubclass(af.ModelTransportError, ConnectionError)
    assert issubclass(af.ModelTimeoutError, TimeoutError)
    for cls in (af.RateLimitError, af.ModelServerError, af.ModelAuthError):
        assert issubclass(cls, af.ModelHTTPError)
    for cls in (
        af.ModelTransportError,
        af.ModelHTTPError,
        af.ModelTimeoutError,
        af.MalformedResponseError,
        af.ModelStreamError,
    ):
        assert issubclass(cls, af.ModelError)
    assert issubclass(af.BudgetExceededError, af.AgentFaultsError)


def test_module_docstring_draws_every_exception():
    documented = errors.__doc__ or ""
    for name, obj in inspect.getmembers(errors, inspect.isclass):
        if issubclass(obj, af.AgentFaultsError):
            assert name in documented, name


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionError("reset"),
        TimeoutError(),
        OSError("broken pipe"),
        af.ModelTransportError("refused"),
        af.ModelServerError("boom", status=503),
        af.ModelServerError("overloaded", status=529),
        af.ModelHTTPError("timeout", status=408),
        af.RateLimitError("slow down", retry_after=2),
        af.ToolTimeoutError("slow", timeout=1),
        RuntimeError("Service temporarily unavailable"),
        ValueError("upstream said 503"),
        Exception("429 Too Many Requests"),
        RuntimeError("hit the rate limit"),
    ],
)
def test_transient_errors_are_retryable(exc):
    info = af.classify(exc)
    assert info.retryable is True
    assert info.kind == "runtime"


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("bad"),
        TypeError("bad"),
        KeyError("k"),
        PermissionError("no"),
        af.ModelAuthError("no key", status=401),
        af.ModelAuthError("forbidden", status=403),
        RuntimeError("Invalid API key provided"),
        ConnectionError("401 Unauthorized"),
    ],
)
def test_never_retried_by_default(exc):
    assert af.classify(exc).retryable is False


@pytest.mark.parametrize("kind", [ConnectionError, TimeoutError, OSError, RuntimeError])
@pytest.mark.parametrize(
    "message",
    [
        "bad API key",
        "apikey missing",
        "API-KEY",
        "Unauthorised",
        "request UNAUTHORIZED",
        "Forbidden",
        "status 401",
        "HTTP 403 from proxy",
        "invalid client credentials",
        "INVALID CREDENTIAL",
        "api \u212aey rejected",  # a Kelvin sign: not ASCII, still a key under IGNORECASE
        "forbidden \u2014 go away",  # not ASCII
    ],
)
def test_a_failure_that_speaks_of_credentials_is_not_retried(kind, message):
    assert af.classify(kind(message)).retryable is False


@pytest.mark.parametrize(
    "message", ["reset", "", "Connection reset by peer", "status 503", "took 40s", "keyboard"]
)
def test_a_transient_failure_that_does_not_speak_of_credentials_is_retried(message):
    assert af.classify(ConnectionError(message)).retryable is True


def test_unexpected_runtime_errors_are_retryable():
    assert af.classify(RuntimeError("boom")).retryable is True


def test_an_explicit_retryable_attribute_wins():
    class Flaky(Exception):
        retryable = False

    assert af.classify(Flaky("503")).retryable is False


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (af.InvalidArgsError("bad", tool="t"), "validation"),
        (af.UnknownToolError("nope", tool="t", available=["a"]), "validation"),
        (RuntimeError("x"), "runtime"),
        (af.ToolTimeoutError("slow", timeout=1), "runtime"),
        (af.ToolFailure(error="File not found"), "logical"),
        (af.EscalationError("give up"), "escalation"),
        (af.ToolExecutionError("hard"), "exception"),
        (asyncio.CancelledError(), "aborted"),
    ],
)
def test_kinds(exc, kind):
    assert af.classify(exc).kind == kind


def test_logical_and_escalation_and_hard_failures_are_never_retried():
    assert not af.classify(af.ToolFailure(error="x")).retryable
    assert not af.classify(af.EscalationError("x")).retryable
    assert not af.classify(af.ToolExecutionError("x")).retryable
    assert not af.classify(af.InvalidArgsError("x")).retryable


def test_recommendations_name_the_tool_and_fit_the_kind():
    transient = af.classify(ConnectionError("reset"), tool="fetch")
    assert any("'fetch'" in r and "transient" in r for r in transient.recommendations)
    invalid = af.classify(af.InvalidArgsError("bad", tool="parse"))
    assert any("schema" in r and "'parse'" in r for r in invalid.recommendations)
    unknown = af.classify(af.UnknownToolError("x", tool="serch", available=["search", "fetch"]))
    assert unknown.recommendations == [
        "There is no tool named 'serch'. Call one of: search, fetch."
    ]
    auth = af.classify(af.ModelAuthError("no", status=401))
    assert any("API key" in r for r in auth.recommendations)
    limited = af.classify(af.RateLimitError("429", retry_after=3))
    assert any("after 3s" in r for r in limited.recommendations)
    given = af.classify(af.ToolFailure(error="x", recommendations=["list the dir first"]))
    assert given.recommendations == ["list the dir first"]


def test_escalation_error_carries_reason_and_severity():
    exc = af.EscalationError("cannot parse", "high")
    assert exc.reason == "cannot parse"
    assert exc.severity is af.Severity.HIGH
    assert af.EscalationError("x").severity is af.Severity.MEDIUM
    with pytest.raises(af.UsageError, match="LOW, MEDIUM, HIGH, CRITICAL"):
        af.EscalationError("x", "apocalyptic")


def test_http_error_bodies_are_truncated():
    exc = af.ModelServerError("boom", status=500, body="x" * 5000)
    assert len(exc.body) < 2100
    assert exc.body.endswith("[3000 more characters]")


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (520, True), (599, True), (600, False), (499, False), (408, True)],
)
def test_every_5xx_status_is_retryable_and_nothing_above(status, retryable):
    assert errors.is_retryable_status(status) is retryable
    exc = af.ModelHTTPError("x", status=status)
    assert af.classify(exc).retryable is retryable


def test_a_tool_failure_it_reported_itself_is_not_ambiguous():
    assert errors.is_ambiguous(af.ToolFailure(error="File not found")) is False
