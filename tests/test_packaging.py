"""The public surface: __all__ sorted and complete, version from metadata, py.typed."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import inspect
import re
import typing
from pathlib import Path

import pytest

import pytest_agentfaults as af
import pytest_agentfaults.runtime as runtime
import pytest_agentfaults.testing as testing


@pytest.mark.parametrize("module", [af, testing])
def test_all_is_sorted(module):
    assert module.__all__ == sorted(module.__all__)


@pytest.mark.parametrize("name", ["strategies", "fakes"])
def test_a_module_documented_whole_exports_only_names_with_docstrings(name):
    # the reference renders these modules by their __all__ (`::: pytest_agentfaults.<name>`)
    module = importlib.import_module(f"pytest_agentfaults.{name}")
    assert module.__all__
    test_every_name_in_all_exists_and_is_documented(module)


@pytest.mark.parametrize("module", [af, testing])
def test_every_name_in_all_exists_and_is_documented(module):
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_everything_the_kit_exports_is_the_same_object_at_the_top():
    for name in testing.__all__:
        assert getattr(testing, name) is getattr(af, name)


def test_the_runtime_package_is_no_second_public_surface():
    assert not hasattr(runtime, "__all__")
    names = [n for n, v in vars(runtime).items() if not n.startswith("_")]
    assert [n for n in names if not inspect.ismodule(getattr(runtime, n))] == []


def _string_annotated(value):
    return any(isinstance(h, str) for h in vars(value).get("__annotations__", {}).values())


def test_every_public_function_and_class_shows_its_public_path():
    for name in af.__all__:
        value = getattr(af, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)) or value.__name__ != name:
            continue
        if inspect.isclass(value) and _string_annotated(value):
            continue  # see the next test
        assert value.__module__ == "pytest_agentfaults", name
        assert getattr(af, value.__qualname__) is value  # pickle finds it there


def test_publishing_never_breaks_type_hints():
    # get_type_hints resolves a class's string annotations in sys.modules[cls.__module__]
    # (a function's in its __globals__): a published class must have none left to resolve
    for name in af.__all__:
        value = getattr(af, name)
        if inspect.isclass(value) and value.__module__ == "pytest_agentfaults":
            typing.get_type_hints(value)


def test_the_clear_names_are_the_contract_names_objects():
    assert af.RunUsage is af.Usage
    assert af.RequestUsage is af.TokenUsage
    assert af.TracedError is af.ErrorRecord
    assert af.Classification is af.ErrorInfo
    assert af.RunLoop is af.Loop
    assert af.ScriptStep is af.Step


def test_public_names_of_the_top_level_are_all_in_all():
    public = {n for n in dir(af) if not n.startswith("_")}
    modules = {n for n in public if inspect.ismodule(getattr(af, n))}
    assert public - modules - {"annotations", "importlib", "TYPE_CHECKING", "Any"} <= set(
        af.__all__
    )


def test_version_equals_the_installed_metadata():
    assert af.__version__ == importlib.metadata.version("pytest-agentfaults")


def test_package_is_typed():
    assert importlib.resources.files("pytest_agentfaults").joinpath("py.typed").is_file()


def test_plugin_entry_point_is_registered():
    points = importlib.metadata.entry_points(group="pytest11")
    assert any(p.name == "agentfaults" and p.value == "pytest_agentfaults.plugin" for p in points)


def _readme_commands() -> list[str]:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = text.split("```bash\n")[1:]
    return [block.split("\n```")[0].strip() for block in blocks]


def test_readme_gives_exactly_two_setup_commands_and_ci_runs_them():
    from pathlib import Path

    commands = _readme_commands()
    assert len(commands) == 2
    ci = (Path(__file__).parent.parent / ".ci" / "run").read_text()
    for command in commands:
        assert command.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && ")
        run = command.split(" && ")[-1]
        assert run in ci.splitlines(), f"CI does not run README's command: {run}"


REFERENCE = Path(__file__).parent.parent / "docs" / "reference.md"


def test_the_reference_documents_exactly_all():
    text = REFERENCE.read_text()
    targets = re.findall(r"^::: (\S+)$", text, flags=re.MULTILINE)
    documented = {t.removeprefix("pytest_agentfaults.") for t in targets}
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \|$", text, flags=re.MULTILINE)
    twins = {twin for twin, _ in rows}
    optional = {"strategies", "fakes"}  # modules of their own, documented whole
    assert len(targets) == len(set(targets)), "a name is documented twice"
    assert optional <= documented, "a public module has no `::: pytest_agentfaults.<module>`"
    assert (documented - optional) | twins | {"__version__"} == set(af.__all__)
    # a clear name's row points at the documented name of the same object
    assert all(name in documented and getattr(af, twin) is getattr(af, name) for twin, name in rows)
    # one public path: nothing is documented through a private module
    assert all(t.count(".") == 1 for t in targets), targets


def test_a_name_follows_its_module_when_that_module_is_imported_again(monkeypatch):
    # pytester's in-process runs unload the modules a run imported: the next `af.X` must
    # be the class of the module loaded now, not the one `af` found before
    import sys

    before = af.ScriptedModel
    name = before.__module__ if before.__module__ != "pytest_agentfaults" else None
    module = name or "pytest_agentfaults.testing.scripted"
    monkeypatch.delitem(sys.modules, module)
    again = importlib.import_module(module)  # a fresh module object, a new class
    assert again.ScriptedModel is not before
    assert af.ScriptedModel is again.ScriptedModel
    assert af.ScriptedModel.__module__ == "pytest_agentfaults"  # published again


def test_a_name_shows_a_monkeypatched_attribute_of_its_module(monkeypatch):
    import sys

    af.say  # noqa: B018 - found once, so the next reads take the fast path
    sentinel = object()
    monkeypatch.setattr(sys.modules["pytest_agentfaults.testing.steps"], "say", sentinel)
    assert af.say is sentinel
    monkeypatch.undo()
    assert af.say is not sentinel


def test_the_docs_import_public_names_through_their_public_path():
    public_modules = {"pytest_agentfaults", "pytest_agentfaults.testing"} | {
        f"pytest_agentfaults.{name}" for name in ("strategies", "fakes")
    }
    docs = Path(__file__).parent.parent / "docs"
    pages = [*sorted(docs.rglob("*.md")), docs.parent / "README.md"]
    statement = re.compile(
        r"^\s*from (pytest_agentfaults[\w.]*) import (?:\(([^)]*)\)|([\w, ]+)$)", re.MULTILINE
    )
    leaks = []
    for page in pages:
        for module, grouped, names in statement.findall(page.read_text()):
            if module in public_modules:
                continue
            imported = {n.strip() for n in (grouped or names).split(",") if n.strip()}
            leaks += [f"{page.name}: from {module} import {n}" for n in sorted(imported)]
    assert leaks == []
