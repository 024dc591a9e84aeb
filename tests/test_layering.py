"""Dependency direction: the runtime never loads the test kit's heavy dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

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
