"""Stream parsing: `LineBuffer` before and after the linear rewrite, side by side.

"before" is the pre-fix ``LineBuffer.feed`` (kept below as `QuadraticLineBuffer`): it
copied every byte it held on each chunk, so one long line cost O(n^2 / chunk). "after"
is today's `LineBuffer`. Both cut the same bytes, in 64 KiB chunks (what httpcore reads).

(a) one SSE event of ``--mb`` MB (40 by default) on one line;
(b) a typical stream: 20,000 chat-completion chunks of ~200 bytes (4 MB);
(c) end to end: `OpenAIModel` streaming one ``--mb`` MB content delta over
    ``httpx.MockTransport`` (``max_response_bytes`` raised to fit), with each side's
    line buffer.

Run:  python benchmarks/bench_streaming.py [--mb N] [--repeats R] [--skip-before]
Target: (a) one 40 MB line in well under 1 s (the old code took 7-12 s), and (b) a
typical stream no slower than before.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Iterator
from unittest import mock

import httpx

from pytest_agentfaults.runtime.models import _client
from pytest_agentfaults.runtime.models._stream import LineBuffer
from pytest_agentfaults.runtime.models._wire import WireFormatError
from pytest_agentfaults.runtime.models.base import Message, ModelRequest
from pytest_agentfaults.runtime.models.openai import OpenAIModel

CHUNK = 64 * 1024
MB = 1_000_000
TARGET_SECONDS = 1.0


class QuadraticLineBuffer:
    """The pre-fix algorithm, for the "before" column (same output, quadratic cost)."""

    def __init__(self, max_line: int | None = None) -> None:
        self._pending = b""
        self.head = b""
        self.tail = b""
        self.size = 0
        self.lines = 0

    def feed(self, chunk: bytes) -> list[str]:
        self.size += len(chunk)
        if len(self.head) < 2000:
            self.head += chunk[: 2000 - len(self.head)]
        self.tail = (self.tail + chunk)[-2000:]
        data = self._pending + chunk
        if b"\n" not in data:
            self._pending = data
            return []
        *complete, self._pending = data.split(b"\n")
        return [self._decode(line) for line in complete]

    def finish(self) -> str | None:
        rest, self._pending = self._pending, b""
        return self._decode(rest) if rest.strip() else None

    def _decode(self, line: bytes) -> str:
        self.lines += 1
        try:
            return line.rstrip(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:  # pragma: no cover - the benchmark sends UTF-8
            raise WireFormatError(str(exc)) from exc

    def excerpt(self) -> str:
        return self.tail.decode("utf-8", "replace")[-200:]

    def transcript(self) -> str:
        return self.head.decode("utf-8", "replace")


Buffer = Callable[[], "LineBuffer | QuadraticLineBuffer"]


def chunked(body: bytes) -> list[bytes]:
    return [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)]


def one_event(mb: float) -> bytes:
    delta = {"choices": [{"index": 0, "delta": {"content": "x" * int(mb * MB)}}]}
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


def typical_stream(events: int = 20_000) -> bytes:
    lines = []
    for index in range(events):
        delta = {
            "id": "chatcmpl-AfX8sTrEaM0000000001",
            "object": "chat.completion.chunk",
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "delta": {"content": f" word{index}"}, "finish_reason": None}],
        }
        lines.append(b"data: " + json.dumps(delta).encode() + b"\n\n")
    return b"".join(lines)


def cut(make: Buffer, pieces: list[bytes]) -> int:
    buffer = make()
    count = 0
    for piece in pieces:
        count += len(buffer.feed(piece))
    return count + (buffer.finish() is not None)


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def stream_client(body: bytes) -> Callable[[], object]:
    pieces = chunked(body)

    class Body(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from pieces

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())

    model = OpenAIModel(
        "gpt-4o-mini",
        base_url="http://127.0.0.1:9/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        max_response_bytes=4 * len(body),
        transport_retry=False,
    )
    request = ModelRequest(messages=[Message.user("hi")], stream=True)
    done = b"data: [DONE]\n\n"
    pieces.append(done)

    def run() -> object:
        return model.request(request)

    return run


def row(name: str, size: int, before: float | None, after: float) -> None:
    mb = size / MB
    shown = f"{before:8.3f} s {mb / before:9.1f} MB/s" if before is not None else " " * 22
    ratio = f"{before / after:7.1f}x" if before is not None else ""
    print(f"  {name:<38} {mb:6.1f} MB  {shown}   {after:7.3f} s {mb / after:9.1f} MB/s  {ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=40.0, help="size of the one long event")
    parser.add_argument("--repeats", type=int, default=3, help="runs per 'after' side (best)")
    parser.add_argument("--skip-before", action="store_true", help="skip the slow old side")
    args = parser.parse_args()

    print(f"python {sys.version.split()[0]}, httpx {httpx.__version__}, chunks of {CHUNK} bytes")
    print(f"  {'scenario':<38} {'size':>9}  {'before (quadratic)':>22}   {'after (linear)':>21}")
    long_event = one_event(args.mb)
    quarter = one_event(args.mb / 4)
    typical = typical_stream()
    worst = 0.0
    for name, body in (
        (f"(a) one {args.mb:g} MB SSE line", long_event),
        (f"(a) one {args.mb / 4:g} MB SSE line", quarter),
        ("(b) 20,000 chunk events", typical),
    ):
        pieces = chunked(body)
        assert cut(LineBuffer, pieces) == cut(LineBuffer, [body])
        after = best_of(lambda p=pieces: cut(LineBuffer, p), args.repeats)
        before = None
        if not args.skip_before:
            before = best_of(lambda p=pieces: cut(QuadraticLineBuffer, p), 1)
        row(name, len(body), before, after)
        if name.startswith(f"(a) one {args.mb:g}"):
            worst = after
    run = stream_client(long_event)
    after = best_of(run, args.repeats)
    before = None
    if not args.skip_before:
        with mock.patch.object(_client, "LineBuffer", QuadraticLineBuffer):
            before = best_of(run, 1)
    row(f"(c) OpenAIModel stream, one {args.mb:g} MB delta", len(long_event), before, after)
    verdict = "OK" if worst < TARGET_SECONDS else "OVER TARGET"
    print(f"target: one {args.mb:g} MB line < {TARGET_SECONDS:g} s: {verdict}")
    return 0 if worst < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
