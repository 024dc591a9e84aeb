"""The session header naming the agent frameworks whose tools ``tool=`` faults reach.

Light like ``plugin.py``: it looks up what is installed and imports no framework.
"""

from __future__ import annotations

from importlib import metadata, util
from pathlib import Path

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORKS", "adapters_header"]

# The frameworks whose tools ``tool=`` faults reach: top-level module -> (the name the
# header shows, the distributions that provide it). Kept here, not in the kit's adapter
# registry (testing._frameworks), so the header loads none of the kit.
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pydantic_ai": ("pydantic-ai", ("pydantic-ai-slim", "pydantic-ai")),
    "langchain_core": ("langchain-core", ("langchain-core",)),
    "agents": ("openai-agents", ("openai-agents",)),
    "mcp": ("mcp", ("mcp",)),
    "anthropic": ("anthropic", ("anthropic",)),
    "google.genai": ("google-genai", ("google-genai",)),
    "openai.lib.responses_tool_runner": ("openai's tool runner", ("openai",)),
    "openai.lib.decisions_tool_runner": ("openai's Decisions runner", ("openai",)),
}


def adapters_header() -> str | None:
    """``agentfaults: tool faults also reach pydantic-ai 2.68.0, ...``: None if none installed.

    Says which frameworks' tools the adapters can reach in this environment; an adapter
    loads in a test only once the test process has imported its framework. Looks up what is
    installed without importing any framework.
    """
    found = []
    for module, (shown, distributions) in FRAMEWORKS.items():
        origin = _installed(module)
        if origin is None:
            continue
        for name in distributions:
            try:
                distribution = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                continue
            if _ships(distribution, module, origin):
                found.append(f"{shown} {distribution.version}")
            break
    if not found:
        return None
    return (
        f"agentfaults: tool faults also reach {', '.join(found)} "
        "(each adapter loads in the tests that import its framework)"
    )


def _installed(module: str) -> str | None:
    """Where ``module`` would be imported from (``""``: no file), without importing it.

    None if it cannot be imported. ``find_spec("a.b")`` would import ``a``: the openai SDK
    (a quarter of a second) to ask for its tool runner, and it raises ModuleNotFoundError,
    not None, where no ``a`` is installed at all. So only the top-level package is looked
    up, and its submodule is looked for in its directories (a namespace package, as
    ``google``, has several).
    """
    top, _, rest = module.partition(".")
    try:
        spec = util.find_spec(top)
    except (ModuleNotFoundError, ValueError):
        return None
    if spec is None or not rest:
        return None if spec is None else spec.origin or ""
    parts = rest.split(".")
    for location in spec.submodule_search_locations or ():
        path = Path(location, *parts)
        for file in (path.with_suffix(".py"), path / "__init__.py"):
            if file.is_file():
                return str(file)
    return None


def _ships(distribution: metadata.Distribution, module: str, origin: str) -> bool:
    """Whether ``origin`` is the file of ``module`` that ``distribution`` installed.

    Not so for a project's own package under a framework's name (``agents``, ``mcp``),
    which shadows the framework's. A distribution that keeps no file beside its metadata
    (an editable install) is trusted by the name, as the kit's adapter registry does
    (``testing._frameworks._is_framework``).
    """
    relative = module.replace(".", "/")
    for candidate in (f"{relative}/__init__.py", f"{relative}.py"):
        path = Path(str(distribution.locate_file(candidate)))
        if path.is_file():
            return bool(origin) and Path(origin).resolve() == path.resolve()
    return True
