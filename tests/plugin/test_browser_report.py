"""The HTML report in a real browser (issue 21, item 5): the timeline renders with a size
and a visible legend. Needs chromium (``apt-get install chromium``) and Playwright; the
``browser`` marker deselects it elsewhere (the SVG's structure is checked everywhere by
tests/runtime/test_timeline.py).

``AGENTFAULTS_DOCS_IMG=1`` also writes the screenshot used by docs/testing.md.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
DOCS_IMAGE = Path(__file__).parents[2] / "docs" / "img" / "timeline.png"

SUITE = """
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
@pytest.mark.inject_fault(llm="rate_limit", retry_after=1)
def test_fetch_recovers():
    agent = make(on_llm_error=lambda exc, attempt: af.LlmErrorDecision.retry())
    assert agent.run("go").output == "done"

def test_no_time_at_all(trace):
    make().run("go")
"""


def test_the_timeline_renders_with_a_size_and_a_visible_legend(suite, tmp_path):
    from playwright.sync_api import sync_playwright
    from tests.conftest import CHROMIUM

    pytester = suite(SUITE)
    pytester.runpytest("--agentfaults-html=report.html").assert_outcomes(passed=2)
    report = pytester.path / "report.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.goto(report.as_uri())
            pictures = page.locator("section svg")
            assert pictures.count() == 2
            for index in range(2):
                picture = pictures.nth(index)
                box = picture.bounding_box()
                assert box is not None
                assert box["width"] > 400
                assert box["height"] > 80
                legend = picture.locator("g.legend")
                assert legend.is_visible()
                legend_box = legend.bounding_box()
                assert legend_box is not None
                assert legend_box["width"] > 300
                assert legend.locator("text").count() == 6
            axes = [pictures.nth(i).locator("g.axis").get_attribute("data-axis") for i in (0, 1)]
            assert sorted(axes) == ["ordinal", "time"]
            shot = tmp_path / "timeline.png"
            timed = pictures.nth(axes.index("time"))
            timed.screenshot(path=str(shot))
            assert shot.stat().st_size > 5_000  # a picture, not a blank
        finally:
            browser.close()
    if os.environ.get("AGENTFAULTS_DOCS_IMG"):
        shutil.copyfile(shot, DOCS_IMAGE)
