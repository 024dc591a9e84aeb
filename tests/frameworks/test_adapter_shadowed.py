"""A package of the user's own that bears a framework's name is not that framework.

`agents` (the OpenAI Agents SDK's module) and `mcp` are common names for a project's own
package. The adapters went by the name alone: with such a package imported, every test that
used the kit erred at setup (`ImportError: cannot import name 'tool' from 'agents'`), and
importing it inside a kit test raised out of the user's own ``import`` statement. The
frameworks are told by where their module comes from: the file their distribution
installed.
"""

from __future__ import annotations

import sys
import types

import pytest

from pytest_agentfaults.testing._frameworks import imported_late, install_adapters, not_watched

OWN_PACKAGE = '''
"""The project's own agents, nothing of the OpenAI Agents SDK."""


def plan(goal):
    return f"plan for {goal}"
'''

TESTS = '''
import sys

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

import agents  # the project's own package, imported before the test starts


@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    return agents.plan(url)


def make():
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    return af.Agent("bot", model=model, tools=[fetch])


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_own_agents_package_imported_first(trace):
    assert make().run("go").output == "done"
    assert trace.retries("fetch") == 1


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_own_mcp_package_imported_in_the_body(trace):
    assert "mcp" not in sys.modules
    import mcp  # the project's own MCP servers, arriving while the kit watches

    assert mcp.SERVERS == ["files"]
    assert make().run("go").output == "done"


@pytest.mark.inject_fault(tool="fetsh", raises=ConnectionError("reset"))
def test_an_unfired_fault_names_no_own_package():
    assert make().run("go").output == "done"
'''


def test_a_package_of_the_users_own_under_a_frameworks_name_is_left_alone(
    pytester: pytest.Pytester,
):
    pytester.mkpydir("agents").joinpath("__init__.py").write_text(OWN_PACKAGE)
    pytester.mkpydir("mcp").joinpath("__init__.py").write_text('SERVERS = ["files"]\n')
    pytester.makepyfile(test_own=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)  # the third errs at teardown
    out = result.stdout.str()
    assert "ImportError" not in out
    assert "could not hook" not in out
    # the unfired fault's message tells the truth: no framework was loaded unseen
    assert "fault on tool 'fetsh' never fired" in out
    assert "the fault watches the tools of: af.Agent\n" in out + "\n"
    assert "loaded where the kit could not see it" not in out


def test_the_registry_skips_a_module_that_is_not_the_frameworks(
    monkeypatch: pytest.MonkeyPatch, tmp_path
):
    own = types.ModuleType("agents")
    own.__file__ = str(tmp_path / "agents" / "__init__.py")
    monkeypatch.setitem(sys.modules, "agents", own)
    watched, undo = install_adapters(["agentfaults"])
    try:
        assert "agents" not in watched
        assert "agents" not in imported_late(watched)
        assert "agents" not in not_watched(watched)
    finally:
        undo()


def test_the_registry_and_the_header_know_the_same_frameworks():
    from pytest_agentfaults._framework_files import DISTRIBUTIONS
    from pytest_agentfaults._plugin_adapters import FRAMEWORKS
    from pytest_agentfaults.testing._frameworks import ADAPTERS

    assert DISTRIBUTIONS.keys() == ADAPTERS.keys() == FRAMEWORKS.keys()


def test_the_header_names_no_framework_a_package_of_the_users_own_shadows(tmp_path):
    import subprocess

    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text(OWN_PACKAGE)
    code = (
        "from pytest_agentfaults._plugin_adapters import adapters_header\n"
        "print(adapters_header())\n"
    )
    # `python -c` puts the working directory first on sys.path, as `python -m pytest` does
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert "openai-agents" not in done.stdout
    assert "pydantic-ai" in done.stdout  # the others are still named
