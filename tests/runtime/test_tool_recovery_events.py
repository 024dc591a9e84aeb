"""The events a tool's recovery records, as the trace, the verdict and reports read them.

Each names the framework that ran the tool (this runtime: ``agentfaults``), so a report
can tell this runtime's retries and substitutes from another framework's. ``tool.exhausted``
says every attempt a retry policy allowed failed: a policy of one attempt allowed no
retry, so it has none.
"""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _run(on_error: af.OnError, failures: int = 10) -> af.RunResult:
    calls: list[str] = []

    @af.tool(on_error=on_error)
    def fetch(url: str) -> str:
        """Fetch a page."""
        calls.append(url)
        if len(calls) <= failures:
            raise ConnectionError("reset")
        return "page"

    model = ScriptedModel([call_tool("fetch", url="https://a.test"), say("ok")])
    return af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock()).run("go")


def test_a_retry_event_names_this_runtime_as_the_framework():
    result = _run(af.OnError(execution=af.retry(max_attempts=2, strategy="fixed")), failures=1)
    [retry] = result.trace.of("tool.retry", tool="fetch")
    assert retry.framework == "agentfaults"
    assert (retry.attempt, retry.max_attempts) == (2, 2)


def test_a_substituted_result_names_this_runtime_as_the_framework():
    result = _run(af.OnError(execution=af.respond_with({"cached": True})))
    [substitute] = result.trace.of("tool.result", tool="fetch")
    assert substitute.framework == "agentfaults"
    assert substitute.attempt == 1
    assert substitute.detail == 'respond_with: {"cached":true}'
    assert next(m.content for m in result.messages if m.role == "tool") == '{"cached":true}'


def test_a_substitute_for_arguments_that_never_ran_has_no_attempt_number():
    @af.tool(on_error=af.OnError(invalid_args=af.respond_with("n/a")))
    def fetch(url: str) -> str:
        """Fetch a page."""
        return "page"

    model = ScriptedModel([call_tool("fetch", raw_args="{not json"), say("ok")])
    result = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock()).run("go")
    [substitute] = result.trace.of("tool.result", tool="fetch")
    assert substitute.attempt is None
    assert substitute.framework == "agentfaults"


@pytest.mark.parametrize(("max_attempts", "exhausted"), [(1, 0), (2, 1), (3, 1)])
def test_retries_are_exhausted_only_where_a_retry_was_allowed(max_attempts, exhausted):
    result = _run(af.OnError(execution=af.retry(max_attempts=max_attempts, strategy="fixed")))
    assert result.trace.count("tool.error", tool="fetch") == max_attempts
    events = result.trace.of("tool.exhausted", tool="fetch")
    assert len(events) == exhausted
    for event in events:
        assert (event.attempt, event.max_attempts) == (max_attempts, max_attempts)
        assert event.framework == "agentfaults"


def _failing_with(*errors: BaseException) -> af.RunResult:
    left = list(errors)

    @af.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        if left:
            raise left.pop(0)
        return "page"

    model = ScriptedModel([call_tool("fetch", url="https://a.test"), say("ok")])
    agent = af.Agent(
        "bot",
        model=model,
        tools=[fetch],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=5),
    )
    return agent.run("go")


def test_each_failure_of_a_retried_call_is_recorded_as_it_was():
    revoked = ConnectionError("reset")
    revoked.retryable = False  # type: ignore[attr-defined]
    result = _failing_with(
        ConnectionError("reset"),
        ConnectionError("reset"),
        ConnectionResetError("reset"),
        TimeoutError("reset"),
        ConnectionError("connection refused"),
        revoked,
    )
    errors = [e.error for e in result.trace.of("tool.error", tool="fetch")]
    assert [(e.type, e.message, e.retryable) for e in errors] == [
        ("ConnectionError", "reset", True),
        ("ConnectionError", "reset", True),
        ("ConnectionResetError", "reset", True),
        ("TimeoutError", "reset", True),
        ("ConnectionError", "connection refused", True),
        ("ConnectionError", "reset", False),
    ]
    assert result.trace.retries("fetch") == 5


def test_a_retried_failure_that_then_speaks_of_credentials_is_not_retried_again():
    result = _failing_with(ConnectionError("reset"), ConnectionError("bad API key"))
    errors = [e.error for e in result.trace.of("tool.error", tool="fetch")]
    assert [e.retryable for e in errors] == [True, False]
    assert result.trace.retries("fetch") == 1


def test_each_failure_is_recorded_with_its_own_message_and_class_across_agents():
    # The record of a plain transient failure is reused while one like it recurs; another
    # message, class or ``retryable`` (in another agent's run too) gets its own record.
    def flaky(error: Exception):
        raised = []

        @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=2, strategy="fixed")))
        def fetch(url: str) -> str:
            """Fetch a page."""
            if not raised:
                raised.append(error)
                raise error
            return "page"

        model = ScriptedModel([call_tool("fetch", url="https://a.test"), say("ok")])
        agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
        [failed] = agent.run("go").trace.of("tool.error")
        return failed.error

    late = TimeoutError("slow")
    late.retryable = False  # type: ignore[attr-defined]
    records = [
        flaky(ConnectionError("reset")),
        flaky(ConnectionError("reset")),
        flaky(ConnectionError("refused")),
        flaky(TimeoutError("slow")),
        flaky(late),
    ]
    assert [(r.type, r.message, r.retryable) for r in records] == [
        ("ConnectionError", "reset", True),
        ("ConnectionError", "reset", True),
        ("ConnectionError", "refused", True),
        ("TimeoutError", "slow", True),
        ("TimeoutError", "slow", False),
    ]
