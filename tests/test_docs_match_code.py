"""The docs name what the code has: the fault kinds, with one count everywhere."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_agentfaults.runtime.events import _KNOWN_FIELDS, EVENT_TYPES
from pytest_agentfaults.testing._fault import HTTP_KINDS, LLM_FAULT_KINDS

DOCS = Path(__file__).parent.parent / "docs"


def _table_rows(page: str, first_column: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(rf'^\| `{first_column}"([a-z_]+)"` \|', text, re.MULTILINE)


def test_the_llm_kinds_table_lists_exactly_the_kinds_the_marker_takes():
    rows = _table_rows("testing.md", "")
    assert sorted(rows) == sorted(LLM_FAULT_KINDS)


def test_the_llm_kind_options_in_the_table_are_the_ones_the_marker_takes():
    text = (DOCS / "testing.md").read_text(encoding="utf-8")
    for kind, spec in LLM_FAULT_KINDS.items():
        [row] = [line for line in text.splitlines() if line.startswith(f'| `"{kind}"` |')]
        options_cell = row.split(" | ")[2]
        named = set(re.findall(r"`([a-z_]+)=", options_cell))
        assert named == set(spec.options), (kind, named, spec.options)


def test_no_page_gives_another_count_of_the_llm_kinds():
    count = len(LLM_FAULT_KINDS)
    words = {8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve"}
    for page in [*DOCS.rglob("*.md"), DOCS.parent / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for number, word in words.items():
            if number == count:
                continue
            for claim in (f"{number} `llm=` kinds", f"{word} `llm=` kinds", f"{number} llm kinds"):
                assert claim.lower() not in text.lower(), (page, claim)


def test_every_http_kind_is_documented_on_the_sdk_page():
    text = (DOCS / "howto" / "sdk-clients.md").read_text(encoding="utf-8")
    missing = [kind for kind in HTTP_KINDS if f'"{kind}"' not in text]
    assert not missing, f"docs/howto/sdk-clients.md does not name http= kinds {missing}"


def test_the_architecture_page_lists_every_module_as_the_code_describes_it():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "module_tree", DOCS.parent / "scripts" / "module_tree.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module_tree = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module_tree)
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    shown = page.split(module_tree.START, 1)[1].split(module_tree.END, 1)[0]
    assert shown == module_tree.tree(), "run: python scripts/module_tree.py --write"


def test_the_events_table_lists_every_event_type_in_order():
    text = (DOCS / "testing.md").read_text(encoding="utf-8")
    section = text.split("### The events", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z.]+)` \|", section, re.MULTILINE)
    assert rows == list(EVENT_TYPES)


def test_the_events_table_names_only_fields_events_have():
    text = (DOCS / "testing.md").read_text(encoding="utf-8")
    section = text.split("### The events", 1)[1].split("\n## ", 1)[0]
    # the fields `trace.of()` knows, and http.fault's count of the requests it answered
    fields = _KNOWN_FIELDS | {"occurrence"}
    for row in re.findall(r"^\| `[a-z.]+` \|.*$", section, re.MULTILINE):
        named = set(re.findall(r"`([a-z_]+)`", row.rsplit(" | ", 1)[1]))
        named -= {
            "fixed",
            "unchanged",
            "invalid",
            "failed",
            "error",
            "escalated",
            "ok",
            "max_iterations",
        }
        named -= {"budget_exceeded", "cancelled"}
        assert named <= fields, (row, named - fields)


def test_the_events_table_lists_every_status_a_fixer_result_has():
    from pytest_agentfaults.runtime import _fixers

    source = Path(_fixers.__file__).read_text(encoding="utf-8")
    lines = [line for line in source.splitlines() if re.search(r"\bstatus ?=", line)]
    emitted = {word for line in lines for word in re.findall(r'"([a-z]+)"', line)}
    text = (DOCS / "testing.md").read_text(encoding="utf-8")
    [row] = [line for line in text.splitlines() if line.startswith("| `fixer.result` |")]
    shown = set(re.findall(r'`"([a-z]+)"`', row))
    assert emitted >= {"fixed", "invalid", "escalated"}  # the pattern still reads the code
    assert shown == emitted
