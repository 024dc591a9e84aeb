"""--agentfaults-html: a self-contained report that shows every event of every test."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

SUITE = """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_recovers(trace):
    assert make().run("go").output == "done"
    with open(f"events-recovers.txt", "w") as out:
        out.write(str(len(trace)))

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=9)
def test_fails(trace):
    with open(f"events-fails.txt", "w") as out:
        out.write(str(len(trace)))
    assert make().run("go").output == "never"

def test_without_agents():
    pass
"""


class _Sections(HTMLParser):
    """Counts, per test section, the SVG elements that stand for events."""

    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None
        self.seqs: dict[str, set[str]] = {}

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section":
            self.current = attributes["id"]
            self.seqs[self.current] = set()
        elif self.current and "data-seq" in attributes:
            self.seqs[self.current].add(attributes["data-seq"])


@pytest.mark.parametrize(
    "workers",
    [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)],
)
def test_the_report_shows_every_event_of_every_test(suite, workers):
    pytester = suite(SUITE)
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    result = run("--agentfaults-html=out/report.html", *workers)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["agentfaults: HTML report written to out/report.html"])
    page = (pytester.path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # self-contained and inert
    parser = _Sections()
    parser.feed(page)
    names = re.findall(r'<section id="(t\d+)"><h2>([^<]+) ', page)
    by_test = {name.split("::")[-1]: parser.seqs[anchor] for anchor, name in names}
    assert set(by_test) == {"test_recovers", "test_fails", "test_without_agents"}
    # the events a test saw at the moment it wrote the file are a prefix of its trace
    recovered = by_test["test_recovers"]
    assert len(recovered) == int((pytester.path / "events-recovers.txt").read_text())
    assert len(recovered) > 0
    assert by_test["test_without_agents"] == set()
    assert "tool &#x27;fetch&#x27; raises ConnectionError" in page or "tool 'fetch' raises" in page


@pytest.mark.slow
def test_always_mode_traces_come_back_from_xdist_workers(suite):
    pytester = suite(SUITE)
    result = pytester.runpytest_subprocess("-n", "2", "--agentfaults-trace=always")
    out = result.stdout.str()
    assert "recovery traces" in out
    assert "test_suite.py::test_recovers" in out
