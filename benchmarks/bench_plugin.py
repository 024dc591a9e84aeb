"""The plugin's own cost, side by side with the same suite under `-p no:agentfaults`, in one run.

Run:  python benchmarks/bench_plugin.py [--instructions]

(``--instructions`` also counts the start-up's instructions under callgrind: valgrind
must be installed, and it adds about two minutes.)

Three figures (issue 15, item 7), each against pytest without the plugin:

- start-up: a session of one plain test, one process per run, with and without the plugin,
  runs alternated in pairs; the median of the pairs' differences is what the plugin adds to
  pytest's start, in wall time and in the child's CPU time (target: at most +40 ms);
- an unmarked test: the per-test protocol time (setup, call, teardown, reports) of 1,000
  plain tests with the plugin over the same without it (target: at most 1.05x);
- a fault-injected test: ``inject_fault`` (a tool fault firing twice) + the ``trace``
  fixture + one agent run, over a plain test without the plugin (target: at most 1.5x).

And one figure that tells the two halves of that test apart: the same agent run with the
tool failing twice written by hand (a tool that raises, a ``VirtualClock`` given to the
agent, the run's own trace), without the plugin. Over a plain test it is what the runtime
costs a test; the fault-injected test over it is what the test kit adds.

The per-test figures are timed in one process (imports done, runs alternated), since a
whole session's wall time is mostly start-up and noise on a shared machine. Each is given
twice: in wall time, and in the CPU time of the thread running the tests, which is what
the plugin costs; on a busy machine the wall figure also counts the time other processes
ran (one run at load 4 read 1.28x for the unmarked test, the next 1.05x, same code).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = 1000
STARTS = 40
REPEATS = 5

PLAIN = """
import pytest

@pytest.mark.parametrize("n", range({count}))
def test_plain(n):
    assert n >= 0
"""

FAULTED = '''
import pytest
import pytest_agentfaults as af

@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    return "page"

@pytest.mark.parametrize("n", range({count}))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_faulted(n, trace):
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
    agent = af.Agent("bot", model=model, tools=[fetch])
    assert agent.run("go").output == "ok"
    assert trace.count("tool.retry") == 2
'''

# The fault-injected test's agent run with its two faults made by hand, for a run without
# the plugin: no marker, no fixture, the run's own trace and a clock of its own.
BY_HAND = '''
import pytest
import pytest_agentfaults as af

calls = [0]

@af.tool
def fetch(url: str) -> str:
    """Fetch a URL."""
    calls[0] += 1
    if calls[0] % 3:  # the first two calls of each test fail
        raise ConnectionError("reset")
    return "page"

@pytest.mark.parametrize("n", range({count}))
def test_by_hand(n):
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("ok")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    result = agent.run("go")
    assert result.output == "ok"
    assert result.trace.count("tool.retry") == 2
'''

INI = """[pytest]
asyncio_default_fixture_loop_scope = function
markers =
    inject_fault: registered here too so the run without the plugin is identical
