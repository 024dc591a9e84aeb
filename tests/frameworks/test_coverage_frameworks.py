"""Fault coverage sees the tools of other frameworks, as rows marked with the framework."""

from __future__ import annotations

import pytest
from pydantic_ai import ModelRetry

import pytest_agentfaults as af
from pytest_agentfaults.testing._coverage import Matrix
from pytest_agentfaults.testing._coverage_observe import observe

from .test_pydantic_ai import make_agent


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("warming up"), times=1)
def test_a_pydantic_ai_tool_is_a_row_of_its_framework(trace: af.Trace) -> None:
    make_agent([]).run_sync("find the docs")
    observed = observe(trace.events)
    assert ["tool", "search", "pydantic_ai"] in observed["rows"]
    hits = {tuple(hit) for hit in observed["hits"]}
    # ModelRetry asks for another attempt
    assert {hit[3] for hit in hits if hit[:3] == ("tool", "search", "pydantic_ai")} == {"retryable"}
    assert all(hit[4] == "injected" for hit in hits if hit[:2] == ("tool", "search"))
    matrix = Matrix()
    matrix.add(observed, "test", passed=True)
    [row] = [r for r in matrix.ordered() if r.kind == "tool"]
    assert row.label() == "tool search (pydantic_ai)"


@pytest.mark.inject_fault(tool="search", returns=af.ToolFailure(error="no index"), times=1)
def test_a_tool_failure_in_pydantic_ai_covers_the_logical_failure_cell(trace: af.Trace) -> None:
    make_agent([]).run_sync("find the docs")
    hits = {tuple(hit) for hit in observe(trace.events)["hits"]}
    assert ("tool", "search", "pydantic_ai", "tool_failure", "injected") in hits
