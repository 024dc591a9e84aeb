"""This package loads with Python's own importer, not pytest's assertion rewriter.

pytest marks every module of a plugin's distribution for assertion rewriting before it
loads the entry point (`plugin`). The rewriter keeps a cache of its own, which it cannot
write under ``PYTHONDONTWRITEBYTECODE`` (common in containers, and in a fresh CI clone):
it then compiles the source of each module it loads, in every session and xdist worker,
where Python's importer reads the bytecode ``pip`` compiled at install. That cost a
one-test session +78 ms for the plugin's start, and ~0.5 s more once the kit loaded. The
package's asserts are internal checks that rewriting gives nothing; the user's tests and
conftests are rewritten as ever.

`plugin` imports this module before any other of the package, so the modules it imports
next are no longer marked: only `plugin` itself (and the package's ``__init__``, imported
before it) come through the rewriter. `plugin.pytest_addoption` unmarks them again for a
session whose hook marked them anew (pytester's in-process runs). The hook's set of
marked names has no public API: where it is missing (``--assert=plain``, another
pytest) nothing changes.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["keep_the_kit_unrewritten", "unmark"]


def unmark(hook: Any) -> None:
    """Drop this package's modules from the names the rewrite ``hook`` marked."""
    marked = getattr(hook, "_must_rewrite", None)
    cache = getattr(hook, "_marked_for_rewrite_cache", None)
    if not isinstance(marked, set) or not isinstance(cache, dict):
        return
    ours = [name for name in marked if name.split(".")[0] == "pytest_agentfaults"]
    marked.difference_update(ours)
    for name in [name for name in cache if name.split(".")[0] == "pytest_agentfaults"]:
        del cache[name]  # asked again, they now answer "not marked"


def keep_the_kit_unrewritten(pluginmanager: pytest.PytestPluginManager) -> None:
    """`unmark` for the session's own hook (called as the plugin registers its options)."""
    hook = getattr(pluginmanager, "rewrite_hook", None)
    if hook is not None:
        unmark(hook)


# On import, before `plugin` imports the rest: every rewrite hook pytest installed (one
# per session; nested pytester sessions add theirs).
for _finder in sys.meta_path:
    if type(_finder).__name__ == "AssertionRewritingHook":
        unmark(_finder)
del _finder