"""

# The other plugins installed beside this one load in both runs alike; these are off in
# both: hypothesis' costs ~1 s per in-process session whatever the suite, and the three
# peers the test extras install so the kit's own tests can run beside them (reruns,
# timeouts, repeats) add ~225k instructions to every test (+10%, callgrind), which would
# dilute every ratio below with a cost a plain pytest suite does not have.
COMMON = [
    *("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest"),
    *("-p", "no:rerunfailures", "-p", "no:timeout", "-p", "no:repeat"),
]
# For the start-up figure, also off in both runs: the other installed plugins whose own
# start-up is long and varies from run to run (langsmith's alone imports ~0.5 s), which
# made a 2.3 s session whose pairs differed by +-150 ms. Without them the difference of a
# pair is mostly ours. Conservative too: what they import is not there for us to share.
QUIET = [
    *("-p", "no:langsmith_plugin", "-p", "no:faker", "-p", "no:llmock", "-p", "no:benchmark"),
    *("-p", "no:html", "-p", "no:html_fixtures", "-p", "no:metadata", "-p", "no:pytest_cov"),
    *("-p", "no:xdist", "-p", "no:xdist.looponfail"),
]


def start_up(directory: Path) -> dict[str, float]:
    """A one-test session's start, with and without the plugin, in wall and CPU time (s).

    Runs are alternated in pairs (in ABBA order), and each figure is the median over the pairs of the
    difference within a pair: a pair's two runs see the same machine, so a slow spell of
    a shared machine moves both. The CPU time is the child's own (user + system), which a
    neighbour's load does not add to, as it adds to wall time.
    """
    (directory / "test_one.py").write_text(PLAIN.format(count=1))
    command = [sys.executable, "-m", "pytest", "-q", *COMMON, *QUIET, "test_one.py"]
    runs: dict[str, list[float]] = {"on": [], "off": [], "on-cpu": [], "off-cpu": []}
    order = (([], "on"), (["-p", "no:agentfaults"], "off"))
    for pair in range(STARTS):
        # ABBA: which run of a pair goes first alternates, so an order effect (the first
        # run after the other finds the page cache, the CPU's clock, in another state)
        # adds to the 'on' runs of half the pairs and to the 'off' runs of the other half.
        for extra, key in order if pair % 2 == 0 else order[::-1]:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(
                [*command, *extra], cwd=directory, capture_output=True, text=True, check=False
            )
            runs[key].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            runs[key + "-cpu"].append(
                after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            )
            if done.returncode != 0:
                raise SystemExit(f"pytest failed:\n{done.stdout}\n{done.stderr}")
    figures = {key: statistics.median(values) for key, values in runs.items()}
    for suffix in ("", "-cpu"):
        pairs = zip(runs["on" + suffix], runs["off" + suffix], strict=True)
        figures["added" + suffix] = statistics.median(on - off for on, off in pairs)
    return figures


IN_PROCESS = """
import statistics, sys, time, pytest

class ProtocolTimer:
    # Times each test's whole runtest protocol (setup, call, teardown, reports), in wall
    # time and in this thread's CPU time.
    def __init__(self):
        self.total = 0.0
        self.cpu = 0.0
        self.tests = 0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start, cpu = time.perf_counter(), time.thread_time()
        try:
            return (yield)
        finally:
            self.cpu += time.thread_time() - cpu
            self.total += time.perf_counter() - start
            self.tests += 1

common = {common!r} + ["-p", "no:terminal"]
runs = {{
    "plain-on": common + ["test_plain.py"],
    "plain-off": common + ["test_plain.py", "-p", "no:agentfaults"],
    "faulted-on": common + ["test_faulted.py"],
    "by-hand-off": common + ["test_by_hand.py", "-p", "no:agentfaults"],
}}
# warm-up, plain suites first: the unmarked figure is taken in a process where the kit
# was never needed (the faulted suite loads the runtime, after which every test gets one)
for key in ("plain-on", "plain-off"):
    assert pytest.main(runs[key]) == 0
times = {{}}

def timed(key, label):
    timer = ProtocolTimer()
    assert pytest.main(runs[key], plugins=[timer]) == 0
    times.setdefault(label, []).append(timer.total / timer.tests)
    times.setdefault(label + "-cpu", []).append(timer.cpu / timer.tests)

for _ in range({repeats}):
    for key in ("plain-on", "plain-off"):
        timed(key, key)
assert pytest.main(runs["faulted-on"]) == 0  # warm-up: loads the runtime
for _ in range({repeats}):
    timed("faulted-on", "faulted-on")
    timed("by-hand-off", "by-hand-off")
    for key in ("plain-on", "plain-off"):
        timed(key, key + "-after")
for key, values in times.items():
    print(key, statistics.median(values))
