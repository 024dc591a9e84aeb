""" "To cover next" tells the truth: each suggested marker, pasted onto a test, covers its cell.

The suite has two tools, and the one the suggestions are for is offered second: a marker
that only reaches the first tool on offer (``llm="malformed_tool_args"`` calls it) would
leave the cell as it was, and the same suggestion would come again.
"""

from __future__ import annotations

import json
import textwrap

SUITE = '''
import pytest
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

@af.tool
def search(query: str) -> str:
    """Search."""
    return "results"

@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"

def run():
    model = ScriptedModel(
        [call_tool("search", query="x"), call_tool("fetch", url="u"), say("done")],
        on_exhausted="repeat_last",
    )
    return af.Agent("bot", model=model, tools=[search, fetch]).run("go")

{marker}
def test_the_agent_answers():
    assert run().output == "done"
'''


def _coverage(pytester, marker: str) -> dict:
    pytester.makepyfile(test_suite=SUITE.replace("{marker}", marker))
    result = pytester.runpytest(
        "--agentfaults-coverage=cov.json",
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
    )
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "cov.json").read_text())


def _cell(report: dict, row: str, fault: str) -> dict:
    for each in report["rows"]:
        if f"{each['kind']} {each['name']}" == row:
            return each["cells"][fault]
    raise AssertionError(f"no row {row!r} in {[r['name'] for r in report['rows']]}")


def test_every_marker_suggested_for_the_second_tool_covers_its_cell(pytester):
    report = _coverage(pytester, "")
    suggestions = [s for s in report["suggestions"] if s["row"] == "tool fetch"]
    assert {s["fault"] for s in suggestions} == {
        "retryable",
        "non_retryable",
        "timeout",
        "invalid_args",
        "tool_failure",
        "unknown_tool",
    }
    wrong = []
    for suggestion in suggestions:
        marker = suggestion["marker"]
        assert marker.startswith("@pytest.mark.inject_fault("), marker
        after = _coverage(pytester, textwrap.dedent(marker))
        if not _cell(after, "tool fetch", suggestion["fault"])["covered"]:
            wrong.append(f"{suggestion['fault']}: {marker}")
    assert not wrong, "suggestions that did not cover their cell:\n" + "\n".join(wrong)


LONG_TIMEOUT = SUITE.replace(
    "tools=[search, fetch])",
    "tools=[search, fetch], resilience=af.ResilienceConfig(timeout_seconds=120))",
)


def test_the_timeout_suggestion_needs_a_timeout_under_the_delay_as_the_docs_say(pytester):
    # docs/testing.md: delay=90 covers the cell under the default 60 s timeout only; with a
    # longer one, raises=TimeoutError(...) does
    def covered(suite: str, marker: str) -> bool:
        pytester.makepyfile(test_suite=suite.replace("{marker}", marker))
        result = pytester.runpytest(
            "--agentfaults-coverage=cov.json",
            "-p",
            "no:randomly",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
        )
        result.assert_outcomes(passed=1)
        report = json.loads((pytester.path / "cov.json").read_text())
        return bool(_cell(report, "tool fetch", "timeout")["covered"])

    delay = '@pytest.mark.inject_fault(tool="fetch", delay=90)'
    raises = '@pytest.mark.inject_fault(tool="fetch", raises=TimeoutError("injected"))'
    assert covered(SUITE, delay)
    assert not covered(LONG_TIMEOUT, delay)
    assert covered(LONG_TIMEOUT, raises)
