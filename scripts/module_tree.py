"""Print the package's module tree, one line per module: its docstring's first sentence.

docs/architecture.md shows this output between its ``<!-- tree -->`` markers, and
tests/test_docs_match_code.py fails when the two differ. Regenerate with:

    python scripts/module_tree.py --write
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "pytest_agentfaults"
PAGE = ROOT / "docs" / "architecture.md"
START, END = "<!-- tree -->\n```text\n", "```\n<!-- /tree -->"
WIDTH = 100


def summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def lines(directory: Path = PACKAGE, depth: int = 1) -> list[str]:
    out: list[str] = []
    files = sorted(
        (p for p in directory.iterdir() if p.suffix == ".py"),
        key=lambda p: (p.name != "__init__.py", p.name),
    )
    for path in files:
        head = f"{'  ' * depth}{path.name}"
        column = max(len(head) + 2, 24)
        wrapped = textwrap.wrap(summary(path), width=WIDTH - column) or [""]
        out.append(f"{head:<{column}}{wrapped[0]}".rstrip())
        out.extend(" " * column + more for more in wrapped[1:])
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and p.name != "__pycache__"):
        out.append(f"{'  ' * depth}{sub.name}/")
        out.extend(lines(sub, depth + 1))
    return out


def tree() -> str:
    return "\n".join(["src/pytest_agentfaults/", *lines()]) + "\n"


def main() -> int:
    if "--write" in sys.argv:
        page = PAGE.read_text(encoding="utf-8")
        before, rest = page.split(START, 1)
        _, after = rest.split(END, 1)
        PAGE.write_text(before + START + tree() + END + after, encoding="utf-8")
    else:
        sys.stdout.write(tree())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
