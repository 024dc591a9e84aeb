"""HTTP faults side by side, in one process.

(a) a 503 -> retry -> 200 cycle over an httpx client: the 503 injected in-process by a
    fault plan and the 200 answered by the ``http_faults`` router, versus the same two
    requests both mocked by plain respx (a route whose side effect alternates 503 / 200).
    Target: at most 2x the cost of plain respx.
(b) the official openai SDK, default settings, "503, 503, then success": in-process
    faults with ``virtual_clock.patch_sleep()`` (the SDK's backoff recorded, not slept)
    versus a real-time loopback mock server with the SDK's real backoff sleeps (about
    1.1 to 1.5 s; run once). Target: at least 100x faster.
(c) the loopback `LLMServer`: non-streaming chat completions per second over one
    keep-alive httpx client, client and server in this one process (they share the GIL,
    so this is a floor). Target: at least 1,000 requests per second.
(d) the same server under 10,000 hostile requests (bad Content-Length, oversized heads,
    garbage, idle and unfinished connections), each over its own raw socket: every one
    gets a 4xx and a closed connection. Targets: no handler thread left, nothing
    recorded, traced memory growth under 1 MiB.

Run:  python benchmarks/bench_http.py [--cycles N] [--repeats R]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import socket
import statistics
import sys
import threading
import time
import timeit
import tracemalloc
from pathlib import Path

import httpx
import respx

from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import VirtualClock, use_default_clock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing import fail, say
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.server import LLMServer

ROOT = Path(__file__).resolve().parents[1]
CHAT = (ROOT / "fixtures" / "wire" / "openai" / "chat_text.json").read_bytes()
URL = "https://api.example.com/v1/things"
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
JSON = {"content-type": "application/json"}


def retrying_get(client: httpx.Client) -> int:
    """The code under test: retry once on a 503 (no wait: only the mocking is measured)."""
    response = client.get(URL)
    if response.status_code == 503:
        response = client.get(URL)
    return response.status_code


def best_of(fn, number: int, repeats: int) -> tuple[float, float]:
    runs = [timeit.timeit(fn, number=number) / number for _ in range(repeats)]
    return min(runs), statistics.median(runs)


# ---------------------------------------------------------------------------- (a)


def bench_cycle(cycles: int, repeats: int) -> float:
    client = httpx.Client()

    # plain respx: one route, alternating 503 and 200
    statuses = itertools.cycle([503, 200])
    with respx.mock(assert_all_called=False) as mock:
        mock.get(URL).mock(side_effect=lambda request: httpx.Response(next(statuses)))
        assert retrying_get(client) == 200
        for _ in range(200):
            retrying_get(client)
        gc.collect()
        plain, plain_median = best_of(lambda: retrying_get(client), cycles, repeats)

    # ours: the 503 is a fault of the plan, the 200 a route of the http_faults router
    plan = FaultPlan(seed=1)
    fault = plan.http(url=URL).status(503).fault
    clock = VirtualClock()
    plan.http_recorder = Recorder(agent="http", clock=clock, trace=Trace())

    def ours_cycle() -> int:
        fault.seen = fault.hits = 0  # the same one-503 fault for every cycle
        plan.http_recorder.trace.events.clear()  # type: ignore[union-attr]
        return retrying_get(client)

    with use_default_clock(clock), plan.active():
        plan.http_layer().router.get(URL).respond(200)
        assert ours_cycle() == 200
        for _ in range(200):
            ours_cycle()
        gc.collect()
        ours, ours_median = best_of(ours_cycle, cycles, repeats)
    client.close()

    ratio = ours / plain
    print("(a) 503 -> retry -> 200, httpx, per cycle (min / median)")
    print(
        f"    plain respx (both mocked)             {plain * 1e6:8.1f} / {plain_median * 1e6:8.1f} us"
    )
    print(
        f"    agentfaults fault + http_faults route {ours * 1e6:8.1f} / {ours_median * 1e6:8.1f} us"
    )
    print(f"    ratio {ratio:.2f}x  (target <= 2.0: {'OK' if ratio <= 2.0 else 'OVER TARGET'})")
    return ratio


# ---------------------------------------------------------------------------- (b)


def bench_sdk(iterations: int) -> float:
    import openai

    # ours: in-process faults, virtual backoff
    plan = FaultPlan(seed=1)
    fault = plan.http().status(503).times(2).fault
    clock = VirtualClock()
    plan.http_recorder = Recorder(agent="http", clock=clock, trace=Trace())
    client = openai.OpenAI(api_key="sk-bench-0123456789abcdef")

    def scenario() -> None:
        fault.seen = fault.hits = 0
        plan.http_recorder.trace.events.clear()  # type: ignore[union-attr]
        client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    with use_default_clock(clock), plan.active(), clock.patch_sleep():
        plan.http_layer().router.post(OPENAI_URL).respond(200, content=CHAT, headers=JSON)
        for _ in range(20):
            scenario()
        assert len(clock.sleeps) == 40  # two SDK backoff waits per scenario, none slept
        gc.collect()
        ours, ours_median = best_of(scenario, iterations, 3)
    client.close()

    # peer: a loopback mock server answering 503, 503, 200, and the SDK's real sleeps
    with LLMServer() as server:
        server.script([fail.http(503), fail.http(503), say("It is sunny.")])
        with openai.OpenAI(base_url=server.base_url("openai"), api_key="k") as real:
            start = time.perf_counter()
            real.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
            peer = time.perf_counter() - start
        assert len(server.requests) == 3

    ratio = peer / ours
    print('(b) openai SDK, default settings, "503, 503, then success"')
    print(f"    real-time loopback server + real SDK sleeps  {peer * 1e3:9.1f} ms (once)")
    print(
        f"    agentfaults in-process + patch_sleep         {ours * 1e3:9.3f} / {ours_median * 1e3:.3f} ms"
    )
    print(
        f"    ratio {ratio:,.0f}x faster  (target >= 100: {'OK' if ratio >= 100 else 'UNDER TARGET'})"
    )
    return ratio


# ---------------------------------------------------------------------------- (c)


def bench_server(requests: int) -> float:
    body = {"model": "gpt-4o-mini", "messages": MESSAGES}
    with LLMServer() as server, httpx.Client() as client:
        server.script([say("It is sunny.")], on_exhausted="repeat_last")
        url = server.base_url("openai") + "/chat/completions"
        for _ in range(200):
            client.post(url, json=body)
        rates = []
        for _ in range(3):
            server.reset()
            server.script([say("It is sunny.")], on_exhausted="repeat_last")
            start = time.perf_counter()
            for _ in range(requests):
                client.post(url, json=body).raise_for_status()
            rates.append(requests / (time.perf_counter() - start))
    rate = max(rates)
    print("(c) LLMServer, non-streaming chat completions, one keep-alive httpx client")
    print(
        f"    {rate:,.0f} requests/s (best of 3 x {requests}; median {statistics.median(rates):,.0f})"
    )
    print(f"    target >= 1,000: {'OK' if rate >= 1000 else 'UNDER TARGET'}")
    return rate


# ---------------------------------------------------------------------------- (d)

_CHAT_PATH = "/v1/chat/completions"


def _post(length: str, extra: str = "") -> bytes:
    head = f"POST {_CHAT_PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n{extra}\r\n"
    return head.encode() + b'{"model": "m", "messages": []}'


HOSTILE = [
    _post("-1"),
    _post("abc"),
    _post("1e15"),
    _post("99999999999999999999"),
    _post("31", "X-Big: " + "a" * 70_000 + "\r\n"),
    b"GARBAGE\r\n\r\n",
]


def _status(server: LLMServer, payload: bytes | None) -> int:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        if payload is not None:
            sock.sendall(payload)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1])


def bench_hostile(count: int) -> bool:
    idle_every = 100  # one idle or unfinished connection per 100 requests
    with LLMServer(idle_timeout=0.05) as server:
        for payload in HOSTILE * 20:  # warm up
            _status(server, payload)
        before = set(threading.enumerate())
        tracemalloc.start()
        start_snapshot = tracemalloc.take_snapshot()
        started = time.perf_counter()
        statuses: dict[int, int] = {}
        for i in range(count):
            if i % idle_every == 0:
                payload: bytes | None = None if i % (2 * idle_every) else _post("999")[:-5]
            else:
                payload = HOSTILE[i % len(HOSTILE)]
            status = _status(server, payload)
            statuses[status] = statuses.get(status, 0) + 1
        took = time.perf_counter() - started
        new = [t for t in threading.enumerate() if t not in before]
        for thread in new:
            thread.join(timeout=5)
        stuck = [t for t in new if t.is_alive()]
        gc.collect()
        grown = sum(
            d.size_diff for d in tracemalloc.take_snapshot().compare_to(start_snapshot, "filename")
        )
        tracemalloc.stop()
        recorded = len(server.requests)
    all_4xx = all(400 <= status < 500 for status in statuses)
    print(f"(d) LLMServer under {count:,} hostile requests (one raw socket each)")
    print(f"    statuses {dict(sorted(statuses.items()))} in {took:.1f} s")
    print(f"    handler threads left {len(stuck)}, requests recorded {recorded}, ", end="")
    print(f"traced memory growth {grown / 1024:.1f} KiB")
    ok = all_4xx and not stuck and not recorded and grown < 1024 * 1024
    print(
        f"    target (all 4xx, no thread left, nothing kept, < 1 MiB): {'OK' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=2000, help="cycles per timing run in (a)")
    parser.add_argument("--repeats", type=int, default=7, help="timing runs per side in (a)")
    parser.add_argument("--sdk", type=int, default=100, help="SDK scenarios per run in (b)")
    parser.add_argument("--requests", type=int, default=3000, help="requests per run in (c)")
    parser.add_argument("--hostile", type=int, default=10_000, help="hostile requests in (d)")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, httpx {httpx.__version__}, respx {respx.__version__}")
    a = bench_cycle(args.cycles, args.repeats)
    b = bench_sdk(args.sdk)
    c = bench_server(args.requests)
    d = bench_hostile(args.hostile)
    ok = a <= 2.0 and b >= 100 and c >= 1000 and d
    print("all targets met" if ok else "a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
