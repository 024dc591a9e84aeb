"""The layout: imports point down the layers, lazy imports say why, files stay small."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("pytest", "_pytest", "respx", "hypothesis", "faker")


def loaded_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return set(json.loads(out))


def test_importing_the_runtime_loads_none_of_the_test_kit_dependencies():
    modules = loaded_after(
        "import pytest_agentfaults.runtime.agent, pytest_agentfaults.runtime.models.openai"
    )
    leaked = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN)
    assert leaked == []


def test_importing_the_package_loads_none_of_them_either():
    modules = loaded_after("import pytest_agentfaults as af; af.Agent; af.ScriptedModel")
    leaked = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN)
    assert leaked == []


def test_the_runtime_does_not_import_the_http_clients_eagerly():
    modules = loaded_after("import pytest_agentfaults")
    assert "httpx" not in modules


# The one function-level import allowed to close a cycle, as pyproject.toml's import-linter
# section names it: the message of a misspelt `fail.<step>` lists the `malformed` steps, and
# `_malformed_steps` imports `fail` for the same message the other way round.
NAMED_LAZY_CYCLE = (
    "pytest_agentfaults.testing._fail_steps",
    "pytest_agentfaults.testing._malformed_steps",
)


def _imports_by_kind(graph, src):
    """(importer, imported, line, kind) of each import: "module", "function" or "typing"."""
    found = []
    for importer in sorted(graph.modules):
        path = src.joinpath(*importer.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        lines = path.read_text().splitlines()
        for imported in graph.find_modules_directly_imported_by(importer):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                number = detail["line_number"]
                kind = "module"
                if lines[number - 1][:1].isspace():
                    # the enclosing top-level statement: `if TYPE_CHECKING:` is for typing
                    top = next(line for line in reversed(lines[:number]) if line[:1].strip())
                    kind = "typing" if "TYPE_CHECKING" in top else "function"
                found.append((importer, imported, number, kind))
    return found


def test_no_function_level_import_dodges_an_import_cycle():
    """An import inside a function is for laziness (a heavy or optional dependency), never
    to break a cycle that a module-level import would make: that cycle is a layering fault
    to mend by moving the shared piece down. Only pyproject.toml's named exception stays."""
    grimp = pytest.importorskip("grimp")
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    eager, lazy = _module_level_graph(grimp, src)
    dodging = sorted(
        f"{importer}:{line} imports {imported}"
        for importer, imported, line in lazy
        if (importer, imported) != NAMED_LAZY_CYCLE
        and eager.chain_exists(importer=imported, imported=importer)
    )
    assert dodging == []
    assert len(lazy) > 10  # the scan saw the package's lazy imports: it can fail
    pyproject = (src.parent / "pyproject.toml").read_text()
    assert all(name.rsplit(".", 1)[1] in pyproject for name in NAMED_LAZY_CYCLE)


def test_contributing_draws_the_layers_of_the_contract_in_order():
    import fnmatch
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    (layers,) = (
        contract["layers"]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    )
    drawing = (root / "CONTRIBUTING.md").read_text().split("```text", 1)[1].split("```", 1)[0]

    # the drawing names a module `name.py`, a package `name/`, a family `_plugin_*.py`
    entries = [(m.start(), m.group()) for m in re.finditer(r"[\w*]+(?:\.py|/)", drawing)]

    def place(module: str) -> int:
        name = module.strip().removeprefix("pytest_agentfaults.")
        package = (root / "src" / "pytest_agentfaults" / name).is_dir()
        shown = f"{name}/" if package else f"{name}.py"
        return next((at for at, entry in entries if fnmatch.fnmatchcase(shown, entry)), -1)

    places = [[place(m) for m in layer.split(":")] for layer in layers]
    assert all(place >= 0 for layer in places for place in layer), (layers, places)
    assert [min(layer) for layer in places] == sorted(min(layer) for layer in places)


def _module_level_graph(grimp, src):
    """The graph of module-level imports only (what importing a module really runs), and
    the (importer, imported, line) of every import inside a function."""
    graph = grimp.build_graph("pytest_agentfaults", cache_dir=None)
    imports = _imports_by_kind(graph, src)
    at_module_level = {(a, b) for a, b, _, kind in imports if kind == "module"}
    for importer, imported, _, _ in imports:
        if (importer, imported) not in at_module_level:
            graph.remove_import(importer=importer, imported=imported)
    return graph, [(a, b, line) for a, b, line, kind in imports if kind == "function"]


def test_no_function_level_import_is_of_a_module_already_loaded_with_its_importer():
    """A function-level import is lazy only if its module is not loaded anyway: not by the
    importer's own module-level imports, nor, in the plugin, by the pytest11 entry point
    that loads the importer at start-up. Otherwise it only hides a dependency."""
    grimp = pytest.importorskip("grimp")
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    graph, lazy = _module_level_graph(grimp, src)
    entry = "pytest_agentfaults.plugin"
    at_start = {entry} | graph.find_upstream_modules(entry)
    pointless = sorted(
        f"{importer}:{line} imports {imported}"
        for importer, imported, line in lazy
        if imported in graph.find_upstream_modules(importer)
        or (importer in at_start and imported in at_start)
    )
    assert pointless == []


