"""Every documentation example marked `<!-- test -->` runs, as a user would paste it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parent.parent.parent / "docs"
MARKED = re.compile(r"<!-- test -->\s*```python\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        for index, block in enumerate(MARKED.findall(page.read_text())):
            found.append((f"{page.relative_to(DOCS)}#{index + 1}", block))
    return found


def test_there_are_runnable_examples():
    assert len(examples()) >= 6


@pytest.mark.parametrize(("where", "code"), examples(), ids=[w for w, _ in examples()])
def test_documented_example_passes(pytester, where, code):
    pytester.makepyfile(test_example=code)
    result = pytester.runpytest("--strict-markers")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, f"{where}: no test passed\n{result.stdout.str()}"
    assert not outcomes.get("failed"), f"{where} failed:\n{result.stdout.str()}"
    assert not outcomes.get("errors"), f"{where} errored:\n{result.stdout.str()}"
