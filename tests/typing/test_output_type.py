"""`Agent[OutputT]`: ``RunResult.output`` is typed for the type checker, checked with mypy.

The snippet goes through mypy (strict) in the test, so CI catches a regression to ``Any``:
`reveal_type` must show the output type, and assigning it to a wrong type must fail.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

SNIPPET = """
from pydantic import BaseModel

import pytest_agentfaults as af


class Plan(BaseModel):
    steps: list[str]


planner = af.Agent("planner", model="openai:gpt-4o-mini", output_type=Plan)
reveal_type(planner)
reveal_type(planner.run("plan").output)
reveal_type(planner("plan"))
plain = af.Agent("bot")
reveal_type(plain.run("hi").output)
wrong: int = planner.run("plan").output
loose = af.Agent("loose", output_type=int | str)
reveal_type(loose.run("x").output)


async def later() -> None:
    reveal_type((await planner.arun("plan")).output)
"""


def test_run_result_output_has_the_agents_output_type(tmp_path: Path) -> None:
    source = tmp_path / "snippet.py"
    source.write_text(textwrap.dedent(SNIPPET))
    stdout, stderr, _ = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--hide-error-context",
            "--cache-dir",
            str(Path(__file__).parents[2] / ".mypy_cache"),
            str(source),
        ]
    )
    lines = [line.split(": ", 1)[1] for line in stdout.splitlines() if ": " in line]
    revealed = [
        line.removeprefix("note: Revealed type is ").strip('"')
        for line in lines
        if line.startswith("note: Revealed type")
    ]
    agent_type, *outputs = revealed
    assert agent_type.endswith(".Agent[snippet.Plan]"), stdout + stderr
    # run().output, agent(...), a plain agent's str, a union left to Any, arun().output
    assert outputs == ["snippet.Plan", "snippet.Plan", "str", "Any", "snippet.Plan"], stdout
    errors = [line for line in lines if line.startswith("error:")]
    assert errors == [
        'error: Incompatible types in assignment (expression has type "Plan", variable has '
        'type "int")  [assignment]'
    ], stdout + stderr
