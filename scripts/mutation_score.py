"""Print mutmut's score per file of the recovery core (scripts/mutation.sh calls this).

Usage: python scripts/mutation_score.py [--survivors] PATTERN...

Reads mutmut's results (mutants/**/*.meta) for the mutant names matching the fnmatch
PATTERNs, and prints per file: mutants, killed, survived, not reached by any test, not run
yet, the equivalent mutants listed in docs/testing-the-tests.md, and the kill rate of the
non-equivalent ones. Exits 1 when a mutant survived that the page does not list.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
from pathlib import Path

# mutmut's exit codes: 0 = survived; 5/33 = no test reached the mutant; None = not run yet;
# 2/34 = interrupted/skipped; anything else (1, 3: a test failed; 24, 36, 152...: timeout or
# a signal) = killed.
NOT_KILLED = {None, 0, 2, 5, 33, 34}
UNTESTED = {5, 33}


def equivalent_names(page: Path) -> set[str]:
    """The mutant names that docs/testing-the-tests.md lists as equivalent (in backticks)."""
    if not page.exists():
        return set()
    return set(re.findall(r"`(pytest_agentfaults\.[^`\s]+__mutmut_\d+)`", page.read_text()))


def main(argv: list[str]) -> int:
    """Print the table; 1 when a survivor is not listed as equivalent."""
    show = "--survivors" in argv
    patterns = [arg for arg in argv if not arg.startswith("--")]
    equivalent = equivalent_names(Path("docs/testing-the-tests.md"))
    unexplained: list[str] = []
    totals = [0, 0, 0, 0, 0, 0]
    print(
        f"{'file':48} {'mutants':>7} {'killed':>6} {'surv.':>5} {'equiv.':>6} "
        f"{'no test':>7} {'not run':>7} {'score':>6}"
    )
    for meta in sorted(Path("mutants/src").rglob("*.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        names = [n for n in codes if any(fnmatch.fnmatch(n, p) for p in patterns)]
        if not names:
            continue
        killed = sum(codes[n] not in NOT_KILLED for n in names)
        pending = sum(codes[n] is None for n in names)
        survived = [n for n in names if codes[n] == 0]
        equiv = [n for n in survived if n in equivalent]
        untested = sum(codes[n] in UNTESTED for n in names)
        real = killed + len(survived) - len(equiv) + untested
        score = 100.0 * killed / real if real else 100.0
        name = str(meta.relative_to("mutants/src/pytest_agentfaults")).removesuffix(".meta")
        print(
            f"{name:48} {len(names):7} {killed:6} {len(survived):5} {len(equiv):6} "
            f"{untested:7} {pending:7} {score:5.1f}%"
        )
        row = [len(names), killed, len(survived), len(equiv), untested, pending]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        unexplained += [n for n in survived if n not in equivalent]
        unexplained += [n for n in names if codes[n] in UNTESTED]
    n, killed, survived, equiv, untested, pending = totals
    real = killed + survived - equiv + untested
    score = 100.0 * killed / real if real else 100.0
    print(
        f"{'all':48} {n:7} {killed:6} {survived:5} {equiv:6} {untested:7} {pending:7} {score:5.1f}%"
    )
    if show:
        for name in unexplained:
            print(f"    {name}")
    if unexplained:
        print(
            f"{len(unexplained)} mutant(s) survived that docs/testing-the-tests.md does not "
            "list as equivalent: `.venv/bin/mutmut show NAME` shows one"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
