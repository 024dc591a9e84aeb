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
        if not _installed(module):
            continue
        for distribution in distributions:
            try:
                found.append(f"{shown} {metadata.version(distribution)}")
                break
            except metadata.PackageNotFoundError:
                continue
    if not found:
        return None
    return (
        f"agentfaults: tool faults also reach {', '.join(found)} "
        "(each adapter loads in the tests that import its framework)"
    )


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (nor its parents).

    ``find_spec("a.b")`` would import ``a``: the openai SDK (a quarter of a second) to ask
    for its tool runner, and it raises ModuleNotFoundError, not None, where no ``a`` is
    installed at all. So only the top-level package is looked up, and its submodule is
    looked for in its directories (a namespace package, as ``google``, has several).
    """
    top, _, rest = module.partition(".")
    try:
        spec = util.find_spec(top)
    except (ModuleNotFoundError, ValueError):
        return False
    if spec is None or not rest:
        return spec is not None
    parts = rest.split(".")
    for location in spec.submodule_search_locations or ():
        path = Path(location, *parts)
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return True
    return False
