"""Every runnable documentation example runs, as a user would paste it.

Two ways a page marks its examples:

- `<!-- test -->` right before a ```python block: that block alone is a test module;
- `<!-- test-page -->` anywhere in a page: all its ```python blocks, in order, make one
  test module (for pages whose examples build on each other).

Either way the module runs through pytester, and every test it defines must pass.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from hypothesis import settings

# httpx2 caches httpcore2's exception classes on first use; a fresh httpcore2 imported by
# an in-process inner run would leave that cache pointing at classes nobody raises.
for _module in ("httpcore2", "httpx2", "openai", "anthropic"):
    if importlib.util.find_spec(_module) is not None:
        __import__(_module)

DOCS = Path(__file__).parent.parent.parent / "docs"
MARKED = re.compile(r"<!-- test -->\s*```python\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
BLOCK = re.compile(r"^```python\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)
PAGE_MARK = "<!-- test-page -->"
TEST_FUNCTION = re.compile(r"^(?:async )?def test_", re.MULTILINE)

# Property examples on a page check the docs, not the runtime: a small, derandomized run.
settings.register_profile(
    "docs-examples", max_examples=30, derandomize=True, database=None, deadline=None
)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(DOCS))
        if PAGE_MARK in text:
            found.append((name, "\n\n".join(BLOCK.findall(text))))
            continue
        for index, block in enumerate(MARKED.findall(text)):
            found.append((f"{name}#{index + 1}", block))
    return found


def test_there_are_runnable_examples():
    pages = {where.split("#")[0] for where, _ in examples()}
    assert len(examples()) >= 10
    assert {"howto/sdk-clients.md", "howto/property-testing.md", "tutorial.md"} <= pages


@pytest.mark.parametrize(("where", "code"), examples(), ids=[w for w, _ in examples()])
def test_documented_example_passes(pytester, where, code):
    pytester.makepyfile(test_example=code)
    previous = settings.get_current_profile_name()
    settings.load_profile("docs-examples")
    try:
        result = pytester.runpytest("--strict-markers")
    finally:
        settings.load_profile(previous)
    outcomes = result.parseoutcomes()
    defined = len(TEST_FUNCTION.findall(code))
    assert defined >= 1, f"{where}: the example defines no test"
    assert outcomes.get("passed", 0) >= defined, (
        f"{where}: not every test passed\n{result.stdout.str()}"
    )
    for bad in ("failed", "errors", "skipped"):
        assert not outcomes.get(bad), f"{where}: {bad}\n{result.stdout.str()}"
