"""Instructions per agent run of bench_runtime.py's section 1, ours and pydantic-ai's, under callgrind.

    cc -O2 -shared -fPIC -o /tmp/libcgctl.so cgctl.c   # see callgrind_sdk.py's `_controls`
    PYTHONHASHSEED=0 CGCTL=/tmp/libcgctl.so valgrind --tool=callgrind --instr-atstart=no \
        --collect-atstart=no --callgrind-out-file=OUT python benchmarks/callgrind_runtime.py \
        ours-faults 200

runs the scenario ``--warm`` times, then counts N runs only; the summary of OUT.1 (the
dump ``cg_stop`` makes) over N is the instructions of one run. Scenarios: ``ours``, ``ours-faults`` (the tool failing twice,
retried), ``ours-injected`` (the two faults injected by a FaultPlan, events also collected
into a test's trace), ``theirs`` and ``theirs-faults`` (pydantic-ai's `FunctionModel`, the
tool raising ModelRetry twice).

Why: on a shared 2-core host the timed ratios of bench_runtime.py move by a third between
two runs of the same code (71x to 97x for the failing run, 2026-11-28), and the host's
neighbours decide which. Instructions do not move with them; their ratio says what each
side does, and the timed ratio what it costs on this host's caches.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_runtime

SCENARIOS: dict[str, Callable[[], Callable[[], object]]] = {
    "ours": bench_runtime.ours_agent_run,
    "ours-faults": bench_runtime.ours_agent_run_with_faults,
    "ours-injected": bench_runtime.ours_agent_run_with_injected_faults,
    "theirs": bench_runtime.pydantic_ai_agent_run,
    "theirs-faults": bench_runtime.pydantic_ai_agent_run_with_faults,
}


def _controls() -> tuple[Callable[[], None], Callable[[], None]]:
    """Start and stop counting (``cg_start`` / ``cg_stop`` of ``CGCTL``), or nothing."""
    path = os.environ.get("CGCTL")
    if not path:
        return (lambda: None), (lambda: None)
    lib = ctypes.CDLL(path)
    return lib.cg_start, lib.cg_stop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("n", type=int)
    parser.add_argument("--warm", type=int, default=50)
    args = parser.parse_args()
    run = SCENARIOS[args.scenario]()
    for _ in range(args.warm):
        run()
    gc.collect()
    start, stop = _controls()
    start()
    for _ in range(args.n):
        run()
    stop()
    print(f"{args.scenario}: {args.n} runs counted")


if __name__ == "__main__":
    main()
