"""Instructions per test of bench_plugin.py's suites, the test protocols only, under callgrind.

    PYTHONHASHSEED=0 CGCTL=/tmp/libcgctl.so valgrind --tool=callgrind --collect-atstart=no \
        --callgrind-out-file=OUT.%p python benchmarks/callgrind_plugin.py faulted-on 500

runs one warm-up session of the suite (bytecode, the kit's imports, caches), then one
session of N tests in which only each test's runtest protocol (setup, call, teardown,
reports: what bench_plugin.py times) is counted; OUT's ``summary`` over N is the cost of
one test. Collection, start-up and the session's end are left out: counted in, they add
the same to both sides of a ratio and shrink it (a whole-session count read 1.57x for
the fault-injected test where the protocols alone read 1.55x). ``%p``: pytest forks
children that would overwrite the file; the largest one is the session's.

``CGCTL`` is a tiny library of callgrind's client request that toggles collection:

    // cc -O2 -shared -fPIC -o /tmp/libcgctl.so cgctl.c
    #include <valgrind/callgrind.h>
    void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }

Without it every instruction is counted (use the difference of two N then). Add
``--cache-sim=yes --branch-sim=yes --LL=1048576,16,64`` for cache and branch figures.

``--footprint`` measures what ONE test touches: the lines of code and data it reads or
writes, which decide whether a test fits the host's L2 (1 MB a core). Only the middle
test's protocol is simulated, starting with an empty cache, in an LL cache too large to
evict anything, so its LL misses are the distinct 64-byte lines it touches:

    PYTHONHASHSEED=0 CGCTL=/tmp/libcgctl.so valgrind --tool=callgrind --instr-atstart=no \
        --collect-atstart=no --cache-sim=yes --LL=67108864,16,64 \
        --callgrind-out-file=OUT.%p python benchmarks/callgrind_plugin.py faulted-on 100 \
        --footprint

(ILmr + DLmr + DLmw of the largest OUT's ``summary``, times 64 bytes). The library then
also needs ``cg_start`` (``CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT``)
and ``cg_stop`` (``CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS;
CALLGRIND_STOP_INSTRUMENTATION``), as ``callgrind_sdk.py`` uses.
Suites: ``plain-off`` (a plain test, no plugin), ``plain-on`` (the same with the plugin),
``shell-on`` (inject_fault + trace, an empty body: the plugin's own share),
``faulted-on`` (bench_plugin.py's fault-injected test) and ``by-hand-off`` (its agent run
with the faults made by hand, no plugin: the runtime's share).

Why time and instructions disagree (1.55x in instructions, 1.96x timed, 2026-11-27): with
the host's L2 (1 MB a core: ``--LL=1048576,16,64``), a plain test touches about 225 lines
outside it per test, the plugin-only test 1,335, the fault-injected test 6,976: what one
test touches no longer fits in L2, and each test fetches it again from L3 (6,750 more
lines; at an estimated 20 ns each, about the 130 us the instructions leave unexplained).
With a 2 MB LL all three fit (under 250 misses); L1 misses and branch mispredictions per
instruction are the same for the kit's code as for pytest's. So a test's cost grows with
the code and data it touches, not only with its instructions.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_plugin import BY_HAND, COMMON, FAULTED, INI, PLAIN

SHELL = """
import pytest

@pytest.mark.parametrize("n", range({count}))
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2, strict=False)
def test_shell(n, trace):
    assert n >= 0
"""

SUITES = {
    "plain-off": ("test_plain.py", ["-p", "no:agentfaults"]),
    "plain-on": ("test_plain.py", []),
    "shell-on": ("test_shell.py", []),
    "faulted-on": ("test_faulted.py", []),
    "by-hand-off": ("test_by_hand.py", ["-p", "no:agentfaults"]),
}


def _toggle() -> Callable[[], None]:
    path = os.environ.get("CGCTL")
    if not path:
        return lambda: None
    toggle: Callable[[], None] = ctypes.CDLL(path).cg_toggle
    return toggle


class Footprint:
    """Simulates only test ``index``'s protocol, starting from a cold cache."""

    def __init__(self, index: int) -> None:
        lib = ctypes.CDLL(os.environ["CGCTL"])
        self.start: Callable[[], None] = lib.cg_start
        self.stop: Callable[[], None] = lib.cg_stop
        self.index = index
        self.tests = 0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self) -> Generator[None, object, object]:
        chosen = self.tests == self.index
        if chosen:
            self.start()
        try:
            return (yield)
        finally:
            if chosen:
                self.stop()
            self.tests += 1


class Counted:
    """Switches callgrind's collection on for each test's protocol, and off after it."""

    def __init__(self, toggle: Callable[[], None]) -> None:
        self.toggle = toggle
        self.tests = 0

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self) -> Generator[None, object, object]:
        self.toggle()
        try:
            return (yield)
        finally:
            self.toggle()
            self.tests += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("suite", choices=sorted(SUITES))
    parser.add_argument("n", type=int)
    parser.add_argument(
        "--footprint",
        action="store_true",
        help="simulate only the middle test, from a cold cache (see the module's docstring)",
    )
    args = parser.parse_args()
    # One fixed directory, not a random temporary name: paths end up in pytest's strings
    # and dicts, and a random name moved the count by ~10k a test between two runs.
    directory = Path(tempfile.gettempdir()) / f"agentfaults-callgrind-{args.suite}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    try:
        (directory / "pytest.ini").write_text(INI)
        (directory / "test_plain.py").write_text(PLAIN.format(count=args.n))
        (directory / "test_shell.py").write_text(SHELL.format(count=args.n))
        (directory / "test_faulted.py").write_text(FAULTED.format(count=args.n))
        (directory / "test_by_hand.py").write_text(BY_HAND.format(count=args.n))
        os.chdir(directory)
        path, extra = SUITES[args.suite]
        command = [*COMMON, "-p", "no:terminal", path, *extra]
        if not extra:  # as bench_plugin.py: a plain session first, then the suite's own
            assert pytest.main([*COMMON, "-p", "no:terminal", "test_plain.py"]) == 0
        assert pytest.main(command) == 0  # warm-up
        gc.collect()
        counted: Counted | Footprint = (
            Footprint(args.n // 2) if args.footprint else Counted(_toggle())
        )
        assert pytest.main(command, plugins=[counted]) == 0
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(directory, ignore_errors=True)
    counted_tests = 1 if args.footprint else counted.tests
    print(f"{args.suite}: {counted_tests} tests counted")


if __name__ == "__main__":
    main()
