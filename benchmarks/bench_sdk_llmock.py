"""The official openai SDK against 503, 503, then 200, verdict included: agentfaults vs llmock.

Side by side in ONE process, the same SDK and the same scenario, each scenario costed as
one test costs it (set the faults up, ask, judge, tear down):

(a) agentfaults: the client the ``openai_client`` fixture gives (the session's client,
    put back as built for the test), a fresh fault plan with two 503 faults and an
    ``http_faults`` route for the 200, all in-process; the SDK's two backoff waits on the
    virtual clock; then the verdict (``trace.verdict()``).
(b) llmock with its sleeps stubbed: its real server on loopback (uvicorn, in a thread of
    this process), reset and given ``Fail(503, times=2)`` per scenario; the SDK's
    ``time.sleep`` stubbed, so only the mocking is measured; then llmock's verdict.
(c) llmock in real time: the same as (b) with the SDK's real backoff (about 1.5 s), once.
(d) the floor: the SDK alone over an ``httpx2.MockTransport`` answering 503, 503, 200,
    sleeps stubbed, no faults, no routes, no verdict. No mock can cost less than this, so
    the best possible (b)/(a) ratio is (b)/(d).

Goals: (a) at least 3x faster than (b), and at least 200x faster than (c).

Run:  python benchmarks/bench_sdk_llmock.py [--iterations N] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import timeit
from pathlib import Path

import openai
import openai._base_client as sdk_client
from llmock.scenarios import Fail
from llmock.testing import LLMockServer
from llmock.verdict import judge

from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import VirtualClock, use_default_clock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing._sdk_clients import SdkClients
from pytest_agentfaults.testing.faults import FaultPlan

ROOT = Path(__file__).resolve().parents[1]
CHAT = (ROOT / "fixtures" / "wire" / "openai" / "chat_text.json").read_bytes()
URL = "https://api.openai.com/v1/chat/completions"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
JSON = {"content-type": "application/json"}


CLOCK = time.perf_counter  # --cpu: time.process_time (every thread of this process)


def timed(fn, number: int) -> float:
    return timeit.Timer(fn, timer=CLOCK).timeit(number) / number


def ask(client) -> str:
    return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES).id


# ---------------------------------------------------------------------------- (a)


def ours_scenario(clients: SdkClients) -> None:
    """One test: its plan, trace and clock; the fixture's client; ask; the verdict."""
    plan = FaultPlan(seed=1)
    plan.http(url=URL).status(503).times(2)
    clock = VirtualClock()
    trace = Trace()
    plan.http_recorder = Recorder(agent="http", clock=clock, trace=trace, run_id="http")
    client = clients.for_test("openai_client")
    with use_default_clock(clock), plan.active(), clock.patch_sleep():
        plan.http_layer().router.post(URL).respond(200, content=CHAT, headers=JSON)
        ask(client)
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]
    assert len(clock.sleeps) == 2  # the SDK backed off twice, virtually
    assert trace.verdict().passed


# ---------------------------------------------------------------------------- (b), (c)


def llmock_scenario(server: LLMockServer, client) -> bool:
    """One test as llmock's fixture runs it: reset, the faults, ask, the verdict.

    Returns whether the verdict passed: llmock judges the wall-clock gaps between the
    requests it received, so with the SDK's sleeps stubbed it reports the (obeyed)
    Retry-After as ignored; only the real-time run can pass it.
    """
    state = server.state
    state.reset()
    state.scenarios.add(Fail(503, times=2))
    ask(client)
    records = state.journal.records(wait=2.0)
    assert [r.status for r in records] == [503, 503, 200], [r.status for r in records]
    return judge(records).passed


def floor_client():
    import itertools

    import httpx2

    statuses = itertools.cycle([503, 503, 200])

    def answer(request):
        status = next(statuses)
        body = CHAT if status == 200 else b'{"error": {"message": "unavailable"}}'
        return httpx2.Response(status, content=body, headers=JSON)

    return openai.OpenAI(
        api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(answer))
    )


