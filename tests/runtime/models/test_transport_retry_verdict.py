"""Our runtime's `TransportRetry` passes its own verdict in every scenario (issue 19.3).

It is judged by its declared rules (it leaves timeouts, 409 and 501 to ``on_llm_error``), and
aligned with the SDKs where they agree: jittered waits from the run's seeded random stream,
``x-should-retry`` obeyed both ways, and ``Retry-After: 0`` read as "no instruction" (back
off), never as a 0 s wait.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import ModelServerError
from pytest_agentfaults.runtime.backoff import seeded_jitter
from pytest_agentfaults.runtime.models._retry import TransportRetry
from pytest_agentfaults.testing._wire import JSON_TYPE, error_body

BASE = "https://api.example.com/v1"
URL = f"{BASE}/chat/completions"
OK = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}


def status(code: int, **headers: str) -> httpx.Response:
    body = error_body("openai", code, f"status {code}")
    named = {k.replace("_", "-"): v for k, v in headers.items()}
    return httpx.Response(code, content=body, headers={"content-type": JSON_TYPE, **named})


def ok() -> httpx.Response:
    return httpx.Response(200, json=OK)


def model() -> af.OpenAIModel:
    return af.OpenAIModel("m", base_url=BASE, api_key="sk-test-0123456789")


def run(agent: af.Agent) -> object:
    try:
        return agent.run("hi").output
    except Exception as exc:  # the run's policy decides; the verdict judges the trace
        return exc


def delays(trace) -> list[float]:
    return [e.delay for e in trace.of("transport.retry")]


def test_our_requests_say_who_sent_them(http_faults, trace):
    http_faults.post(URL).mock(side_effect=[ok()])
    with model() as m:
        assert run(af.Agent("bot", model=m)) == "ok"
    assert trace.of("http.request")[0].field("client") == "agentfaults"


def test_retry_after_zero_backs_off_and_passes(http_faults, trace, virtual_clock):
    http_faults.post(URL).mock(side_effect=[status(503, retry_after="0"), ok()])
    with model() as m:
        assert run(af.Agent("bot", model=m)) == "ok"
    (wait,) = delays(trace)
    assert 0.1875 <= wait <= 0.25
    trace.assert_resilient()


@pytest.mark.parametrize("code", [409, 501, 520])
def test_statuses_left_to_the_run_pass_the_verdict(http_faults, trace, code):
    http_faults.post(URL).mock(side_effect=[status(code)])
    with model() as m:
        run(af.Agent("bot", model=m))
    assert [e.status for e in trace.of("http.request")] == [code]
    trace.assert_resilient()


@pytest.mark.inject_fault(http="timeout", url=URL)
def test_a_timeout_left_to_the_run_passes_the_verdict(trace):
    with model() as m:
        run(af.Agent("bot", model=m))
    assert len(trace.of("http.request")) == 1
    trace.assert_resilient()


def test_a_retry_after_above_max_delay_gives_up_and_passes(http_faults, trace):
    http_faults.post(URL).mock(side_effect=[status(429, retry_after="90")])
    with model() as m:
        run(af.Agent("bot", model=m))
    trace.assert_resilient()


def test_x_should_retry_false_is_not_retried(http_faults, trace):
    http_faults.post(URL).mock(side_effect=[status(503, x_should_retry="false")])
    with model() as m:
        assert isinstance(run(af.Agent("bot", model=m)), ModelServerError)
    assert len(trace.of("http.request")) == 1
    trace.assert_resilient()


def test_x_should_retry_true_retries_a_400(http_faults, trace):
    http_faults.post(URL).mock(side_effect=[status(400, x_should_retry="true"), ok()])
    with model() as m:
        assert run(af.Agent("bot", model=m)) == "ok"
    assert [e.status for e in trace.of("http.request")] == [400, 200]
    trace.assert_resilient()


def test_async_x_should_retry_is_obeyed_both_ways(http_faults, trace):
    http_faults.post(URL).mock(
        side_effect=[status(400, x_should_retry="true"), ok(), status(503, x_should_retry="false")]
    )

    async def go():
        async with model() as m:
            agent = af.Agent("bot", model=m)
            first = await agent.arun("hi")
            try:
                await agent.arun("again")
            except ModelServerError:
                return first.output
            return None

    assert asyncio.run(go()) == "ok"
    assert [e.status for e in trace.of("http.request")] == [400, 200, 503]
    trace.assert_resilient()


def test_waits_are_jittered_like_the_sdks_and_replay_from_the_seed(http_faults, trace):
    http_faults.post(URL).mock(side_effect=[status(503), status(503), ok()] * 2)
    with model() as m:
        for _ in range(2):
            with seeded_jitter(1234):
                assert run(af.Agent("bot", model=m)) == "ok"
    waits = delays(trace)
    assert len(waits) == 4
    assert waits[:2] == waits[2:]  # the same seed, the same waits
    assert 0.1875 <= waits[0] <= 0.25
    assert 0.375 <= waits[1] <= 0.5
    assert waits[:2] != [0.25, 0.5]  # jittered, not the ceilings
    trace.assert_resilient()


def test_the_pure_decision_takes_the_jitter_draw():
    retry = TransportRetry()
    error = ModelServerError("x", status=503)
    assert retry.next_delay(error, 1) == 0.25  # no draw: the ceiling
    assert retry.next_delay(error, 1, uniform=1.0) == pytest.approx(0.1875)
    assert TransportRetry(jitter=0).next_delay(error, 2, uniform=1.0) == 0.5


STREAM = (
    'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]}\n\n'
    'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
    "data: [DONE]\n\n"
)

# (id, how the wire breaks, how many times): the default Agent, no on_llm_error of its own
DEFAULT_SCENARIOS = [
    ("503-once", lambda f: f.status(503), 1),
    ("503-persistent", lambda f: f.status(503), 5),
    ("429-retry-after-2", lambda f: f.status(429, retry_after=2), 1),
    ("429-retry-after-0", lambda f: f.status(429, retry_after=0), 1),
    ("429-retry-after-90", lambda f: f.status(429, retry_after=90), 1),
    ("409", lambda f: f.status(409), 1),
    ("501", lambda f: f.status(501), 1),
    ("529-twice", lambda f: f.status(529), 2),
    ("timeout", lambda f: f.timeout(), 1),
    ("connect-error", lambda f: f.connect_error(), 2),
    ("reset-persistent", lambda f: f.reset(), 5),
    ("truncated-stream", lambda f: f.truncated_stream(), 1),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("break_wire", "times"),
    [s[1:] for s in DEFAULT_SCENARIOS],
    ids=[s[0] for s in DEFAULT_SCENARIOS],
)
def test_the_runtime_with_default_settings_passes_its_own_verdict(
    request, faults, http_faults, trace, virtual_clock, break_wire, times, mode
):
    break_wire(faults.http(url=URL)).times(times)
    http_faults.assert_all_called = False  # a run that gives up never reaches the answer
    stream = "truncated" in request.node.callspec.id
    if stream:
        headers = {"content-type": "text/event-stream"}
        http_faults.post(URL).respond(200, text=STREAM, headers=headers)
    else:
        http_faults.post(URL).respond(200, json=OK)

    async def arun(agent: af.Agent) -> object:
        try:
            return (await agent.arun("hi")).output
        except af.ModelError as exc:
            return exc

    with model() as m:
        agent = af.Agent("bot", model=m, stream=stream)
        run(agent) if mode == "sync" else asyncio.run(arun(agent))
    assert faults.fired, "the scenario broke nothing"
    assert {e.field("client") for e in trace.of("http.request")} == {"agentfaults"}
    trace.assert_resilient()
