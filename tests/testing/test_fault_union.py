"""`Fault` is a union of three small types whose fields each mean one thing."""

from __future__ import annotations

import dataclasses

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing.faults import (
    LLM_KINDS,
    TRANSIENT_LLM_KINDS,
    FaultPlan,
    HTTPFault,
    LLMFault,
    ToolFault,
    parse_marker,
)


def test_a_tool_marker_is_a_tool_fault_whose_action_has_its_own_field() -> None:
    error = ConnectionError("reset")
    fault = parse_marker((), {"tool": "fetch", "raises": error, "times": 2})
    assert isinstance(fault, ToolFault)
    assert (fault.tool, fault.raises, fault.delay, fault.action) == ("fetch", error, None, "raises")
    returned = parse_marker((), {"tool": "fetch", "returns": None})
    assert isinstance(returned, ToolFault)
    assert returned.action == "returns"  # None is a value a tool may return
    assert returned.returns is None
    delayed = parse_marker((), {"tool": "fetch", "delay": 90})
    assert isinstance(delayed, ToolFault)
    assert (delayed.action, delayed.delay, delayed.raises) == ("delay", 90.0, None)


def test_an_http_marker_says_its_status_or_its_kind_never_both() -> None:
    status = parse_marker((), {"http": 429, "retry_after": 2, "url": "/v1", "method": "post"})
    assert isinstance(status, HTTPFault)
    assert (status.status, status.kind, status.retry_after) == (429, None, 2.0)
    assert (status.url, status.method, status.label) == ("/v1", "POST", "429")
    kind = parse_marker((), {"http": "timeout"})
    assert isinstance(kind, HTTPFault)
    assert (kind.status, kind.kind, kind.label) == (None, "timeout", "timeout")


def test_a_second_fluent_action_is_refused_not_silently_taken() -> None:
    # A fault does one thing, as the marker's "exactly one of raises=, returns=, delay="
    # says: a second action would replace the first without a word.
    plan = FaultPlan()
    tool = plan.tool("fetch").raises(ValueError)
    with pytest.raises(UsageError, match=r"\.returns\(\) after \.raises\(\)"):
        tool.returns("cached")
    http = plan.http().status(503)
    with pytest.raises(UsageError, match=r"\.timeout\(\) after \.status\(503\)"):
        http.timeout()
    with pytest.raises(UsageError, match=r"\.status\(\) after \.timeout\(\)"):
        plan.http().timeout().status(503)
    first, second, third = plan.faults
    assert isinstance(first, ToolFault)
    assert (first.action, first.raises) == ("raises", ValueError)
    assert isinstance(second, HTTPFault)
    assert (second.status, second.kind) == (503, None)
    assert isinstance(third, HTTPFault)
    assert (third.status, third.kind) == (None, "timeout")


def test_an_llm_marker_keeps_its_kind_and_its_step_options() -> None:
    fault = parse_marker((), {"llm": "rate_limit", "retry_after": 2})
    assert isinstance(fault, LLMFault)
    assert (fault.kind, fault.options, fault.transient) == (
        "rate_limit",
        {"retry_after": 2.0},
        True,
    )
    assert fault.step() == af.testing.fail.rate_limit(retry_after=2)


def test_the_transient_kinds_are_llm_kinds() -> None:
    assert {"rate_limit", "server_error", "timeout", "connection"} == TRANSIENT_LLM_KINDS
    assert set(LLM_KINDS) >= TRANSIENT_LLM_KINDS


def test_fresh_is_an_unused_copy_of_the_same_fault() -> None:
    fault = parse_marker((), {"tool": "fetch", "raises": ConnectionError, "times": 3, "at": 2})
    fault.seen, fault.hits = 4, 3
    twin = fault.fresh()
    assert type(twin) is ToolFault
    assert twin is not fault
    assert (twin.seen, twin.hits, twin.done) == (0, 0, False)
    assert (twin.tool, twin.raises, twin.times, twin.at) == ("fetch", ConnectionError, 3, 2)
    assert (fault.seen, fault.hits) == (4, 3)  # the original is left alone


def test_llm_malformed_takes_only_the_malformed_kinds() -> None:
    with pytest.raises(UsageError, match=r"unknown kind; use one of tool_args, empty, blocked"):
        FaultPlan().llm.malformed("rate_limit")


def test_a_tool_marker_takes_the_tool_itself_and_refuses_an_exception_to_return() -> None:
    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    fault = parse_marker((), {"tool": fetch, "raises": ConnectionError("reset")})
    assert isinstance(fault, ToolFault)
    assert fault.tool == "fetch"
    with pytest.raises(UsageError) as caught:
        parse_marker((), {"tool": "fetch", "returns": ConnectionError("x")}, label="inject_fault")
    message = str(caught.value)
    assert message.startswith("@pytest.mark.inject_fault(tool='fetch', returns=")
    assert "use raises=ConnectionError('x')" in message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tool": "fetch", "returns": {"ok": False}, "idempotent": False, "strict": False},
        {"llm": "rate_limit", "retry_after": 2, "times": 2, "probability": 0.5},
        {"http": 503, "url": "/v1/chat", "method": "post", "retry_after": 3, "at": 3},
    ],
)
def test_fresh_copies_every_setting_of_each_kind_of_fault(kwargs) -> None:
    fault = parse_marker((), kwargs)
    fault.seen, fault.hits = 7, 7
    twin = fault.fresh()
    assert type(twin) is type(fault)
    for field in dataclasses.fields(fault):
        expected = 0 if field.name in ("seen", "hits") else getattr(fault, field.name)
        assert getattr(twin, field.name) == expected, field.name
