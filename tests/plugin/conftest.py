"""Plugin tests run pytest inside pytest (pytester), the way users meet the plugin."""

from __future__ import annotations

import pytest

AGENT = '''
import asyncio
import pytest
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

CALLS = []

@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    CALLS.append(url)
    return "page"

def make(steps=None, **kw):
    steps = steps or [call_tool("fetch", url="u"), say("done")]
    return af.Agent("bot", model=ScriptedModel(steps), tools=[fetch], **kw)
'''


@pytest.fixture(autouse=True)
def _inner_ini(pytester):
    pytester.makefile(
        ".ini",
        # hypothesis' pytest plugin costs ~1 s per in-process session; no inner test needs it.
        # pytest-rerunfailures, beside xdist, starts a loopback status server per session
        # that it never stops: only the tests of it let it load (test_peer_reruns.py)
        pytest="[pytest]\naddopts = -p no:hypothesispytest -p no:rerunfailures\n"
        "asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n",
    )


@pytest.fixture
def suite(pytester):
    """Write a test module that starts with a small agent (`make()`, tool `fetch`)."""

    def write(body: str):
        pytester.makepyfile(test_suite=AGENT + body)
        return pytester

    return write
