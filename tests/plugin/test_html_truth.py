"""An HTML report that tells the truth (issue 21, item 2): pytest's outcome of every phase,
with its message and traceback; and the same trace in pytest-html and junit XML."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

PHASES = """
@pytest.fixture
def broken_setup():
    raise RuntimeError("setup went wrong")

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown went wrong")

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_setup_error(broken_setup):
    pass

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"))
def test_teardown_error(broken_teardown):
    assert make().run("go").output == "done"

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_fails():
    result = make().run("go")
    assert result.output == "other", "the agent said something else"

@pytest.mark.xfail(reason="known bug", strict=True)
def test_xfail(trace):
    make().run("go")
    assert False

def test_skip():
    pytest.skip("not today")

def test_pass():
    pass
"""


class _Page(HTMLParser):
    """Per section: the phase rows (cells), and the text of the whole section."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.current: dict | None = None
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.in_phases = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section":
            self.current = {"rows": [], "text": [], "svg": 0}
            self.sections[attributes["id"]] = self.current
        elif self.current is not None:
            if tag == "table":
                self.in_phases = attributes.get("class") == "phases"
            elif tag == "tr" and self.in_phases:
                self.row = []
            elif tag == "td" and self.row is not None:
                self.cell = []
            elif tag == "svg":
                self.current["svg"] += 1

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None and self.row is not None:
            self.row.append("".join(self.cell))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row and self.current is not None:
                self.current["rows"].append(self.row)
            self.row = None
        elif tag == "table":
            self.in_phases = False
        elif tag == "section":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)
        if self.current is not None:
            self.current["text"].append(data)


def _by_test(page: str) -> dict[str, dict]:
    parser = _Page()
    parser.feed(page)
    names = re.findall(r'<section id="(t\d+)"><h2>([^<]+) <span class="badge (\w+)">', page)
    out = {}
    for anchor, nodeid, outcome in names:
        section = parser.sections[anchor]
        section["outcome"] = outcome
        section["phases"] = {row[0]: (row[1], row[2]) for row in section["rows"]}
        section["text"] = "".join(section["text"])
        out[nodeid.split("::")[-1]] = section
    return out


def test_every_phase_outcome_with_its_message_and_traceback(suite):
    pytester = suite(PHASES)
    result = pytester.runpytest("--agentfaults-html=report.html")
    result.assert_outcomes(passed=2, failed=1, errors=2, skipped=1, xfailed=1)
    tests = _by_test((pytester.path / "report.html").read_text())
    assert set(tests) == {
        "test_setup_error",
        "test_teardown_error",
        "test_fails",
        "test_xfail",
        "test_skip",
        "test_pass",
    }

    setup = tests["test_setup_error"]
    assert setup["outcome"] == "error"
    assert setup["phases"]["setup"] == ("error", "RuntimeError: setup went wrong")
    assert "call" not in setup["phases"]
    assert 'raise RuntimeError("setup went wrong")' in setup["text"]  # the traceback

    teardown = tests["test_teardown_error"]
    assert teardown["outcome"] == "error"  # not "passed", though its call passed
    assert teardown["phases"]["call"][0] == "passed"
    assert teardown["phases"]["teardown"] == ("error", "RuntimeError: teardown went wrong")
    assert teardown["svg"] == 1  # its trace is there too

    failed = tests["test_fails"]
    assert failed["outcome"] == "failed"
    assert failed["phases"]["call"][0] == "failed"
    assert "the agent said something else" in failed["phases"]["call"][1]
    assert "assert result.output == " in failed["text"]
    assert "replay: pytest --agentfaults-seed=" in failed["text"]
    assert "tool 'fetch' raises ConnectionError('reset') (occurrence 1)" in failed["text"]
    assert "retries exhausted" not in failed["text"]

    assert tests["test_xfail"]["outcome"] == "xfailed"
    assert "known bug" in tests["test_xfail"]["phases"]["call"][1]
    assert tests["test_skip"]["outcome"] == "skipped"
    assert tests["test_skip"]["phases"]["call"] == ("skipped", "not today")
    assert tests["test_pass"]["outcome"] == "passed"
    assert tests["test_pass"]["svg"] == 0


@pytest.mark.slow
def test_the_phases_come_back_from_xdist_workers(suite):
    pytester = suite(PHASES)
    result = pytester.runpytest_subprocess("-n", "2", "--agentfaults-html=report.html")
    result.assert_outcomes(passed=2, failed=1, errors=2, skipped=1, xfailed=1)
    tests = _by_test((pytester.path / "report.html").read_text())
    assert tests["test_teardown_error"]["outcome"] == "error"
    assert tests["test_setup_error"]["phases"]["setup"][0] == "error"


KIT = """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_recovers():
    assert make().run("go").output == "done"

def test_plain():
    pass
"""


def test_junit_xml_carries_the_counts_as_properties(suite):
    pytester = suite(KIT)
    pytester.runpytest("--junitxml=junit.xml").assert_outcomes(passed=2)
    root = ET.parse(pytester.path / "junit.xml").getroot()
    cases = {case.get("name"): case for case in root.iter("testcase")}
    properties = {p.get("name"): p.get("value") for p in cases["test_recovers"].iter("property")}
    assert properties["agentfaults.faults"] == "2"
    assert properties["agentfaults.retries"] == "2"
    assert properties["agentfaults.http_retries"] == "0"
    assert properties["agentfaults.fixer_calls"] == "0"
    assert properties["agentfaults.escalations"] == "0"
    assert properties["agentfaults.replay"].startswith("pytest --agentfaults-seed=")
    assert list(cases["test_plain"].iter("property")) == []  # a test that never used the kit


def test_pytest_html_gets_the_trace_and_the_timeline_as_extras(suite):
    pytester = suite(KIT)
    pytester.runpytest("--html=theirs.html", "--self-contained-html").assert_outcomes(passed=2)
    page = (pytester.path / "theirs.html").read_text()
    # pytest-html keeps the rows in an escaped JSON blob; the extra travels inside it
    assert "agentfaults trace" in page
    assert page.count("agentfaults trace") == 1  # test_recovers only
    assert "&lt;svg" in page or "<svg" in page
    assert "tool.retry" in page


SEEN_REPORTS = """
import pytest

SEEN = []

@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "teardown":
        SEEN.append((report.nodeid, list(report.user_properties), getattr(report, "extras", [])))

def pytest_sessionfinish(session):
    agentfaults = [
        nodeid
        for nodeid, props, extras in SEEN
        if any(name.startswith("agentfaults.") for name, _ in props) or extras
    ]
    (session.config.rootpath / "seen.txt").write_text(f"{len(SEEN)} {len(agentfaults)}")
"""


def test_without_junitxml_or_html_the_reports_get_nothing_extra(suite):
    # building the timeline for pytest-html cost more than the test itself: only when
    # the session writes that report
    pytester = suite(KIT)
    pytester.makeconftest(SEEN_REPORTS)
    pytester.runpytest().assert_outcomes(passed=2)
    assert (pytester.path / "seen.txt").read_text() == "2 0"  # two tests, nothing added
