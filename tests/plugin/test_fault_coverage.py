"""`--agentfaults-coverage`: the matrix of recovery paths a suite exercised (issue 18)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

SUITE = '''
import httpx
import pytest
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"

@af.tool
def get_time() -> str:
    """The time."""
    return "noon"

@af.tool
def flaky(n: int) -> str:
    """Really raises a ConnectionError: the user's own code, no fault injected."""
    raise ConnectionError("the real network said no")

def run(*steps, tools=(fetch, get_time, flaky), **options):
    model = ScriptedModel(list(steps), **options)
    return af.Agent("bot", model=model, tools=list(tools), clock=af.VirtualClock()).run("go")

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_fetch_survives_a_reset(trace):
    assert run(call_tool("fetch", url="x"), say("ok")).output == "ok"

@pytest.mark.inject_fault(tool="fetch", returns=af.ToolFailure(error="no such page"))
def test_fetch_reports_a_failure(trace):
    assert run(call_tool("fetch", url="x"), say("ok")).output == "ok"

@pytest.mark.inject_fault(llm="rate_limit", retry_after=2)
def test_the_model_is_rate_limited(trace):
    agent_model = ScriptedModel([call_tool("get_time"), say("ok")])
    agent = af.Agent("bot", model=agent_model, tools=[get_time], clock=af.VirtualClock(),
                     on_llm_error=lambda e, c: af.LlmErrorDecision.retry(max_attempts=3))
    assert agent.run("go").output == "ok"

def test_flaky_really_fails(trace):
    assert run(call_tool("flaky", n=1), say("gave up")).output == "gave up"

@pytest.mark.inject_fault(tool="fetch", raises=ValueError("bad"))
def test_a_failing_test_covers_nothing(trace):
    run(call_tool("fetch", url="x"), say("ok"))
    assert False, "this test fails, so its fault covers no cell"

@pytest.mark.inject_fault(http=503, url="https://api.example.test/", times=1)
def test_a_host_answers_503(http_faults):
    with httpx.Client() as client:
        assert client.get("https://api.example.test/v1/x").status_code == 503
