"""Adapter tests: real frameworks, and pytest inside pytest (pytester) for the plugin's part."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _inner_ini(request: pytest.FixtureRequest) -> None:
    if "pytester" not in request.fixturenames:
        return
    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )
