"""What one test's trace contributes to the fault coverage matrix (issue 18)."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime.events import ErrorRecord, Event
from pytest_agentfaults.testing._coverage import Matrix, parse_exclusions, suggest
from pytest_agentfaults.testing._coverage_observe import observe


@af.tool
def search(query: str) -> str:
    """Search."""
    return "found"


def _hits(trace: af.Trace) -> set[tuple[str, str, str, str]]:
    return {tuple(hit) for hit in observe(trace.events)["hits"]}


def _run(scope: af.FaultScope, *steps: object, **agent_options: object) -> None:
    model = ScriptedModel(list(steps))
    af.Agent("bot", model=model, tools=[search], **agent_options).run("go")


def test_a_tool_timeout_is_the_timeout_class():
    with af.fault_scope() as scope:
        scope.faults.tool("search").delay(120).times(1)
        _run(scope, call_tool("search", query="q"), say("ok"))
    assert ("tool", "search", "agentfaults", "timeout", "injected") in _hits(scope.trace)


def test_malformed_arguments_cover_the_tool_and_the_model():
    with af.fault_scope() as scope:
        scope.faults.llm.malformed("tool_args")
        _run(scope, call_tool("search", query="q"), call_tool("search", query="q"), say("ok"))
    hits = _hits(scope.trace)
    assert ("tool", "search", "agentfaults", "invalid_args", "injected") in hits
    assert ("model", "scripted", "agentfaults", "malformed_tool_args", "injected") in hits


def test_a_model_calling_an_unknown_tool_covers_the_tools_of_that_run():
    with af.fault_scope() as scope:
        _run(scope, call_tool("search", query="q"), call_tool("nope"), say("ok"))
    assert ("tool", "search", "agentfaults", "unknown_tool", "user") in _hits(scope.trace)


def test_an_unknown_tool_covers_the_tools_the_agent_offered_even_when_none_ran():
    # The model calls only a tool the agent lacks, then answers: the agent offered
    # `search` in that run and survived the bad call, so `search`'s cell is covered.
    with af.fault_scope() as scope:
        _run(scope, call_tool("nope"), say("ok"))
    observed = observe(scope.trace.events)
    assert ["tool", "search", "agentfaults"] in observed["rows"]
    assert ("tool", "search", "agentfaults", "unknown_tool", "user") in _hits(scope.trace)
    # the built-in recovery tools are not rows of their own
    assert {row[1] for row in observed["rows"] if row[0] == "tool"} == {"search"}


def test_an_injected_unknown_tool_alone_covers_the_offered_tool_as_injected():
    with af.fault_scope() as scope:
        scope.faults.llm.unknown_tool()
        _run(scope, call_tool("search", query="q"), say("ok"))
    assert ("tool", "search", "agentfaults", "unknown_tool", "injected") in _hits(scope.trace)


def test_a_non_retryable_exception_is_apart_from_a_retryable_one():
    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ValueError("bad"))
        _run(scope, call_tool("search", query="q"), say("ok"))
    hits = _hits(scope.trace)
    assert ("tool", "search", "agentfaults", "non_retryable", "injected") in hits
    assert not any(h[2] == "retryable" for h in hits)


def test_model_errors_from_the_users_model_count_as_user_faults():
    with af.fault_scope() as scope:
        model = ScriptedModel([af.fail.timeout(), say("ok")])
        af.Agent(
            "bot",
            model=model,
            on_llm_error=lambda error, context: af.LlmErrorDecision.retry(max_attempts=2),
        ).run("go")
    assert ("model", "scripted", "agentfaults", "timeout", "user") in _hits(scope.trace)


def test_http_requests_make_host_rows_by_status_and_fault():
    events = [
        Event(
            type="http.request",
            url="https://api.x.test/v1",
            status=429,
            retry_after=2.0,
            fault="429",
        ),
        Event(type="http.request", url="https://api.x.test/v1", status=429),  # no Retry-After
        Event(
            type="http.request", url="https://other.test/v1", fault="truncated_stream", status=200
        ),
        Event(type="http.request", url="https://other.test/v1", fault="connect_error"),
    ]
    observed = observe(events)
    assert ["host", "api.x.test", "http"] in observed["rows"]
    assert {tuple(h) for h in observed["hits"]} == {
        ("host", "api.x.test", "http", "rate_limit", "injected"),
        ("host", "other.test", "http", "stream_cut", "injected"),
        ("host", "other.test", "http", "connection", "injected"),
    }


def test_a_request_the_network_guard_refused_makes_no_host_row():
    # never sent: the host's recovery paths were not exercised, and a row of dots for it
    # would lower the suite's coverage for a test that fails anyway
    url = "https://api.openai.com/v1/chat/completions"
    refused = Event(type="http.request", url=url, status=403, refused=True)
    assert observe([refused]) == {"rows": [], "hits": []}


def test_a_cell_needs_a_passing_test_and_lists_every_one():
    observed = {
        "rows": [["tool", "search", "agentfaults"]],
        "hits": [["tool", "search", "agentfaults", "timeout", "injected"]],
    }
    matrix = Matrix()
    matrix.add(observed, "t::failing", passed=False)
    [row] = matrix.ordered()
    assert "timeout" not in row.cells
    matrix.add(observed, "t::one", passed=True)
    matrix.add(observed, "t::two", passed=True)
    assert row.cells["timeout"].tests == ["t::one", "t::two"]
    assert matrix.counts(row) == (1, 6)


def test_tools_of_one_name_in_two_frameworks_are_two_rows():
    matrix = Matrix()
    matrix.add({"rows": [["tool", "search", "langchain"]], "hits": []}, "t", passed=True)
    matrix.add(
        {
            "rows": [["tool", "search", "mcp"]],
            "hits": [["tool", "search", "mcp", "retryable", "injected"]],
        },
        "t2",
        passed=True,
    )
    langchain, mcp = matrix.ordered()
    assert (langchain.label(), mcp.label()) == ("tool search (langchain)", "tool search (mcp)")
    assert "retryable" not in langchain.cells  # MCP's cell is MCP's only
    assert mcp.cells["retryable"].tests == ["t2"]


def test_exclusions_take_globs_and_the_suggestions_are_markers():
    matrix = Matrix(parse_exclusions(["search:invalid_*", "# a comment", ""]))
    matrix.add({"rows": [["tool", "search", "agentfaults"]], "hits": []}, "t", passed=True)
    [row] = matrix.ordered()
    assert matrix.excluded(row, "invalid_args")
    assert matrix.counts(row) == (0, 5)
    assert suggest(row, "timeout") == '@pytest.mark.inject_fault(tool="search", delay=90)'


def test_a_scripted_bad_call_covers_the_one_row_of_that_tool_name():
    events = [
        Event(type="http.request", url="http://llm_server/v1/chat/completions", status=200),
        Event(type="tool.call", tool="search", framework="langchain"),
        Event(type="tool.result", tool="search", framework="langchain"),
    ]
    hits = {tuple(h) for h in observe(events, [["invalid_args", ["search"], "llm_server"]])["hits"]}
    assert hits == {
        ("tool", "search", "langchain", "invalid_args", "user"),
        ("host", "llm_server", "http", "malformed_tool_args", "user"),
    }


def test_a_scripted_bad_call_covers_no_row_when_two_frameworks_share_the_name():
    events = [
        Event(type="tool.call", tool="search", framework="langchain"),
        Event(type="tool.call", tool="search", framework="mcp"),
    ]
    assert observe(events, [["unknown_tool", ["search"], "llm_server"]])["hits"] == []


def test_the_agents_sdks_model_behavior_error_on_a_tool_is_invalid_arguments():
    error = ErrorRecord(type="ModelBehaviorError", message="bad", kind="runtime", retryable=False)
    events = [
        Event(type="tool.call", tool="search", framework="openai_agents", attempt=1),
        Event(type="tool.error", tool="search", framework="openai_agents", attempt=1, error=error),
    ]
    hits = {tuple(h) for h in observe(events)["hits"]}
    assert hits == {("tool", "search", "openai_agents", "invalid_args", "user")}
