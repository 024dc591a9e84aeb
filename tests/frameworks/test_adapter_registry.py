"""Installing the adapters of the frameworks a test process imported, and only those."""

from __future__ import annotations

import sys

import pytest

from pytest_agentfaults.testing._frameworks import ADAPTERS, install_adapters


def test_no_framework_imported_installs_nothing_and_leaves_nothing_to_undo(
    monkeypatch: pytest.MonkeyPatch,
):
    for module in ADAPTERS:
        monkeypatch.delitem(sys.modules, module, raising=False)
    assert install_adapters() == ([], None)