def _function_level_imports(src):
    """(path, line number, the statement's first line, the line above) of each import
    inside a function or method in ``src``."""
    import ast

    found = []
    for path in sorted(src.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Import | ast.ImportFrom):
                        number = inner.lineno
                        found.append((path, number, lines[number - 1], lines[number - 2]))
    return sorted(set(found))


def test_every_function_level_import_says_why_it_is_lazy():
    """CONTRIBUTING: an import inside a function is for laziness and says why, on its line
    (``# noqa: PLC0415 - <reason>``) or in a ``# lazy: <reason>`` comment just above;
    a bare "lazy" names no reason. Imports on consecutive lines share the first one's."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    imports = _function_level_imports(src)
    reason = re.compile(r"PLC0415\s*(?:-|#\s*lazy:)\s*(?!lazy\s*$)(\S.*)")
    explained: set[tuple[Path, int]] = set()
    unexplained = []
    for path, number, line, above in imports:
        if (
            reason.search(line)
            or re.match(r"\s*# lazy: \S", above)
            or (path, number - 1) in explained
        ):
            explained.add((path, number))
        else:
            unexplained.append(f"{path.relative_to(src)}:{number}: {line.strip()}")
    assert unexplained == []
    assert len(imports) > 40  # the scan saw the package's lazy imports: it can fail


def test_every_module_of_the_package_is_in_a_layer_of_the_contract():
    """import-linter checks only the modules a layer names: a helper left out of every
    layer (a `_plugin_*` module imported from the runtime, say) would go unchecked."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    (layers,) = (
        contract["layers"]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    )
    named = {m.strip() for layer in layers for m in layer.replace("|", ":").split(":")}
    package = root / "src" / "pytest_agentfaults"
    top = {f"pytest_agentfaults.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__"}
    top |= {f"pytest_agentfaults.{p.parent.name}" for p in package.glob("*/__init__.py")}
    assert sorted(top - named) == []
    assert sorted(named - top) == []  # and every module a layer names exists


def test_no_source_file_is_over_500_lines():
    """CONTRIBUTING: files stay around 400 lines, 500 at most (issue 15's rooms)."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    sizes = {p: len(p.read_text().splitlines()) for p in src.rglob("*.py")}
    assert len(sizes) > 100
    assert {str(p.relative_to(src)): n for p, n in sizes.items() if n > 500} == {}


def test_every_module_with_code_hides_its_frames_from_pytest():
    """CONTRIBUTING: a module-level ``__tracebackhide__ = True``, which pytest reads from a
    frame's globals, so no frame of the package shows in a user's failure."""
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    missing = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text())
        has_code = any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for node in tree.body
        )
        hides = any(
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__tracebackhide__"]
            and getattr(node.value, "value", None) is True
            for node in tree.body
        )
        if has_code and not hides:
            missing.append(str(path.relative_to(src)))
    assert missing == []


def test_no_function_level_import_of_the_stdlib_or_a_library_is_loaded_anyway():
    """The same for other packages: a module that importing the importer already loads
    (with pytest first, for the plugin's modules, which only ever run under pytest)."""
    import ast
    import json
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src"
    # per importer: (what the statement imports, the module it reads a name from or None)
    statements: dict[str, set[tuple[str, str | None]]] = {}
    for path in src.rglob("*.py"):
        module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found = {(alias.name, None) for alias in inner.names}
                elif isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                    found = {(f"{inner.module}.{a.name}", inner.module) for a in inner.names}
                else:
                    continue
                found = {f for f in found if not f[0].startswith("pytest_agentfaults")}
                statements.setdefault(module, set()).update(found)
    statements = {module: found for module, found in statements.items() if found}
    assert len(statements) > 5
    # `from a import b` is lazy if `a` is not loaded yet, or `b` is a submodule not loaded yet
    check = (
        "import importlib.util, json, sys; loaded = set(sys.modules); print(json.dumps(["
        "name for name, parent in {pairs} if (name in loaded if parent is None else "
        "parent in loaded and (name in loaded or importlib.util.find_spec(parent) is None "
        "or not hasattr(sys.modules[parent], '__path__') "
        "or importlib.util.find_spec(name) is None))]))"
    )
    loaded_anyway = []
    for module, found in sorted(statements.items()):
        plugin = module.split(".")[-1].startswith(("plugin", "_plugin"))
        code = ("import pytest; " if plugin else "") + f"import {module}; "
        code += check.format(pairs=sorted(found, key=str))
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout
        loaded_anyway += [f"{module} imports {name}" for name in json.loads(out)]
    assert loaded_anyway == []
