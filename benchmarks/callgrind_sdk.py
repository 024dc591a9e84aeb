"""Instructions per scenario of bench_sdk_llmock.py's (a) and (d), under callgrind.

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=OUT \
        python benchmarks/callgrind_sdk.py a 210

runs the scenario ``warm`` times (bytecode, caches, the session's client), then N times;
the cost of one scenario is (total(N=210) - total(N=10)) / 200. ``--gc off`` counts with
the garbage collector off after warm-up (steadier; the default keeps it on, as a test has).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sdk_llmock import StubbedSleep, ask, floor_client, ours_scenario

from pytest_agentfaults.testing._sdk_clients import SdkClients


def _controls() -> tuple[object, object]:
    """Start / stop counting: callgrind's client requests from a tiny library (``CGCTL``).

    Built from ``CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION;
    CALLGRIND_TOGGLE_COLLECT`` (start) and ``CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS; CALLGRIND_STOP_INSTRUMENTATION`` (stop); run valgrind with
    ``--instr-atstart=no --collect-atstart=no``, and only the N scenarios are counted.
    Without ``CGCTL`` both do nothing (count everything and subtract two runs instead).
    """
    path = os.environ.get("CGCTL")
    if not path:
        return (lambda: None), (lambda: None)
    lib = ctypes.CDLL(path)
    return lib.cg_start, lib.cg_stop


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["a", "d"])
    parser.add_argument("n", type=int)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--gc", choices=["on", "off"], default="on")
    args = parser.parse_args()
    start, stop = _controls()
    if args.scenario == "a":
        clients = SdkClients()

        def run() -> None:
            ours_scenario(clients)

        for _ in range(args.warm):
            run()
        gc.collect()
        if args.gc == "off":
            gc.disable()
        start()
        for _ in range(args.n):
            run()
        stop()
        clients.close()
    else:
        floor = floor_client()
        with StubbedSleep():
            for _ in range(args.warm):
                ask(floor)
            gc.collect()
            if args.gc == "off":
                gc.disable()
            start()
            for _ in range(args.n):
                ask(floor)
            stop()
        floor.close()


if __name__ == "__main__":
    main()
