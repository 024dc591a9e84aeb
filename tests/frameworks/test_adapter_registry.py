"""Installing the adapters of the frameworks a test process imported, and only those."""

from __future__ import annotations

import sys

import pytest

from pytest_agentfaults.testing._frameworks import ADAPTERS, install_adapters


def test_no_framework_imported_installs_nothing_and_its_undo_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
):
    for module in ADAPTERS:
        monkeypatch.delitem(sys.modules, module, raising=False)
    before = list(sys.meta_path)
    watched, undo = install_adapters()
    assert watched == []
    assert len(sys.meta_path) == len(before) + 1  # watching for the frameworks to arrive
    undo()
    assert sys.meta_path == before  # ... until the undo


UNDECLARED = '''
import pytest
from langchain_core.tools import BaseTool, tool

import pytest_agentfaults as af

ORIGINAL_RUN = BaseTool.__dict__["run"]


@tool
def search(q: str) -> str:
    """Search."""
    return "found " + q


def test_a_uses_the_kit(faults):
    faults.tool("search").raises(ConnectionError("reset")).times(1)
    assert BaseTool.__dict__["run"] is not ORIGINAL_RUN  # the adapter is on
    with pytest.raises(ConnectionError):
        search.invoke({"q": "x"})


def test_b_does_not_use_the_kit():
    # the runtime is loaded by now, yet this test says nothing of the kit: untouched
    assert BaseTool.__dict__["run"] is ORIGINAL_RUN


def test_c_a_fault_scope_installs_the_adapters_for_its_block():
    with af.fault_scope() as scope:
        scope.faults.tool("search").raises(ConnectionError("down")).times(1)
        with pytest.raises(ConnectionError):
            search.invoke({"q": "x"})
        assert search.invoke({"q": "x"}) == "found x"
    assert BaseTool.__dict__["run"] is ORIGINAL_RUN
'''


def test_a_test_that_does_not_use_the_kit_gets_no_adapter(pytester):
    pytest.importorskip("langchain_core")
    pytester.makepyfile(test_undeclared=UNDECLARED)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
