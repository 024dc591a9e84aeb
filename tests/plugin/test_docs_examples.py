"""Every runnable documentation example runs, as a user would paste it.

Every ```python block of every page (docs/ and the README) runs, in one of three ways:

- `<!-- test -->` right before a block: that block alone is a test module, and every test
  it defines must pass;
- `<!-- test-page -->` anywhere in a page: all its blocks, in order, make one test module
  (for pages whose examples build on each other);
- any other block is a script: it runs top to bottom as a module and must not raise. A
  fragment that needs names defined elsewhere gets them from a hidden prelude, an HTML
  comment right before the block: `<!-- prelude` newline, code, newline, `-->`.

A block marked `<!-- fails -->` is a test module whose tests fail on purpose: it runs for
the output shown after it, which every such block must have, and that run must fail. A ```text block marked `<!-- output of FILE: ARGS -->` is
what pytest prints for the page's python block before it, saved as FILE and run with ARGS
(`<!-- output of the examples suite: ARGS -->`: what the repository's examples/ print):
every line of the block, in order, is a line of the real output (leading and trailing
spaces aside), and a `...` line stands for any lines.

Every module runs through pytester, as a user would paste it, and reaches no host but
loopback: a name lookup or a connection elsewhere fails its test (docs_offline/).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
from pathlib import Path

import pytest
from hypothesis import settings

# httpx2 caches httpcore2's exception classes on first use; a fresh httpcore2 imported by
# an in-process inner run would leave that cache pointing at classes nobody raises.
for _module in ("httpcore2", "httpx2", "openai", "anthropic"):
    if importlib.util.find_spec(_module) is not None:
        __import__(_module)

OFFLINE = Path(__file__).parent / "docs_offline"
_spec = importlib.util.spec_from_file_location("docs_offline_guard", OFFLINE / "sitecustomize.py")
assert _spec is not None
assert _spec.loader is not None
offline_guard = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(offline_guard)

ROOT = Path(__file__).parent.parent.parent
DOCS = ROOT / "docs"
BLOCK = re.compile(
    r"(?:<!-- (?P<mark>test|fails) -->\s*|<!-- prelude\n(?P<prelude>.*?)\n-->\s*)?"
    r"^```python\n(?P<code>.*?)\n```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)
PAGE_MARK = "<!-- test-page -->"
OUTPUT = re.compile(
    r"^```python\n(?P<code>(?:(?!^```).)*?)\n```[ \t]*$(?:(?!^```python).)*?"
    r"<!-- output of (?P<file>[\w/.]+): (?P<args>[^\n]*?) -->\s*^```text\n(?P<shown>.*?)\n```",
    re.DOTALL | re.MULTILINE,
)
# the output of the repository's examples/ suite, run with ARGS
SUITE_OUTPUT = re.compile(
    r"<!-- output of the examples suite: (?P<args>[^\n]*?) -->\s*^```text\n(?P<shown>.*?)\n```",
    re.DOTALL | re.MULTILINE,
)
EXAMPLES = ROOT / "examples"
TEST_FUNCTION = re.compile(r"^(?:async )?def test_", re.MULTILINE)
TEST_NAME = re.compile(r"^(?:async )?def (test_\w+)", re.MULTILINE)
FAILS_BLOCK = re.compile(
    r"^<!-- fails -->\n```python\n(?P<code>.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE
)

# Property examples on a page check the docs, not the runtime: a small, derandomized run.
settings.register_profile(
    "docs-examples", max_examples=30, derandomize=True, database=None, deadline=None
)


def pages() -> list[tuple[str, str]]:
    """(name, text) of every page whose python blocks run: docs/ and the README."""
    found = [(str(page.relative_to(DOCS)), page) for page in sorted(DOCS.rglob("*.md"))]
    found.append(("README.md", ROOT / "README.md"))
    return [(name, page.read_text(encoding="utf-8")) for name, page in found]


def examples() -> list[tuple[str, str]]:
    """(where, module) for every test module the pages make; scripts are the other blocks."""
    return [(where, code) for where, code, is_test in _blocks() if is_test]


def scripts() -> list[tuple[str, str]]:
    return [(where, code) for where, code, is_test in _blocks() if not is_test]


def _blocks() -> list[tuple[str, str, bool]]:
    found = []
    for name, text in pages():
        blocks = list(BLOCK.finditer(text))
        if PAGE_MARK in text:
            found.append((name, "\n\n".join(b["code"] for b in blocks), True))
            continue
        for index, block in enumerate(blocks):
            code = block["code"]
            if block["prelude"]:
                code = f"{block['prelude']}\n\n{code}"
            if block["mark"] != "fails":
                found.append((f"{name}#{index + 1}", code, block["mark"] is not None))
    return found


def outputs() -> list[tuple[str, str, str, str, str, bool]]:
    """(where, code, file, args, shown, fails) for every output a page shows for a block.

    ``fails``: the block is marked `<!-- fails -->`, so the run that prints it fails.
    """
    found = []
    for name, text in pages():
        for match in OUTPUT.finditer(text):
            line = text.count("\n", 0, match.start("shown")) + 1
            fails = text[: match.start()].endswith("<!-- fails -->\n")
            found.append(
                (
                    f"{name}:{line}",
                    match["code"],
                    match["file"],
                    match["args"],
                    match["shown"],
                    fails,
                )
            )
    return found


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """Refuse, and note, every name lookup and connection to a host that is not loopback.

    In this process (the in-process pytest runs) and in the pythons it starts (scripts);
    the test calls the returned check after its run: an example that swallowed the
    refusal still fails.
    """
    reached = tmp_path / "reached.txt"
    monkeypatch.setenv("AGENTFAULTS_DOCS_REACHED", str(reached))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(OFFLINE), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setattr(socket, "getaddrinfo", offline_guard._guarded_getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", offline_guard._guarded_connect)

    def check(where: str) -> None:
        __tracebackhide__ = True
        if reached.exists():
            pytest.fail(f"{where}: the example reached for the network:\n{reached.read_text()}")

    return check


def test_there_are_runnable_examples():
    pages = {where.split("#")[0] for where, _ in examples()}
    assert len(examples()) >= 10
    assert {"howto/sdk-clients.md", "howto/property-testing.md", "tutorial.md"} <= pages


def test_every_python_block_of_the_docs_runs():
    # each block is a test module, part of a test page, or a script run below: none is
    # left out (a block the regex missed, e.g. a typo in its marker, fails here)
    on_pages = sum(
        len(re.findall(r"^```python$", text, re.MULTILINE))
        for _, text in pages()
        if PAGE_MARK not in text
    )
    fails = sum(len(FAILS_BLOCK.findall(text)) for _, text in pages())
    single = [where for where, _, _ in _blocks() if "#" in where]
    assert len(single) + fails == on_pages


def test_the_readme_example_runs():
    assert "README.md#1" in {where for where, _ in examples()}


def test_every_failing_block_runs_for_the_output_it_shows():
    # a `<!-- fails -->` block runs only through the output shown after it: without one,
    # nothing would run it, and the page could show a test that does not fail as it says
    shown = {(where.split(":")[0], code) for where, code, *_, fails in outputs() if fails}
    for name, text in pages():
        for block in FAILS_BLOCK.finditer(text):
            assert (name, block["code"]) in shown, (
                f"{name}:{text.count(chr(10), 0, block.start()) + 1}: a <!-- fails --> block "
                "with no <!-- output of FILE: ARGS --> text block after it runs nowhere"
            )


def suite_outputs() -> list[tuple[str, str, str]]:
    """(where, args, shown) for every output a page shows of the examples suite."""
    found = []
    for name, text in pages():
        for match in SUITE_OUTPUT.finditer(text):
            line = text.count("\n", 0, match.start("shown")) + 1
            found.append((f"{name}:{line}", match["args"], match["shown"]))
    return found


def test_every_shown_output_is_checked():
    marked = sum(text.count("<!-- output of ") for _, text in pages())
    assert len(outputs()) + len(suite_outputs()) == marked >= 4


@pytest.mark.parametrize(
    ("where", "code", "file", "args", "shown", "fails"), outputs(), ids=[o[0] for o in outputs()]
)
def test_the_output_a_page_shows_is_what_pytest_prints(
    pytester, offline, where, code, file, args, shown, fails
):
    path = pytester.path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code + "\n", encoding="utf-8")
    result = pytester.runpytest(*args.split(), "-p", "no:randomly")
    offline(where)
    expected_ret = pytest.ExitCode.TESTS_FAILED if fails else pytest.ExitCode.OK
    assert result.ret == expected_ret, (
        f"{where}: the page says this run {'fails' if fails else 'passes'}; pytest exited "
        f"{result.ret!r}\n{result.stdout.str()}"
    )
    _assert_shown(where, shown, result)


@pytest.mark.parametrize(
    ("where", "args", "shown"), suite_outputs(), ids=[o[0] for o in suite_outputs()]
)
def test_the_output_a_page_shows_for_the_examples_suite_is_what_it_prints(
    pytester, offline, where, args, shown
):
    suite = pytester.mkdir("examples")
    for source in sorted(EXAMPLES.glob("*.py")):
        (suite / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest("examples", *args.split(), "-p", "no:randomly")
    offline(where)
    assert result.ret == pytest.ExitCode.OK, f"{where}: the examples suite failed\n{result.stdout}"
    _assert_shown(where, shown, result)


def _assert_shown(where: str, shown: str, result: pytest.RunResult) -> None:
    """Every line of ``shown``, in order, is a line pytest printed; ``...`` is any lines."""
    __tracebackhide__ = True
    actual = [line.strip() for line in result.stdout.lines]
    position = 0
    for expected in (line.strip() for line in shown.splitlines()):
        if expected == "...":
            continue
        assert expected in actual[position:], (
            f"{where}: the page shows a line pytest does not print (in this order):\n"
            f"{expected}\n--- pytest printed:\n{result.stdout.str()}"
        )
        position = actual.index(expected, position) + 1


@pytest.mark.parametrize(("where", "code"), scripts(), ids=[w for w, _ in scripts()])
def test_documented_snippet_runs(pytester, offline, where, code):
    assert not TEST_FUNCTION.search(code), f"{where}: a block with tests needs <!-- test -->"
    pytester.makepyfile(snippet=code)
    result = pytester.runpython(pytester.path / "snippet.py")
    offline(where)
    assert result.ret == 0, f"{where}: the snippet raised\n{result.stderr.str()}"


def _profile_name() -> str:
    """The loaded Hypothesis profile's name (public since a Hypothesis newer than our floor)."""
    public = getattr(settings, "get_current_profile_name", None)
    return public() if public is not None else settings._current_profile


@pytest.mark.parametrize(("where", "code"), examples(), ids=[w for w, _ in examples()])
def test_documented_example_passes(pytester, offline, where, code):
    pytester.makepyfile(test_example=code)
    previous = _profile_name()
    settings.load_profile("docs-examples")
    try:
        result = pytester.runpytest("--strict-markers", "-rA")
    finally:
        settings.load_profile(previous)
    offline(where)
    outcomes = result.parseoutcomes()
    defined = TEST_NAME.findall(code)
    assert defined, f"{where}: the example defines no test"
    twice = sorted({name for name in defined if defined.count(name) > 1})
    assert not twice, f"{where}: {twice} defined twice: only the last one runs"
    passed = set(re.findall(r"^PASSED test_example\.py::(\w+)", result.stdout.str(), re.MULTILINE))
    assert set(defined) <= passed, (
        f"{where}: {sorted(set(defined) - passed)} did not pass\n{result.stdout.str()}"
    )
    for bad in ("failed", "errors", "skipped"):
        assert not outcomes.get(bad), f"{where}: {bad}\n{result.stdout.str()}"