'''


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--agentfaults-coverage=cov.json", *args)
    data = json.loads((pytester.path / "cov.json").read_text())
    return result, data


def _ini(pytester: pytest.Pytester, text: str) -> None:
    # pytester writes a pytest.ini of its own, which wins over makeini()'s tox.ini
    text = textwrap.dedent(text).replace(
        "[pytest]", "[pytest]\nasyncio_default_fixture_loop_scope = function", 1
    )
    pytester.makefile(".ini", pytest=text)


def _cells(data: dict) -> dict[tuple[str, str], dict]:
    return {(row["kind"], row["name"]): row["cells"] for row in data["rows"]}


def test_the_matrix_counts_what_fired_in_passing_tests(pytester):
    result, data = _run(pytester)
    result.assert_outcomes(passed=5, failed=1)
    cells = _cells(data)
    fetch = cells[("tool", "fetch")]
    assert fetch["retryable"]["covered"]
    assert fetch["retryable"]["sources"] == ["injected"]
    assert fetch["retryable"]["tests"] == ["test_suite.py::test_fetch_survives_a_reset"]
    assert fetch["tool_failure"]["tests"] == ["test_suite.py::test_fetch_reports_a_failure"]
    # the failing test's ValueError fired, but a failing test covers nothing
    assert not fetch["non_retryable"]["covered"]
    assert cells[("model", "scripted")]["rate_limit"]["sources"] == ["injected"]
    assert cells[("host", "api.example.test")]["server_error"]["covered"]


def test_every_tool_seen_is_a_row_faulted_or_not(pytester):
    _, data = _run(pytester)
    rows = {(row["kind"], row["name"]): row for row in data["rows"]}
    assert rows[("tool", "get_time")]["percent"] == 0.0
    assert rows[("tool", "get_time")]["framework"] == "agentfaults"
    assert set(rows) >= {("tool", "fetch"), ("tool", "flaky"), ("model", "scripted")}


def test_a_fault_the_users_code_raised_counts_apart_from_injected_ones(pytester):
    result, data = _run(pytester)
    flaky = _cells(data)[("tool", "flaky")]
    assert flaky["retryable"]["covered"]
    assert flaky["retryable"]["sources"] == ["user"]
    [row] = [line for line in result.outlines if line.startswith("tool flaky")]
    assert row.split()[2] == "u"  # retry column: raised by the user's code, not the kit


def test_the_terminal_table_shows_marks_percentages_and_suggestions(pytester):
    result, data = _run(pytester)
    result.stdout.fnmatch_lines(
        [
            "*agentfaults fault coverage*",
            "*retry fatal tmout  args  fail  unkn*",
            "tool fetch*✓*✓*%",
            "fault coverage: * of * cells (*%)*",
            "to cover next:",
            '  tool fetch / non_retryable: @pytest.mark.inject_fault(tool="fetch", '
            'raises=ValueError("bad input"))',
        ]
    )
    total = data["total"]
    assert total["percent"] == round(100 * total["covered"] / total["cells"], 1)


def test_the_gate_fails_the_session_below_the_share(pytester):
    result, data = _run(pytester, "-k", "not failing", "--agentfaults-coverage-fail-under=90")
    assert data["total"]["percent"] < 90
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL: fault coverage *% is below *fail-under=90%"])


def test_the_gate_passes_at_or_above_the_share(pytester):
    result, _ = _run(pytester, "-k", "not failing", "--agentfaults-coverage-fail-under=5")
    assert result.ret == pytest.ExitCode.OK


def test_excluded_cells_do_not_count(pytester):
    _ini(
        pytester,
        """
        [pytest]
        agentfaults_coverage_exclude =
            get_time:invalid_args
            *:unknown_tool
        """,
    )
    result, data = _run(pytester)
    get_time = {row["name"]: row for row in data["rows"]}["get_time"]
    assert get_time["cells"]["invalid_args"]["excluded"]
    assert get_time["cells"]["unknown_tool"]["excluded"]
    assert not get_time["cells"]["timeout"]["excluded"]
    [row] = [line for line in result.outlines if line.startswith("tool get_time")]
    assert row.split()[2:8] == ["·", "·", "·", "-", "·", "-"]
    assert data["total"]["cells"] == sum(
        1 for row in data["rows"] for cell in row["cells"].values() if not cell["excluded"]
    )


def test_a_bad_exclusion_line_is_a_usage_error(pytester):
    _ini(
        pytester,
        """
        [pytest]
        agentfaults_coverage_exclude = get_time
        """,
    )
    pytester.makepyfile(test_one="def test_one(trace): pass")
    result = pytester.runpytest("--agentfaults-coverage")
    result.stderr.fnmatch_lines(["*'get_time' is not tool_or_host:fault_class*"])
    assert result.ret != pytest.ExitCode.OK


def test_the_ini_switch_turns_it_on_and_it_is_off_by_default(pytester):
    pytester.makepyfile(test_one="def test_one(trace): pass")
    assert "fault coverage" not in pytester.runpytest().stdout.str()
    _ini(pytester, "[pytest]\nagentfaults_coverage = true\n")
    pytester.runpytest().stdout.fnmatch_lines(["*agentfaults fault coverage*"])


def test_the_html_report_links_each_covered_cell_to_its_tests(pytester):
    _run(pytester, "--agentfaults-html=report.html")
    page = (pytester.path / "report.html").read_text()
    assert '<section id="fault-coverage">' in page
    section = page.split('<section id="fault-coverage">')[1]
    assert 'title="test_suite.py::test_fetch_survives_a_reset"' in section
    anchor = section.split('title="test_suite.py::test_fetch_survives_a_reset"')[0]
    target = anchor.rsplit('href="#', 1)[1].split('"')[0]
    assert f'id="{target}"' in page  # the link lands on that test's section


@pytest.mark.slow
def test_xdist_workers_matrices_merge_exactly(pytester):
    pytester.makepyfile(test_suite=SUITE)
    alone = pytester.runpytest_subprocess("-p", "no:randomly", "--agentfaults-coverage=a.json")
    alone.assert_outcomes(passed=5, failed=1)
    spread = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-n", "2", "--agentfaults-coverage=b.json"
    )
    spread.assert_outcomes(passed=5, failed=1)
    a = json.loads((pytester.path / "a.json").read_text())
    b = json.loads((pytester.path / "b.json").read_text())

    def normal(data: dict) -> list:
        return sorted(
            (
                row["kind"],
                row["framework"],
                row["name"],
                name,
                cell["covered"],
                sorted(cell["tests"]),
            )
            for row in data["rows"]
            for name, cell in row["cells"].items()
        )

    assert normal(a) == normal(b)
    assert a["total"] == b["total"]


def test_the_readme_shows_the_examples_suites_real_matrix(pytester):
    root = Path(__file__).parent.parent.parent
    shown = (root / "README.md").read_text(encoding="utf-8")
    block = shown.split("## What the examples suite proves")[1].split("```text\n")[1]
    expected = [
        line for line in block.split("```")[0].splitlines() if line.startswith(("tool ", "model "))
    ]
    result = pytester.runpytest_subprocess(
        str(root / "examples"),
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--agentfaults-coverage",
        f"--rootdir={root / 'examples'}",
    )
    result.assert_outcomes(passed=8)
    rows = [line for line in result.outlines if line.startswith(("tool ", "model "))]
    assert expected
    assert rows == expected


def test_the_gate_fails_a_session_that_measured_nothing(pytester):
    # No test used the kit: 0 cells is no coverage at all, not 100% of nothing.
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("-p", "no:randomly", "--agentfaults-coverage-fail-under=80")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAIL: no fault coverage was measured (0 cells: no test used the kit, *fail-under=80%*"]
    )
