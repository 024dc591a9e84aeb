"""The plugin's own cost, side by side with the same suite without it, in one run.

Run:  python benchmarks/bench_plugin.py

A suite of 1,000 tests, each with one inject_fault marker and no agent run, timed with
the plugin and with `-p no:agentfaults` (the marker registered by ini so both runs see the
same collection). Reports the ratio and the plugin's cost per test.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = 1000
REPEATS = 5

MODULE = """
import pytest

@pytest.mark.parametrize("n", range({count}))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), strict=False)
def test_marked(n):
    assert n >= 0
"""

INI = """[pytest]
markers =
    inject_fault: registered here too so the run without the plugin is identical
"""


def run(directory: Path, *extra: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


def measure(count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_suite.py").write_text(MODULE.format(count=count))
        (directory / "pytest.ini").write_text(INI)
        with_plugin, without = [], []
        for _ in range(REPEATS):
            with_plugin.append(run(directory, "test_suite.py"))
            without.append(run(directory, "test_suite.py", "-p", "no:agentfaults"))
    return statistics.median(with_plugin), statistics.median(without)


def main() -> None:
    on, off = measure(TESTS)
    on_big, off_big = measure(3 * TESTS)
    # The slope between 1,000 and 3,000 tests is the per-test cost, without the one-off
    # cost of importing the package at start-up.
    per_test_us = ((on_big - off_big) - (on - off)) / (2 * TESTS) * 1e6
    print(f"median of {REPEATS} runs each, one process per run")
    print(f"  {TESTS} marked tests with the plugin   {on:6.2f} s")
    print(f"  {TESTS} marked tests, -p no:agentfaults {off:6.2f} s")
    print(f"  ratio                                 {on / off:6.2f}x  (target < 1.5x)")
    print(f"  {3 * TESTS} marked tests: {on_big:.2f} s with, {off_big:.2f} s without")
    print(f"  plugin cost per test (slope)          {per_test_us:6.1f} us (target <= 50 us)")
    print(
        f"  one-off start-up cost of the plugin   {(on - off) - per_test_us * TESTS / 1e6:6.2f} s"
    )


if __name__ == "__main__":
    main()
