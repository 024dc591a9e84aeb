"""The options that write files never write over a file that is not their own report.

`--agentfaults-coverage` takes an optional value: put before a test path, the path became
its value, the session ran the whole directory and the test file was overwritten with the
JSON (a new user's audit). The session now stops before it runs anything.
"""

from __future__ import annotations

import json

import pytest

TEST_APP = "def test_ok():\n    assert True\n"


@pytest.fixture
def app(pytester: pytest.Pytester) -> str:
    return pytester.makepyfile(test_app=TEST_APP).read_text()


def _unchanged(pytester: pytest.Pytester) -> None:
    assert (pytester.path / "test_app.py").read_text().startswith("def test_ok():")


def test_the_plain_flag_before_a_test_path_never_eats_it(pytester, app):
    result = pytester.runpytest("--agentfaults-coverage", "test_app.py")
    _unchanged(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--agentfaults-coverage took 'test_app.py' as its JSON path*"
            "--agentfaults-coverage=PATH.json*after the test paths"
        ]
    )
    assert "passed" not in result.stdout.str()  # nothing ran


def test_the_flag_after_the_test_paths_runs_them_and_writes_no_file(pytester, app):
    result = pytester.runpytest("test_app.py", "--agentfaults-coverage")
    result.assert_outcomes(passed=1)
    _unchanged(pytester)
    result.stdout.fnmatch_lines(["*agentfaults fault coverage*"])


def test_a_directory_is_not_a_json_path_either(pytester, app):
    pytester.mkdir("sub")
    result = pytester.runpytest("--agentfaults-coverage", "sub")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfaults-coverage took 'sub' as its JSON path*"])


def test_an_existing_json_file_that_is_not_a_report_is_never_written_over(pytester, app):
    data = pytester.path / "fixtures.json"
    data.write_text('{"users": [1, 2]}\n')
    result = pytester.runpytest("--agentfaults-coverage=fixtures.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert data.read_text() == '{"users": [1, 2]}\n'
    result.stderr.fnmatch_lines(
        ["*--agentfaults-coverage=fixtures.json: * not a fault coverage report*"]
    )


def test_a_report_of_an_earlier_run_is_written_over(pytester, app):
    pytester.runpytest("--agentfaults-coverage=cov.json").assert_outcomes(passed=1)
    first = json.loads((pytester.path / "cov.json").read_text())
    again = pytester.runpytest("--agentfaults-coverage=cov.json")
    again.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "cov.json").read_text())["format"] == first["format"]


def test_the_ini_path_is_checked_the_same_way(pytester, app):
    pytester.makefile(".ini", pytest="[pytest]\nagentfaults_coverage = test_app.py\n")
    result = pytester.runpytest()
    _unchanged(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agentfaults_coverage = 'test_app.py'*ending in .json*"])


def test_the_html_report_never_writes_over_a_test_file(pytester, app):
    result = pytester.runpytest("--agentfaults-html", "test_app.py")
    _unchanged(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--agentfaults-html=test_app.py: * not an HTML report of pytest-agentfaults*"]
    )


def test_the_html_report_writes_over_its_own_earlier_report(pytester, app):
    pytester.runpytest("--agentfaults-html=report.html").assert_outcomes(passed=1)
    pytester.runpytest("--agentfaults-html=report.html").assert_outcomes(passed=1)
    assert "pytest-agentfaults report" in (pytester.path / "report.html").read_text()


def test_the_html_ini_is_checked_too(pytester, app):
    pytester.makefile(".ini", pytest="[pytest]\nagentfaults_html = test_app.py\n")
    result = pytester.runpytest()
    _unchanged(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*agentfaults_html = 'test_app.py'*"])


def test_the_trace_dir_is_never_a_file(pytester, app):
    result = pytester.runpytest("--agentfaults-trace-dir", "test_app.py")
    _unchanged(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agentfaults-trace-dir=test_app.py: * not a directory*"])
