"""Reports: the recovery trace section, trace files, seeds, snapshots, summary, xdist."""

from __future__ import annotations

import json

import pytest

FLAKY = """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_recovers():
    assert make().run("go").output == "done"

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_fails():
    result = make().run("go")
    assert result.output == "something else"
"""


def test_failure_report_has_a_recovery_trace_section(suite):
    result = suite(FLAKY).runpytest()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert out.count("recovery trace") == 1  # only the failing test, by default
    result.stdout.fnmatch_lines(
        [
            "*- recovery trace -*",
            "replay: pytest --agentfaults-seed=* test_suite.py::test_fails",
            "summary: 1 fault fired, 1 tool retry",
            "faults:",
            "  fired 1 time: tool 'fetch' raises ConnectionError('reset') (@pytest.mark.inject*",
            "timeline:",
            "     0.000s           run.start       [bot] go",
            "     0.000s  turn 1   llm.request     [bot] scripted",
            "*",
            "     0.000s  turn 1   tool.fault      ?bot? fetch  tool 'fetch' raises *",
        ]
    )


def test_always_prints_every_trace_and_never_prints_none(suite):
    pytester = suite(FLAKY)
    always = pytester.runpytest("--agentfaults-trace=always").stdout.str()
    assert "= recovery traces =" in always or "recovery traces" in always
    assert "test_suite.py::test_recovers" in always
    never = pytester.runpytest("--agentfaults-trace=never").stdout.str()
    assert "recovery trace" not in never


def test_ini_options_are_equivalent(suite):
    pytester = suite(FLAKY)
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\nagentfaults_trace = never\n"
        "asyncio_default_fixture_loop_scope = function\n"
        "agentfaults_seed = 1234\nagentfaults_trace_dir = traces\n",
    )
    out = pytester.runpytest().stdout.str()
    assert "recovery trace" not in out
    assert "agentfaults: seed=1234" in out
    assert len(list((pytester.path / "traces").glob("*.json"))) == 2


def test_bad_ini_value_is_a_usage_error(suite):
    pytester = suite(FLAKY)
    result = pytester.runpytest("-o", "agentfaults_trace=sometimes")
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*agentfaults_trace = 'sometimes': use one of on-failure, always, never*"]
    )


def test_trace_dir_gets_one_json_file_per_test_passed_or_failed(suite):
    pytester = suite(FLAKY)
    pytester.runpytest("--agentfaults-trace-dir=out")
    files = sorted((pytester.path / "out").glob("*.json"))
    assert len(files) == 2
    data = {json.loads(f.read_text())["nodeid"]: json.loads(f.read_text()) for f in files}
    passed = data["test_suite.py::test_recovers"]
    failed = data["test_suite.py::test_fails"]
    assert passed["outcome"] == "passed"
    assert failed["outcome"] == "failed"
    assert passed["counts"] == {
        "faults": 2,
        "retries": 2,
        "fixer_calls": 0,
        "escalations": 0,
        "http_retries": 0,
    }
    assert [f["kind"] for f in passed["faults_fired"]] == ["raises", "raises"]
    assert passed["events"][0]["type"] == "run.start"
    assert not list((pytester.path / "out").glob("*.tmp"))


def test_trace_dir_has_a_file_for_each_test_that_used_the_kit_and_no_other(suite):
    # An unmarked test that runs an agent used the kit (its state is built then); one that
    # never touches the runtime has no trace to write.
    pytester = suite(
        """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_marked():
    assert make().run("go").output == "done"

def test_unmarked_with_a_run():
    assert make().run("go").output == "done"

def test_unmarked_without_one():
    pass
"""
    )
    pytester.runpytest("--agentfaults-trace-dir=out", "-p", "no:randomly").assert_outcomes(passed=3)
    names = sorted(
        json.loads(f.read_text())["nodeid"] for f in (pytester.path / "out").glob("*.json")
    )
    assert names == ["test_suite.py::test_marked", "test_suite.py::test_unmarked_with_a_run"]


def test_file_names_are_safe_and_unique(suite):
    from pytest_agentfaults.testing.session import trace_file_name

    a = trace_file_name("tests/test_a.py::test_x[http://x.test/a?b=1]")
    b = trace_file_name("tests/test_a.py::test_x[http://x.test/a?b=2]")
    assert a != b
    assert all(ch.isalnum() or ch in "_.-" for ch in a)


def test_summary_line_counts_faults_retries_fixers_and_escalations(suite):
    result = suite('''
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), times=3)
def test_one():
    make().run("go")

def test_two():
    def fixer(raw):
        raise af.EscalationError("no")
    @af.tool(on_error=af.OnError(execution=af.fix(af.Agent.from_function("f", fixer))))
    def boom() -> str:
        """Boom."""
        raise ValueError("x")
    af.Agent("b", model=ScriptedModel([call_tool("boom"), say("ok")]), tools=[boom]).run("x")
''').runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["agentfaults: 3 faults injected, 3 retries, 1 fixer call, 1 escalation"]
    )


def test_snapshots_are_written_matched_and_updated(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # in CI a missing golden trace fails instead
    pytester = suite("""
def test_golden(trace):
    make().run("go")
    trace.assert_matches_snapshot("fixtures/traces/golden.json")
""")
    pytester.runpytest().assert_outcomes(passed=1)  # first run writes it
    golden = pytester.path / "fixtures" / "traces" / "golden.json"
    text = golden.read_text()
    assert '"run_id": "run-1"' in text  # stable ids, no random ones
    pytester.runpytest().assert_outcomes(passed=1)  # second run matches
    golden.write_text(text.replace('"done"', '"other"'))
    mismatch = pytester.runpytest()
    mismatch.assert_outcomes(failed=1)
    mismatch.stdout.fnmatch_lines(
        ["*does not match the golden trace*", "*--agentfaults-update-snapshots*"]
    )
    pytester.runpytest("--agentfaults-update-snapshots").assert_outcomes(passed=1)
    assert golden.read_text() == text


def test_the_seed_is_printed_and_differs_between_sessions_by_default(suite):
    pytester = suite(FLAKY)
    first = pytester.runpytest().stdout.str()
    second = pytester.runpytest().stdout.str()
    seed = lambda out: next(x for x in out.splitlines() if x.startswith("agentfaults: seed="))  # noqa: E731
    assert seed(first) != seed(second)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_works_under_xdist_with_aggregated_summary_and_one_seed(suite):
    pytester = suite("""
import os

@pytest.mark.parametrize("n", range(6))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), times=1)
def test_many(n):
    with open(f"seed-{n}.txt", "w") as out:
        out.write(str(af.ResilienceConfig().schedule()))
    assert make().run("go").output == "done"
""")
    result = pytester.runpytest_subprocess(
        "-n", "2", "--agentfaults-seed=99", "--agentfaults-trace-dir=out"
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["agentfaults: 6 faults injected, 6 retries, 0 fixer calls, 0 escalations"]
    )
    assert len(list((pytester.path / "out").glob("*.json"))) == 6
    under_xdist = {p.name: p.read_text() for p in pytester.path.glob("seed-*.txt")}
    again = pytester.runpytest_subprocess("-p", "no:xdist", "--agentfaults-seed=99")
    again.assert_outcomes(passed=6)
    alone = {p.name: p.read_text() for p in pytester.path.glob("seed-*.txt")}
    assert under_xdist == alone  # every worker used the controller's seed
    assert len(set(alone.values())) == 6  # and each test its own jitter
