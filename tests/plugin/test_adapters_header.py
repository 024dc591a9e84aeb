"""The header line that says which frameworks' tools ``tool=`` faults reach, and at what version."""

from __future__ import annotations

from importlib import metadata

from pytest_agentfaults._plugin_adapters import adapters_header


def test_each_framework_is_named_by_the_distribution_whose_version_it_shows() -> None:
    header = adapters_header()
    assert header is not None
    # LangChain's adapter hooks langchain-core: its version is shown under its own name,
    # not as "langchain" (a distribution with versions of its own)
    assert f"langchain-core {metadata.version('langchain-core')}" in header
    assert f"pydantic-ai {metadata.version('pydantic-ai-slim')}" in header
    assert f"openai-agents {metadata.version('openai-agents')}" in header
    assert f"mcp {metadata.version('mcp')}" in header
