"""The session header naming the agent frameworks whose tools ``tool=`` faults reach.

Light like ``plugin.py``: it looks up what is installed and imports no framework.
"""

from __future__ import annotations

from importlib import util
from pathlib import Path

from pytest_agentfaults._framework_files import distribution_of, ships

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["FRAMEWORKS", "adapters_header"]

# The frameworks whose tools ``tool=`` faults reach: module -> the name the header shows
# (the distributions that install them: `_framework_files`, light too). Kept here, not in
# the kit's adapter registry (testing._frameworks), so the header loads none of the kit.
FRAMEWORKS: dict[str, str] = {
    "pydantic_ai": "pydantic-ai",
    "langchain_core": "langchain-core",
    "agents": "openai-agents",
    "mcp": "mcp",
    "anthropic": "anthropic",
    "google.genai": "google-genai",
    "openai.lib.responses_tool_runner": "openai's tool runner",
    "openai.lib.decisions_tool_runner": "openai's Decisions runner",
}


def adapters_header() -> str | None:
    """``agentfaults: tool faults also reach pydantic-ai 2.68.0, ...``: None if none installed.

    Says which frameworks' tools the adapters can reach in this environment; an adapter
    loads in a test only once the test process has imported its framework. Looks up what is
    installed without importing any framework.
    """
    found = []
    for module, shown in FRAMEWORKS.items():
        origin = _installed(module)
        if origin is None:
            continue
        distribution = distribution_of(module)
        if distribution is not None and ships(distribution, module, origin):
            found.append(f"{shown} {distribution.version}")
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
