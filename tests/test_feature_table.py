"""docs/features.md names the tests that prove each row: every one of them must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "features.md"


def named_tests() -> list[str]:
    return re.findall(r"`(tests/[\w/]+\.py::\w+)`", PAGE.read_text(encoding="utf-8"))


def test_the_page_names_tests_for_rows_4_14_15_and_17():
    rows = {
        line.split("|")[1].strip(): line
        for line in PAGE.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ")
    }
    for row in ("4", "14", "15", "17"):
        assert "| complete |" in rows[row]
        assert "`tests/" in rows[row]


@pytest.mark.parametrize("test_id", named_tests())
def test_every_named_test_exists(test_id):
    path, name = test_id.split("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), test_id
