"""The pre-commit hooks run what CI's lint steps run, on the same directories."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _hooks() -> dict[str, dict]:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def _ci_lint_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    tools = ("ruff check", "ruff format", "mypy", "lint-imports")
    return [line.strip() for line in lines if any(f".venv/bin/{tool}" in line for tool in tools)]


def test_every_lint_step_of_ci_has_a_hook():
    commands = _ci_lint_commands()
    assert len(commands) == 4  # ruff check, ruff format --check, mypy src, lint-imports
    entries = [hook["entry"] for hook in _hooks().values()]
    for command in commands:
        tool = command.split()[0].removeprefix(".venv/bin/")
        words = command.split()[:2] if tool == "ruff" else command.split()[:1]
        assert any(entry.startswith(" ".join(words)) for entry in entries), command


def test_the_ruff_hooks_cover_the_directories_ci_checks():
    ci_dirs = next(set(line.split()[2:]) for line in _ci_lint_commands() if "ruff check" in line)
    for hook in ("ruff", "ruff-format"):
        pattern = re.compile(_hooks()[hook]["files"])
        assert {name for name in ci_dirs if pattern.match(f"{name}/x.py")} == ci_dirs, hook
