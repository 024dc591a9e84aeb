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


def test_a_namespace_package_that_is_not_installed_leaves_the_header_alone(monkeypatch) -> None:
    # google-genai's module is google.genai: looking it up imports the parent `google`,
    # which raises where no google package is installed at all (a plain user's venv);
    # `None` in sys.modules is how Python says "not importable", and monkeypatch undoes it
    import sys

    before = adapters_header() or ""
    monkeypatch.delitem(sys.modules, "google.genai", raising=False)
    monkeypatch.setitem(sys.modules, "google", None)
    after = adapters_header() or ""
    assert "google-genai" not in after
    # every other framework is still named, as before
    assert _named(after) == [name for name in _named(before) if not name.startswith("google")]


def _named(header: str) -> list[str]:
    """The frameworks a header names: ``["pydantic-ai 2.68.0", ...]``."""
    listed = header.removeprefix("agentfaults: tool faults also reach ").split(" (each")[0]
    return listed.split(", ") if listed else []


def test_a_submodule_is_looked_up_without_importing_its_package() -> None:
    # the openai SDK's tool runner is a submodule: asking for it must not import openai
    # (a quarter of a second at every session's start) nor anything else of the SDK
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pytest_agentfaults._plugin_adapters import adapters_header\n"
        "header = adapters_header()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'google')))\n"
        "print(header)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, header = done.stdout.splitlines()
    assert imported == "[]"
    assert f"openai's tool runner {metadata.version('openai')}" in header
    assert f"openai's Decisions runner {metadata.version('openai')}" in header
    assert f"google-genai {metadata.version('google-genai')}" in header
