"""Other ways of running a test that need the plugin's help: unittest's async test cases.

``unittest.IsolatedAsyncioTestCase`` runs its test (``asyncSetUp`` and ``asyncTearDown``
too) in a context it copies when the case is made, and pytest makes it at collection:
before the test's kit is switched on, so its faults would never fire and its runs reach
no trace. `hand_over_context` gives it the test's context instead, once the setup hook
has switched the test on.

Light like ``plugin.py``: the standard library and pytest only at module level.
"""

from __future__ import annotations

import contextvars

import pytest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["hand_over_context"]

# CPython's name for the context an IsolatedAsyncioTestCase runs in (3.11 to 3.14); a
# Python without it has nothing of the kind to hand over.
_CONTEXT = "_asyncioTestContext"


def hand_over_context(item: pytest.Item) -> None:
    """Run ``item``'s IsolatedAsyncioTestCase in the test's context, the kit switched on."""
    instance = getattr(item, "instance", None)
    if instance is not None and hasattr(instance, _CONTEXT):
        # its own attribute, set in its __init__: the only hook it offers
        setattr(instance, _CONTEXT, contextvars.copy_context())
