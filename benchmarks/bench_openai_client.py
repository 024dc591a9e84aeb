"""OpenAIModel.request vs a bare httpx POST of the same body, side by side in one process.

Both go through the same ``httpx.MockTransport`` that answers with a realistic
chat-completions payload, so the difference is what the client adds: building the
payload from messages, encoding it, the retry loop, decoding and validating the answer.

Run:  python benchmarks/bench_openai_client.py [--calls N] [--repeats R]
Target: ratio (client / bare POST) <= 1.5.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import timeit
from pathlib import Path

import httpx

from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolSpec
from pytest_agentfaults.runtime.models.openai import OpenAIModel

ROOT = Path(__file__).resolve().parents[1]
ANSWER = (ROOT / "fixtures" / "wire" / "openai" / "chat_tool_calls.json").read_bytes()
URL = "https://api.openai.com/v1/chat/completions"
TARGET = 1.5


def handler(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, content=ANSWER, headers={"content-type": "application/json"})


def build_request() -> ModelRequest:
    messages = [
        Message.system("You are a weather bot. Use the tools."),
        Message.user("What is the weather in Paris and in Tokyo?"),
    ]
    tools = [
        ToolSpec(
            name="get_weather",
            description="Current weather for a city.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    ]
    return ModelRequest(messages=messages, tools=tools)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timing run")
    parser.add_argument("--repeats", type=int, default=7, help="timing runs per side")
    args = parser.parse_args()

    transport = httpx.MockTransport(handler)
    request = build_request()
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key="sk-bench-0123456789abcdef",
        http_client=httpx.Client(transport=transport),
    )
    # The bare side sends byte-for-byte the body and headers the client sends.
    body = model._encode(request)
    headers = dict(model._headers)
    bare_client = httpx.Client(transport=transport)

    def bare() -> None:
        response = bare_client.post(URL, content=body, headers=headers)
        response.raise_for_status()

    def bare_json() -> None:
        response = bare_client.post(URL, content=body, headers=headers)
        response.raise_for_status()
        json.loads(response.content)

    def client() -> None:
        model.request(request)

    sides = {"bare httpx POST": bare, "bare POST + json.loads": bare_json, "OpenAIModel": client}
    for fn in sides.values():  # warm up
        for _ in range(200):
            fn()
    timings: dict[str, list[float]] = {name: [] for name in sides}
    gc.collect()
    for _ in range(args.repeats):
        # Interleave the sides so that drift in the machine hits all of them alike.
        for name, fn in sides.items():
            total = timeit.timeit(fn, number=args.calls)
            timings[name].append(total / args.calls * 1e6)

    print(f"python {sys.version.split()[0]}, httpx {httpx.__version__}")
    print(f"{args.repeats} runs x {args.calls} calls each; per-call microseconds (min / median)")
    best = {name: min(values) for name, values in timings.items()}
    for name, values in timings.items():
        print(f"  {name:<24} {min(values):8.1f} / {statistics.median(values):8.1f} us")
    ratio = best["OpenAIModel"] / best["bare httpx POST"]
    ratio_json = best["OpenAIModel"] / best["bare POST + json.loads"]
    median_ratio = statistics.median(timings["OpenAIModel"]) / statistics.median(
        timings["bare httpx POST"]
    )
    print(f"ratio OpenAIModel / bare POST:          {ratio:.3f} (min)  {median_ratio:.3f} (median)")
    print(f"ratio OpenAIModel / bare POST + json:   {ratio_json:.3f} (min)")
    verdict = "OK" if ratio <= TARGET else "OVER TARGET"
    print(f"target <= {TARGET}: {verdict}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
