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
asyncio_default_fixture_loop_scope = function
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


IN_PROCESS = """
import statistics, time, pytest

class ProtocolTimer:
    # Times each test's whole runtest protocol (setup, call, teardown, reports).
    def __init__(self):
        self.total = 0.0
        self.tests = 0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            self.total += time.perf_counter() - start
            self.tests += 1

# no:terminal keeps output out of the timing; hypothesis' plugin costs ~1 s per in-process
# session whatever the suite, so it is off in both runs alike.
args = ["-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:hypothesispytest",
        "test_suite.py"]
pytest.main(args)  # warm-up: imports every module once
on, off = [], []
for _ in range({repeats}):
    for extra, bucket in (([], on), (["-p", "no:agentfaults"], off)):
        timer = ProtocolTimer()
        pytest.main(args + extra, plugins=[timer])
        bucket.append(timer.total / timer.tests)
print(statistics.median(on), statistics.median(off))
"""


def per_test_in_process(count: int) -> tuple[float, float]:
    """Per-test protocol time with and without the plugin, in one process, imports done."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_suite.py").write_text(MODULE.format(count=count))
        (directory / "pytest.ini").write_text(INI)
        code = IN_PROCESS.format(repeats=REPEATS)
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=directory, capture_output=True, text=True, check=True
        )
        on, off = (float(x) * 1e6 for x in done.stdout.split()[-2:])
    return on, off


def main() -> None:
    on, off = measure(TESTS)
    protocol_on, protocol_off = per_test_in_process(TESTS)
    per_test_us = protocol_on - protocol_off
    print(f"median of {REPEATS} runs each, one process per run")
    print(f"  {TESTS} marked tests with the plugin   {on:6.2f} s")
    print(f"  {TESTS} marked tests, -p no:agentfaults {off:6.2f} s")
    print(f"  ratio                                 {on / off:6.2f}x  (target < 1.5x)")
    print(
        f"  per-test protocol time: {protocol_on:.1f} us with, {protocol_off:.1f} us without "
        "(one process, runs alternated, imports done)"
    )
    print(f"  plugin cost per test                  {per_test_us:6.1f} us (target <= 50 us)")


if __name__ == "__main__":
    main()
