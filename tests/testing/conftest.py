"""Fixtures for the tests of the test kit."""

from __future__ import annotations

import pytest


@pytest.fixture
def refusals_expected(request):
    """For a test of the network guard itself: the refusals it makes are what it checks.

    The kit fails a passing test at teardown for every request its guard refused (the
    code under test may have swallowed the refusal). A test that asserts the refusal
    asks for this fixture: after the test, it checks that a request was refused, and
    takes the refusals off the guard's list, so they are not a failure.
    """
    yield
    from pytest_agentfaults._plugin_network import GUARD

    guard = request.node.stash.get(GUARD, None)
    assert guard is not None, "the test expected the network guard"
    assert guard.answered, "the test expected a refused request"
    guard.answered.clear()
