"""README's first fault-injected test runs and passes, as a newcomer would copy it."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).parent.parent.parent / "README.md"


def test_readme_first_test_passes(pytester):
    text = README.read_text()
    block = text.split("## A first fault-injected test")[1].split("```python\n")[1].split("```")[0]
    pytester.makepyfile(test_readme=block)
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["agentfaults: 2 faults injected, 2 retries, 0 fixer calls, 0 escalations"]
    )
