"""docs/howto/property-testing.md: every Python block runs, and every test it defines passes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import settings

PAGE = Path(__file__).parents[2] / "docs" / "howto" / "property-testing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def page_tests() -> tuple[dict[str, Any], list[tuple[str, Callable[[], None]]]]:
    """Run the page's Python blocks in order, in one namespace; return its test functions."""
    namespace: dict[str, Any] = {"__name__": "property_testing_page"}
    previous = settings.get_current_profile_name()
    # The page's tests check the docs, not the runtime: always the fast "ci" profile (their
    # @given reads the default settings when it is applied, during exec).
    settings.load_profile("ci")
    try:
        for block in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
            exec(compile(block, str(PAGE), "exec"), namespace)
    finally:
        settings.load_profile(previous)
    tests = [(name, fn) for name, fn in namespace.items() if name.startswith("test_")]
    return namespace, tests


def test_the_page_has_runnable_examples() -> None:
    _, tests = page_tests()
    names = [name for name, _ in tests]
    assert len(names) >= 6, names
    for _, test in tests:
        test()
