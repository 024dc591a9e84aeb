"""`ModuleArrival`: code run the moment a watched module is first imported, then gone."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import pytest

from pytest_agentfaults.runtime._arrival import ModuleArrival


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a module on sys.path that nothing has imported yet."""
    name = f"arrival_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def _plain_loader(name: str) -> type:
    """The loader class the import system gives ``name`` with no watch of ours on the path.

    Not always ``SourceFileLoader``: a library may add a path hook of its own for the rest
    of the process (beartype's import hooks, which ``key_value.aio`` of fastmcp installs,
    give ``BeartypeSourceFileLoader``), which made these tests fail after the MCP tests.
    """
    spec = importlib.machinery.PathFinder.find_spec(name)
    assert spec is not None
    return type(spec.loader)


def test_the_module_arrives_once_with_its_own_loader_and_the_watch_ends(fresh_module):
    before = list(sys.meta_path)
    seen = []
    arrival = ModuleArrival([fresh_module], lambda module: seen.append(module.VALUE))
    arrival.start()
    try:
        module = importlib.import_module(fresh_module)
    finally:
        arrival.stop()
    assert seen == [42]  # after the module's own code ran, before the import returned
    assert sys.meta_path == before  # it took itself out once its one name came
    assert type(module.__loader__) is _plain_loader(fresh_module)  # nothing of ours left
    assert type(module.__spec__.loader) is _plain_loader(fresh_module)


def test_two_watches_of_the_same_name_both_see_it_arrive(fresh_module):
    # a fault_scope's virtual time inside a test's: each waits for the module
    seen = []
    outer = ModuleArrival([fresh_module], lambda module: seen.append("outer"))
    inner = ModuleArrival([fresh_module], lambda module: seen.append("inner"))
    outer.start()
    inner.start()
    try:
        module = importlib.import_module(fresh_module)
    finally:
        inner.stop()
        outer.stop()
    assert sorted(seen) == ["inner", "outer"]
    assert type(module.__loader__) is _plain_loader(fresh_module)


def test_other_names_and_missing_modules_pass_through(fresh_module):
    seen = []
    arrival = ModuleArrival([fresh_module, "no_such_module_anywhere"], seen.append)
    arrival.start()
    try:
        assert arrival.find_spec("json") is None  # not watched: one set lookup
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("no_such_module_anywhere")
        assert arrival in sys.meta_path  # still waiting for the other name
        assert importlib.util.find_spec(fresh_module) is not None
    finally:
        arrival.stop()
    arrival.stop()  # twice is once
    assert seen == []  # a spec found but never loaded is no arrival
