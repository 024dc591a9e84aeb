"""Load the whole package before any test runs.

The package and the plugin load lazily; pytester's in-process runs (``runpytest``) unload
every module the inner session imported, but not a surviving package's attribute for its
submodule, so the next inner run would mix two copies of, say, ``runtime.hooks``. Loading
everything here keeps one copy for the whole session. The laziness itself is tested in a
subprocess (tests/plugin/test_light_plugin.py).
"""

import pytest_agentfaults
import pytest_agentfaults.testing.session

for _name in pytest_agentfaults.__all__:
    getattr(pytest_agentfaults, _name)