class StubbedSleep:
    """The SDK's backoff sleeps made instant (llmock has no clock of its own)."""

    def __enter__(self) -> None:
        self.original = sdk_client.time.sleep
        sdk_client.time.sleep = lambda seconds: None  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        sdk_client.time.sleep = self.original  # type: ignore[assignment]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time (a), (b), (d) in CPU time of the process (llmock's server is a thread of "
        "it), steadier than wall time on a busy machine; (c) stays wall time",
    )
    args = parser.parse_args()
    global CLOCK  # one switch for the script's timer
    if args.cpu:
        CLOCK = time.process_time

    clients = SdkClients()
    ours_runs: list[float] = []
    stubbed_runs: list[float] = []
    floor_runs: list[float] = []
    floor = floor_client()
    for _ in range(30):  # warm up: imports, the session's clients, respx
        ours_scenario(clients)
    # Interleaved, so all see the same load on a shared machine. llmock's server runs
    # only while (b) and (c) are measured, so its threads take no CPU from (a) and (d).
    for repeat in range(args.repeats):
        gc.collect()
        ours_runs.append(timed(lambda: ours_scenario(clients), args.iterations))
        with StubbedSleep():
            floor_runs.append(timed(lambda: ask(floor), args.iterations))
        with (
            LLMockServer() as server,
            openai.OpenAI(base_url=server.base_url("openai"), api_key="k") as client,
        ):
            with StubbedSleep():
                for _ in range(30 if repeat == 0 else 5):
                    llmock_scenario(server, client)
                gc.collect()
                stubbed_runs.append(timed(lambda: llmock_scenario(server, client), args.iterations))
                stubbed_verdict = llmock_scenario(server, client)
            if repeat == args.repeats - 1:
                start = time.perf_counter()
                real_verdict = llmock_scenario(server, client)
                real = time.perf_counter() - start
    clients.close()
    floor.close()
    ours, ours_median = min(ours_runs), statistics.median(ours_runs)
    stubbed, stubbed_median = min(stubbed_runs), statistics.median(stubbed_runs)
    lowest = min(floor_runs)

    stubbed_ratio = stubbed / ours
    real_ratio = real / ours
    print(
        'openai SDK, default settings, "503, 503, then 200", verdict included, per test'
        + (" (CPU time)" if args.cpu else "")
    )
    print(
        f"    (a) agentfaults in-process, virtual backoff   {ours * 1e3:8.3f} / {ours_median * 1e3:.3f} ms (min / median)"
    )
    print(
        f"    (b) llmock on loopback, SDK sleeps stubbed    {stubbed * 1e3:8.3f} / {stubbed_median * 1e3:.3f} ms"
    )
    print(f"    (c) llmock on loopback, real SDK backoff      {real * 1e3:8.1f} ms (once)")
    print(
        f"    (d) the SDK alone over a MockTransport        {lowest * 1e3:8.3f} ms "
        f"(the floor: (b)/(d) = {stubbed / lowest:.1f}x is the best ratio possible)"
    )
    print(
        "    verdicts: (a) passed; (b) "
        + ("passed" if stubbed_verdict else "FAILED (llmock judges wall-clock gaps)")
        + "; (c) "
        + ("passed" if real_verdict else "FAILED")
    )
    print(
        f"    (b)/(a) {stubbed_ratio:6.1f}x faster  (goal >= 3: "
        f"{'OK' if stubbed_ratio >= 3 else 'UNDER GOAL'})"
    )
    print(
        f"    (c)/(a) {real_ratio:6,.0f}x faster  (goal >= 200: "
        f"{'OK' if real_ratio >= 200 else 'UNDER GOAL'})"
    )
    return 0 if stubbed_ratio >= 3 and real_ratio >= 200 else 1


if __name__ == "__main__":
    sys.exit(main())
