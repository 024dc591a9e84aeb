"""The session header naming the agent frameworks whose tools ``tool=`` faults reach.

Light like ``plugin.py``: it looks up what is installed and imports no framework.
"""

from __future__ import annotations

from importlib import metadata, util

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
    """Whether ``module`` can be imported, without importing it.

    ``find_spec("google.genai")`` imports the parent package ``google``, and raises
    ModuleNotFoundError, not None, where no ``google`` package is installed at all.
    """
    try:
        return util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False
