"""Adapter tests: real frameworks, and pytest inside pytest (pytester) for the plugin's part."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _inner_ini(request: pytest.FixtureRequest) -> None:
    if "pytester" not in request.fixturenames:
        return
    pytester: pytest.Pytester = request.getfixturevalue("pytester")
    pytester.makefile(
        ".ini",
        # (pytest-rerunfailures: see tests/plugin/conftest.py)
        pytest="[pytest]\naddopts = -p no:hypothesispytest -p no:rerunfailures\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )


@pytest.fixture(autouse=True)
def _close_the_loop_run_sync_leaves(request: pytest.FixtureRequest) -> Iterator[None]:
    """pydantic-ai's ``run_sync`` sets an event loop it never closes; close it after the test.

    Left open, it is collected during a later test and its ResourceWarning (an error here)
    lands on whichever test runs then.
    """
    yield
    if request.node.get_closest_marker("asyncio") is not None:
        return  # pytest-asyncio owns the loops of async tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
