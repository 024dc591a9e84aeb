"""Other ways of running a test that need the plugin's help: unittest cases and subtests.

* ``unittest.IsolatedAsyncioTestCase`` runs its test (``asyncSetUp`` and
  ``asyncTearDown`` too) in a context it copies when the case is made, and pytest makes it
  at collection: before the test's kit is switched on, so its faults would never fire and
  its runs reach no trace. `prepare` gives it the test's context instead, once the setup
  hook has switched the test on.
* Subtests (pytest 9's ``subtests`` fixture, unittest's ``self.subTest``) report through
  the same ``pytest_runtest_makereport`` hook as the test's own call, during that call.
  A report made while the call runs (`in_call`) is a subtest's: the plugin's hooks never
  read it as the test's outcome. This module's call hook marks the call; it is registered
  on the first test that can have subtests, as it wraps every test's call from then on.

Light like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Generator

import pytest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["IN_CALL", "in_call", "prepare", "pytest_runtest_call"]

# CPython's name for the context an IsolatedAsyncioTestCase runs in (3.11 to 3.14); a
# Python without it has nothing of the kind to hand over.
_CONTEXT = "_asyncioTestContext"

#: set on a test that can have subtests, by the setup hook (`prepare`)
_SUBTESTS = pytest.StashKey[bool]()
#: set while such a test's call runs: a call report made then is a subtest's
IN_CALL = pytest.StashKey[bool]()


def prepare(item: pytest.Item) -> None:
    """Ready ``item``, a test that may use the kit, for unittest's ways and for subtests."""
    instance = getattr(item, "instance", None)
    unittest = sys.modules.get("unittest")
    case = instance is not None and unittest is not None and isinstance(instance, unittest.TestCase)
    if case and hasattr(instance, _CONTEXT):
        # its own attribute, set in its __init__: the only hook it offers
        setattr(instance, _CONTEXT, contextvars.copy_context())
    if case or "subtests" in getattr(item, "fixturenames", ()):
        item.stash[_SUBTESTS] = True
        manager = item.config.pluginmanager
        if not manager.has_plugin(__name__):
            # by hand: import_plugin() would mark this loaded module for assertion
            # rewriting (`_plugin_unrewritten`); registered in the setup, it wraps this
            # test's call already
            manager.register(sys.modules[__name__], __name__)


def in_call(item: pytest.Item) -> bool:
    """Whether ``item``'s call is running: a call report made now is a subtest's."""
    return IN_CALL in item.stash


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Mark the call of a test that can have subtests, while it runs."""
    stash = item.stash
    if _SUBTESTS not in stash:
        return (yield)
    stash[IN_CALL] = True
    try:
        return (yield)
    finally:
        del stash[IN_CALL]
