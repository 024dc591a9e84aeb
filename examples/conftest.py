"""Shared set-up for the examples: a fresh flaky network per test, traces printed."""

from __future__ import annotations

import pytest
from research_assistant import network


@pytest.fixture(autouse=True)
def fresh_network():
    network.failures.clear()
    network.calls.clear()
    yield network


@pytest.fixture
def show():
    """Print a run's recovery trace under the test's name (the main job's output)."""

    def _show(result):
        print(f"\n--- recovery trace ({result.status}) ---")
        print(result.trace.render())
        return result

    return _show
