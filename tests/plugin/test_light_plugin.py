"""The plugin is light: importing it loads the stdlib and pytest only, and a test that does
not use the kit pays for nothing of it (issue 15, item 7)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pydantic", "pydantic_core", "httpx", "httpx2", "respx", "hypothesis", "faker")


def loaded_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out))


def test_importing_the_entry_point_loads_only_the_stdlib_and_pytest():
    modules = loaded_after("import pytest_agentfaults.plugin")
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    ours = sorted(m for m in modules if m.startswith("pytest_agentfaults"))
    assert ours == [
        "pytest_agentfaults",
        "pytest_agentfaults._framework_files",
        "pytest_agentfaults._network_policy",
        "pytest_agentfaults._plugin_adapters",
        "pytest_agentfaults._plugin_coverage",
        "pytest_agentfaults._plugin_end",
        "pytest_agentfaults._plugin_fixtures",
        "pytest_agentfaults._plugin_given",
        "pytest_agentfaults._plugin_hooks",
        "pytest_agentfaults._plugin_names",
        "pytest_agentfaults._plugin_network",
        "pytest_agentfaults._plugin_options",
        "pytest_agentfaults._plugin_paths",
        "pytest_agentfaults._plugin_peers",
        "pytest_agentfaults._plugin_report",
        "pytest_agentfaults._plugin_scopes",
        "pytest_agentfaults._plugin_secrets",
        "pytest_agentfaults._plugin_state",
        "pytest_agentfaults._plugin_totals",
        "pytest_agentfaults._plugin_unrewritten",
        "pytest_agentfaults.plugin",
    ]


def test_the_lazy_package_still_lists_and_resolves_every_name():
    import pytest_agentfaults as af

    assert af.__all__ == sorted(af.__all__)
    assert set(af.__all__) <= set(dir(af))
    for name in af.__all__:
        assert getattr(af, name) is not None, name
    with pytest.raises(AttributeError, match="no_such_name"):
        af.no_such_name  # noqa: B018


UNTOUCHED = """
import sys

def test_plain():
    assert "pytest_agentfaults.runtime.clock" not in sys.modules
    assert "pytest_agentfaults.testing.session" not in sys.modules
"""


def test_a_test_that_does_not_use_the_kit_loads_none_of_it(pytester: pytest.Pytester):
    pytester.makepyfile(test_untouched=UNTOUCHED)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


LAZY_IMPORT = """
import pytest_agentfaults as af

def test_agent_built_in_the_body_waits_on_the_virtual_clock():
    from pytest_agentfaults.runtime.clock import default_clock

    assert isinstance(default_clock(), af.VirtualClock)
"""


def test_a_module_holding_the_lazy_package_still_gets_the_virtual_clock(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_lazy=LAZY_IMPORT)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


LATE_FIXTURE = """
import sys

def test_asks_late(request):
    assert "pytest_agentfaults.testing.session" not in sys.modules
    trace = request.getfixturevalue("trace")
    assert trace.events == []
    from pytest_agentfaults.runtime.clock import VirtualClock, default_clock

    assert isinstance(default_clock(), VirtualClock)

def test_once_the_runtime_is_loaded_every_test_gets_the_kit():
    # any agent could now be built with clock=None: it must wait on virtual time
    from pytest_agentfaults.runtime.clock import VirtualClock, default_clock

    assert isinstance(default_clock(), VirtualClock)
"""


def test_a_kit_fixture_asked_for_late_switches_the_kit_on(
    pytester: pytest.Pytester,
):
    pytester.makepyfile(test_late=LATE_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


LOADERS = """
import sys

import pytest_agentfaults as af


def test_loaders():
    af.Agent  # the runtime, loaded now: after the plugin's start
    import pytest_agentfaults.testing.faults

    names = ("pytest_agentfaults.runtime.agent", "pytest_agentfaults.testing.faults")
    for name in names:
        loader = type(sys.modules[name].__loader__).__name__
        assert loader != "AssertionRewritingHook", name
    assert type(sys.modules["test_loaders"].__loader__).__name__ == "AssertionRewritingHook"
"""


def test_the_kit_loaded_in_a_session_is_not_assert_rewritten(pytester: pytest.Pytester):
    # pytest marks a plugin's whole distribution for assertion rewriting, which reads and
    # compiles each module's source again whenever it cannot keep its own cache (under
    # PYTHONDONTWRITEBYTECODE, common in containers: ~0.5 s a session). The kit's asserts
    # are internal checks; only the user's modules need rewriting.
    pytester.makepyfile(test_loaders=LOADERS)
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)


START_LOADERS = """
import sys


def test_start_loaders():
    ours = sorted(
        name
        for name in sys.modules
        if name.startswith("pytest_agentfaults.")
        and type(sys.modules[name].__loader__).__name__ == "AssertionRewritingHook"
    )
    # at most the entry point, and the module it imports first, which unmarks the rest:
    # pytest 9 loads them through its rewriter before the package can say no (pytest 8
    # marks neither)
    assert set(ours) <= {"pytest_agentfaults._plugin_unrewritten", "pytest_agentfaults.plugin"}
    assert "pytest_agentfaults._plugin_state" in sys.modules  # loaded at the start
"""


def test_the_modules_the_plugin_starts_with_are_not_assert_rewritten(pytester: pytest.Pytester):
    # Without its cache (a fresh container, PYTHONDONTWRITEBYTECODE), the rewriter compiles
    # the source of every module it loads, in every session and xdist worker: the ~20
    # modules of the plugin's start cost +78 ms of a one-test session that way.
    pytester.makepyfile(test_start_loaders=START_LOADERS)
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)
