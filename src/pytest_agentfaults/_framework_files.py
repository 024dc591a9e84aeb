"""Which distribution installs each agent framework the adapters hook, and whose a module is.

One home for what both readers need: the session header (`_plugin_adapters`, light: it
imports no framework and none of the kit) and the adapter registry (`testing._frameworks`,
which hooks only the framework's own module). ``agents`` and ``mcp`` are common names for
a project's own package, which shadows the framework's on ``sys.path``: the framework's
module is the file its distribution installed. Standard library only.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["DISTRIBUTIONS", "distribution_of", "ships"]

#: framework module -> the distributions that install it, the first found wins
DISTRIBUTIONS: Final[dict[str, tuple[str, ...]]] = {
    "pydantic_ai": ("pydantic-ai-slim", "pydantic-ai"),
    "langchain_core": ("langchain-core",),
    "agents": ("openai-agents",),
    "mcp": ("mcp",),
    "anthropic": ("anthropic",),
    "google.genai": ("google-genai",),
    "openai.lib.responses_tool_runner": ("openai",),
    "openai.lib.decisions_tool_runner": ("openai",),
}


def distribution_of(module: str) -> metadata.Distribution | None:
    """The installed distribution of the framework ``module`` belongs to, if any."""
    for name in DISTRIBUTIONS[module]:
        try:
            return metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def ships(distribution: metadata.Distribution, module: str, file: str | None) -> bool:
    """Whether ``file`` is the file of ``module`` that ``distribution`` installed.

    Not so for a project's own package under the framework's name. A distribution that
    keeps no file beside its metadata (an editable install) is trusted by the name.
    """
    relative = module.replace(".", "/")
    for candidate in (f"{relative}/__init__.py", f"{relative}.py"):
        path = Path(str(distribution.locate_file(candidate)))
        if path.is_file():
            return bool(file) and Path(str(file)).resolve() == path.resolve()
    return True