"""


def per_test(directory: Path) -> dict[str, float]:
    """Median per-test protocol time (microseconds) of each suite, in one process."""
    (directory / "test_plain.py").write_text(PLAIN.format(count=TESTS))
    (directory / "test_faulted.py").write_text(FAULTED.format(count=TESTS))
    (directory / "test_by_hand.py").write_text(BY_HAND.format(count=TESTS))
    code = IN_PROCESS.format(common=COMMON, repeats=REPEATS)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=directory, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"in-process runs failed:\n{done.stdout}\n{done.stderr}")
    figures = {}
    suites = {
        "plain-on",
        "plain-off",
        "faulted-on",
        "by-hand-off",
        "plain-on-after",
        "plain-off-after",
    }
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key.removesuffix("-cpu") in suites:
            figures[key] = float(value) * 1e6
    return figures


def start_up_instructions(directory: Path) -> tuple[int, int]:
    """The instructions of a one-test session with and without the plugin, under callgrind.

    Deterministic where the timed pairs are not: on this 2-core host, two runs of the same
    code read +44 and -23 ms for what the plugin adds. ~1 minute per run.
    """
    (directory / "test_one.py").write_text(PLAIN.format(count=1))
    command = [sys.executable, "-m", "pytest", "-q", *COMMON, *QUIET, "test_one.py"]
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt install valgrind)")
    counts = []
    for extra in ([], ["-p", "no:agentfaults"]):
        done = subprocess.run(
            [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *command, *extra],
            cwd=directory,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        found = re.search(r"Collected : (\d+)", done.stderr)
        if done.returncode != 0 or found is None:
            raise SystemExit(f"valgrind failed:\n{done.stdout}\n{done.stderr}")
        counts.append(int(found.group(1)))
    return counts[0], counts[1]


def main() -> None:
    instructions = "--instructions" in sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "pytest.ini").write_text(INI)
        starts = start_up(directory)
        counted = start_up_instructions(directory) if instructions else None
        us = per_test(directory)
    print(
        f"start-up: one-test session, {STARTS} pairs of runs, alternated (the other slow"
        " plugins off in both: QUIET)"
    )
    for clock, suffix in (("wall", ""), ("CPU", "-cpu")):
        on, off, added = (starts[key + suffix] for key in ("on", "off", "added"))
        print(
            f"  {clock:4} with the plugin {on * 1000:7.1f} ms, -p no:agentfaults {off * 1000:7.1f} ms"
            f" (medians); the plugin adds {added * 1000:+7.1f} ms (median of the pairs'"
            " differences; target <= +40 ms)"
        )
    if counted is not None:
        on_count, off_count = counted
        # at the pace of the timed runs without the plugin (instructions per ms)
        pace = off_count / (starts["off-cpu"] * 1000)
        print(
            f"  instructions (callgrind) {on_count / 1e6:7.1f} M with the plugin, "
            f"{off_count / 1e6:7.1f} M without: {(on_count - off_count) / 1e6:+.1f} M, "
            f"about {(on_count - off_count) / pace:+.1f} ms at this host's pace"
        )
    for clock, suffix in (("wall", ""), ("CPU", "-cpu")):
        print(
            f"per test: protocol {clock} time, median of {REPEATS} sessions of {TESTS} tests,"
            " one process"
        )
        print_ratios(us, suffix)


def print_ratios(us: dict[str, float], suffix: str) -> None:
    """Print the three per-test ratios of one clock (``suffix``: "" wall, "-cpu" CPU)."""
    on, off = us["plain-on" + suffix], us["plain-off" + suffix]
    print(
        f"  unmarked test  {on:7.1f} us vs {off:7.1f} us plain  {on / off:6.3f}x  (target <= 1.05x)"
    )
    on, off = us["plain-on-after" + suffix], us["plain-off-after" + suffix]
    print(
        f"  unmarked test, runtime loaded {on:7.1f} us vs {off:7.1f} us  {on / off:6.3f}x"
        "  (the kit's state built on its first use of the runtime)"
    )
    on = us["faulted-on" + suffix]
    print(
        f"  fault-injected {on:7.1f} us vs {off:7.1f} us plain  {on / off:6.3f}x  (target <= 1.5x)"
    )
    by_hand = us["by-hand-off" + suffix]
    print(
        f"    of which: the same run, faults by hand, no plugin {by_hand:7.1f} us:"
        f" {by_hand / off:6.3f}x a plain test (the runtime's share); the fault-injected"
        f" test is {on / by_hand:6.3f}x it (the test kit's share)"
    )


if __name__ == "__main__":
    main()
