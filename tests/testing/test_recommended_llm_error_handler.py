"""The ``on_llm_error`` handler that docs/howto/llm-errors.md recommends passes the verdict.

The handler is read from the page itself (its first runnable example), so the docs cannot
recommend a handler that retries too soon, too often, or gives up on what it should retry.
Each scenario breaks the wire under our own OpenAI client and judges the whole trace.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pytest_agentfaults as af

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "llm-errors.md"
BASE = "https://api.example.com/v1"
URL = f"{BASE}/chat/completions"
ANSWER = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
STREAM = (
    'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]}\n\n'
    'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    "data: [DONE]\n\n"
)


def recommended_handler():
    text = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- test -->\s*```python\n(.*?)\n```", text, re.DOTALL)
    assert block, f"{PAGE}: no runnable example"
    namespace: dict[str, object] = {}
    exec(compile(block.group(1), str(PAGE), "exec"), namespace)
    handler = namespace.get("on_llm_error")
    assert callable(handler), f"{PAGE}: the first example defines no on_llm_error"
    return handler


# (id, how the wire breaks, how many times, whether the run can still end ok)
SCENARIOS = [
    ("429-retry-after-2", lambda f: f.status(429, retry_after=2), 1, True),
    ("429-retry-after-120", lambda f: f.status(429, retry_after=120), 1, True),
    ("429-retry-after-120-twice", lambda f: f.status(429, retry_after=120), 2, False),
    ("429-retry-after-1h", lambda f: f.status(429, retry_after=3600), 1, False),
    ("429-without-retry-after", lambda f: f.status(429), 2, True),
    ("429-persistent", lambda f: f.status(429, retry_after=2), 10, False),
    ("503-once", lambda f: f.status(503), 1, True),
    ("503-retry-after-120", lambda f: f.status(503, retry_after=120), 1, False),
    ("503-persistent", lambda f: f.status(503), 10, False),
    ("500-once", lambda f: f.status(500), 1, True),
    ("400", lambda f: f.status(400), 1, False),
    ("401", lambda f: f.status(401), 1, False),
    ("403", lambda f: f.status(403), 1, False),
    ("404", lambda f: f.status(404), 1, False),
    ("422", lambda f: f.status(422), 1, False),
    ("timeout-once", lambda f: f.timeout(), 1, True),
    ("timeout-persistent", lambda f: f.timeout(), 10, False),
    ("connection-reset", lambda f: f.reset(), 2, True),
    ("connect-error-persistent", lambda f: f.connect_error(), 10, False),
    ("malformed-body", lambda f: f.malformed_body(), 1, True),
    ("read-error", lambda f: f.read_error(), 1, True),
    ("truncated-stream", lambda f: f.truncated_stream(), 1, True),
    ("truncated-stream-persistent", lambda f: f.truncated_stream(), 10, False),
]


@pytest.mark.parametrize(
    ("break_wire", "times", "recovers"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_the_recommended_handler_passes_the_verdict(
    request, faults, http_faults, trace, virtual_clock, break_wire, times, recovers
):
    break_wire(faults.http(url=URL)).times(times)
    # a run that cannot recover never reaches the answer: that route goes unused then
    http_faults.assert_all_called = recovers
    stream = request.node.callspec.id.startswith("truncated-stream")  # needs a streamed answer
    if stream:
        headers = {"content-type": "text/event-stream"}
        http_faults.post(URL).respond(200, text=STREAM, headers=headers)
    else:
        http_faults.post(URL).respond(200, json=ANSWER)
    with af.OpenAIModel("m", base_url=BASE, api_key="k") as model:
        agent = af.Agent("bot", model=model, on_llm_error=recommended_handler(), stream=stream)
        try:
            output = agent.run("hi").output
        except af.ModelError:
            output = None
    assert faults.fired, "the scenario broke nothing"
    assert (output == "ok") is recovers, trace.render()
    trace.assert_resilient()
