"""Load the whole package before any test runs.

The package and the plugin load lazily; pytester's in-process runs (``runpytest``) unload
every module the inner session imported, but not a surviving package's attribute for its
submodule, so the next inner run would mix two copies of, say, ``runtime.hooks``. Loading
everything here keeps one copy for the whole session. The laziness itself is tested in a
subprocess (tests/plugin/test_light_plugin.py).

httpx2 imports httpcore2 only on its transport's first request, and keeps a map from
httpcore2's exception classes to its own. Were httpcore2 first imported inside an inner
run, the next outer test would get a second copy whose errors the map no longer knows: a
raw ``httpcore2.ReadTimeout`` reaches the SDK instead of ``httpx2.ReadTimeout``.
"""

import httpcore  # noqa: F401 - see above
import httpcore2  # noqa: F401

import pytest_agentfaults
import pytest_agentfaults.testing.session

for _name in pytest_agentfaults.__all__:
    getattr(pytest_agentfaults, _name)


CHROMIUM = "/usr/bin/chromium"  # Debian's package; Playwright drives it by executable_path


def browser_available() -> bool:
    """Whether the ``browser`` tests can run: chromium installed, and Playwright."""
    import importlib.util
    import os

    return os.access(CHROMIUM, os.X_OK) and importlib.util.find_spec("playwright") is not None


def pytest_collection_modifyitems(config, items):
    """Deselect the ``browser`` tests where no chromium is installed (CI without it).

    What they check of the SVG in a browser, the structural tests of
    tests/runtime/test_timeline.py check everywhere.
    """
    if browser_available():
        return
    dropped = [item for item in items if item.get_closest_marker("browser") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.get_closest_marker("browser") is None]
