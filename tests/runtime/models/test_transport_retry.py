"""Transport retry, exactly as the contract says: what is repeated, how often, how long."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from pytest_agentfaults.errors import (
    ModelAuthError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.clock import VirtualClock, use_default_clock
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.models._retry import TransportRetry
from pytest_agentfaults.runtime.models.anthropic import AnthropicModel
from pytest_agentfaults.runtime.models.base import Message, ModelRequest
from pytest_agentfaults.runtime.models.ollama import OllamaModel
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.testing._wire import JSON_TYPE, error_body

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-transport0123456789"


@pytest.fixture
def model():
    with OpenAIModel("gpt-4o-mini", api_key=KEY) as client:
        yield client


def status(code: int, **headers: str) -> httpx.Response:
    body = error_body("openai", code, f"status {code}")
    return httpx.Response(code, content=body, headers={"content-type": JSON_TYPE, **headers})


# --------------------------------------------------------------------------- the settings


def test_defaults_are_the_contract():
    retry = TransportRetry()
    assert retry.max_attempts == 3
    assert retry.schedule() == [0.25, 0.5]
    assert retry.max_delay == 60.0
    assert retry.retry_statuses == frozenset({408, 429, 500, 502, 503, 504, 529})


def test_backoff_is_capped_by_max_delay():
    retry = TransportRetry(max_attempts=6, initial_backoff=1, max_delay=5)
    assert retry.schedule() == [1, 2, 4, 5, 5]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"max_attempts": 2.5},
        {"max_attempts": True},
        {"initial_backoff": -1},
        {"max_delay": float("inf")},
        {"multiplier": 0.5},
        {"retry_statuses": {"503"}},
        {"retry_statuses": {99}},
    ],
)
def test_bad_settings_are_usage_errors(kwargs):
    with pytest.raises(UsageError, match="TransportRetry"):
        TransportRetry(**kwargs)


def test_retry_statuses_accept_any_iterable():
    assert TransportRetry(retry_statuses=[503]).retry_statuses == frozenset({503})


def test_transport_retry_argument_is_checked():
    with pytest.raises(UsageError, match="transport_retry=3"):
        OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=3)  # type: ignore[arg-type]


def test_next_delay_is_a_pure_decision():
    retry = TransportRetry()
    error = ModelServerError("x", status=503)
    assert retry.next_delay(error, 1) == 0.25
    assert retry.next_delay(error, 2) == 0.5
    assert retry.next_delay(error, 3) is None
    assert retry.next_delay(ModelAuthError("x", status=401), 1) is None
    assert retry.next_delay(RateLimitError("x", retry_after=3), 1) == 3
    assert retry.next_delay(RateLimitError("x", retry_after=61), 1) is None
    assert retry.next_delay(ValueError("x"), 1) is None


# --------------------------------------------------------------------------- statuses


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503, 504, 529])
def test_each_retryable_status_is_retried(respx_mock, model, make_request, clock, code):
    route = respx_mock.post(URL).mock(side_effect=[status(code), httpx.Response(200, json=_ok())])
    assert model.request(make_request()).text == "ok"
    assert route.call_count == 2
    assert clock.sleeps == [0.25]


@pytest.mark.parametrize("code", [400, 401, 403, 404, 409, 422])
def test_other_statuses_are_not_retried(respx_mock, model, make_request, clock, emitted, code):
    route = respx_mock.post(URL).mock(return_value=status(code))
    with pytest.raises(ModelHTTPError) as caught:
        model.request(make_request())
    assert caught.value.status == code
    assert route.call_count == 1
    assert clock.sleeps == []
    assert emitted.of("transport.retry") == []


def test_two_503s_then_success_waits_a_quarter_then_half_a_second(
    respx_mock, model, make_request, clock, emitted
):
    route = respx_mock.post(URL).mock(
        side_effect=[status(503), status(503), httpx.Response(200, json=_ok())]
    )
    response = model.request(make_request())
    assert response.text == "ok"
    assert route.call_count == 3
    assert clock.sleeps == [0.25, 0.5]
    retries = emitted.of("transport.retry")
    assert [(e["attempt"], e["status"], e["delay"]) for e in retries] == [
        (1, 503, 0.25),
        (2, 503, 0.5),
    ]
    assert all(e["max_attempts"] == 3 for e in retries)
    assert all(e["model"] == "openai:gpt-4o-mini" for e in retries)
    assert isinstance(retries[0]["error"], ErrorRecord)
    assert retries[0]["error"].type == "ModelServerError"
    assert retries[0]["detail"] == (
        "openai:gpt-4o-mini: HTTP 503; waiting 0.25s (backoff) before attempt 2/3"
    )


def test_three_failures_raise_the_last_one_after_three_attempts(
    respx_mock, model, make_request, clock
):
    route = respx_mock.post(URL).mock(side_effect=[status(503), status(502), status(500)])
    with pytest.raises(ModelServerError) as caught:
        model.request(make_request())
    assert caught.value.status == 500
    assert route.call_count == 3
    assert clock.sleeps == [0.25, 0.5]
    assert "transport retry: gave up after 3 attempts" in caught.value.__notes__


def test_a_non_retryable_status_after_a_retry_stops_at_once(respx_mock, model, make_request):
    route = respx_mock.post(URL).mock(side_effect=[status(503), status(401)])
    with pytest.raises(ModelAuthError):
        model.request(make_request())
    assert route.call_count == 2


# --------------------------------------------------------------------------- Retry-After


def test_retry_after_seconds_replaces_the_backoff(respx_mock, model, make_request, clock, emitted):
    respx_mock.post(URL).mock(
        side_effect=[status(429, **{"retry-after": "2"}), httpx.Response(200, json=_ok())]
    )
    model.request(make_request())
    assert clock.sleeps == [2.0]
    assert "Retry-After 2s" in emitted.of("transport.retry")[0]["detail"]


def test_retry_after_ms_is_honoured(respx_mock, model, make_request, clock):
    respx_mock.post(URL).mock(
        side_effect=[status(429, **{"retry-after-ms": "1500"}), httpx.Response(200, json=_ok())]
    )
    model.request(make_request())
    assert clock.sleeps == [1.5]


def test_retry_after_as_an_http_date_is_honoured(respx_mock, model, make_request, clock):
    date = email.utils.formatdate(time.time() + 10, usegmt=True)
    respx_mock.post(URL).mock(
        side_effect=[status(503, **{"retry-after": date}), httpx.Response(200, json=_ok())]
    )
    model.request(make_request())
    [delay] = clock.sleeps
    assert 8.0 <= delay <= 10.0


def test_retry_after_above_max_delay_is_not_retried(respx_mock, model, make_request, clock):
    route = respx_mock.post(URL).mock(return_value=status(429, **{"retry-after": "120"}))
    with pytest.raises(RateLimitError) as caught:
        model.request(make_request())
    assert caught.value.retry_after == 120.0
    assert route.call_count == 1
    assert clock.sleeps == []
    assert any("more than max_delay=60s" in note for note in caught.value.__notes__)


def test_a_far_http_date_is_not_retried(respx_mock, model, make_request, clock):
    date = email.utils.formatdate(time.time() + 3600, usegmt=True)
    respx_mock.post(URL).mock(return_value=status(429, **{"retry-after": date}))
    with pytest.raises(RateLimitError) as caught:
        model.request(make_request())
    assert caught.value.retry_after is not None
    assert caught.value.retry_after > 3500
    assert clock.sleeps == []


def test_max_delay_is_tunable(respx_mock, make_request, clock):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=TransportRetry(max_delay=1))
    respx_mock.post(URL).mock(return_value=status(429, **{"retry-after": "2"}))
    with pytest.raises(RateLimitError) as caught:
        model.request(make_request())
    assert caught.value.retry_after == 2.0
    assert clock.sleeps == []


def test_the_rate_limit_error_keeps_retry_after_when_retries_run_out(
    respx_mock, model, make_request, clock
):
    respx_mock.post(URL).mock(return_value=status(429, **{"retry-after": "1"}))
    with pytest.raises(RateLimitError) as caught:
        model.request(make_request())
    assert caught.value.retry_after == 1.0
    assert clock.sleeps == [1.0, 1.0]


# --------------------------------------------------------------------------- exceptions


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ReadError("connection reset by peer"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.WriteError("broken pipe"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_connection_errors_are_retried(respx_mock, model, make_request, clock, emitted, error):
    route = respx_mock.post(URL).mock(side_effect=[error, httpx.Response(200, json=_ok())])
    assert model.request(make_request()).text == "ok"
    assert route.call_count == 2
    assert clock.sleeps == [0.25]
    [event] = emitted.of("transport.retry")
    assert event["status"] is None
    assert event["error"].type == "ModelTransportError"
    assert type(error).__name__ in event["error"].message


def test_a_connection_error_that_persists_keeps_the_httpx_exception_as_cause(
    respx_mock, model, make_request, clock
):
    route = respx_mock.post(URL).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ModelTransportError) as caught:
        model.request(make_request())
    assert route.call_count == 3
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert clock.sleeps == [0.25, 0.5]


@pytest.mark.parametrize(
    "error",
    [httpx.ReadTimeout("read"), httpx.ConnectTimeout("connect"), httpx.PoolTimeout("pool")],
    ids=lambda e: type(e).__name__,
)
def test_timeouts_are_never_transport_retried(respx_mock, model, make_request, clock, error):
    route = respx_mock.post(URL).mock(side_effect=error)
    with pytest.raises(ModelTimeoutError) as caught:
        model.request(make_request())
    assert route.call_count == 1
    assert clock.sleeps == []
    assert caught.value.__cause__ is error


def test_a_local_protocol_error_is_not_retried(respx_mock, model, make_request):
    route = respx_mock.post(URL).mock(side_effect=httpx.LocalProtocolError("bad header"))
    with pytest.raises(ModelTransportError):
        model.request(make_request())
    assert route.call_count == 1


def test_disabled_transport_retry_makes_one_attempt(respx_mock, make_request, clock):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=False)
    route = respx_mock.post(URL).mock(return_value=status(503))
    with pytest.raises(ModelServerError) as caught:
        model.request(make_request())
    assert route.call_count == 1
    assert clock.sleeps == []
    assert not getattr(caught.value, "__notes__", [])


def test_more_attempts_follow_the_exponential_schedule(respx_mock, make_request, clock):
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=TransportRetry(max_attempts=5))
    route = respx_mock.post(URL).mock(return_value=status(503))
    with pytest.raises(ModelServerError):
        model.request(make_request())
    assert route.call_count == 5
    assert clock.sleeps == [0.25, 0.5, 1.0, 2.0]


def test_without_an_agent_clock_the_default_clock_is_used(respx_mock, model):
    respx_mock.post(URL).mock(side_effect=[status(503), httpx.Response(200, json=_ok())])
    virtual = VirtualClock()
    with use_default_clock(virtual):
        model.request(ModelRequest(messages=[Message.user("hi")]))
    (wait,) = virtual.sleeps  # jittered from a stream of its own: up to 25 % less
    assert 0.1875 <= wait <= 0.25


# --------------------------------------------------------------------------- streams


def test_a_failure_before_the_first_chunk_is_retried(
    respx_mock, model, make_request, clock, wire, stream_response
):
    body = wire("openai/stream_text.txt")
    route = respx_mock.post(URL).mock(
        side_effect=[status(503), stream_response(body, fail_after=0), stream_response(body)]
    )
    response = model.request(make_request(stream=True))
    assert response.text == "It is 18°C and sunny in Paris."
    assert route.call_count == 3
    assert clock.sleeps == [0.25, 0.5]


def test_a_stream_is_never_reissued_after_its_first_chunk(
    respx_mock, model, make_request, clock, emitted, wire, stream_response
):
    body = wire("openai/stream_text.txt")
    route = respx_mock.post(URL).mock(
        side_effect=[stream_response(body, fail_after=3), stream_response(body)]
    )
    with pytest.raises(ModelStreamError) as caught:
        model.request(make_request(stream=True))
    assert route.call_count == 1
    assert clock.sleeps == []
    assert emitted.of("transport.retry") == []
    assert isinstance(caught.value.__cause__, httpx.ReadError)
    message = str(caught.value)
    assert "the stream broke after 111 bytes (ReadError: connection reset by peer)" in message
    assert "never re-issued" in message


def test_a_timeout_mid_stream_is_a_stream_error(
    respx_mock, model, make_request, wire, stream_response
):
    body = wire("openai/stream_text.txt")
    respx_mock.post(URL).mock(
        return_value=stream_response(body, fail_after=2, error=httpx.ReadTimeout("idle"))
    )
    with pytest.raises(ModelStreamError) as caught:
        model.request(make_request(stream=True))
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)


def test_a_503_on_a_stream_is_retried_like_any_request(
    respx_mock, model, make_request, clock, wire, stream_response
):
    route = respx_mock.post(URL).mock(
        side_effect=[status(503), stream_response(wire("openai/stream_text.txt"))]
    )
    model.request(make_request(stream=True))
    assert route.call_count == 2
    assert clock.sleeps == [0.25]


# --------------------------------------------------------------------------- async


@pytest.mark.asyncio
async def test_async_retry_waits_through_the_clock(respx_mock, model, make_request, clock, emitted):
    route = respx_mock.post(URL).mock(
        side_effect=[httpx.ConnectError("refused"), status(529), httpx.Response(200, json=_ok())]
    )
    response = await model.arequest(make_request())
    assert response.text == "ok"
    assert route.call_count == 3
    assert clock.sleeps == [0.25, 0.5]
    assert [e["attempt"] for e in emitted.of("transport.retry")] == [1, 2]
    await model.aclose()


@pytest.mark.asyncio
async def test_async_timeouts_are_not_retried(respx_mock, model, make_request, clock):
    route = respx_mock.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(ModelTimeoutError):
        await model.arequest(make_request())
    assert route.call_count == 1
    await model.aclose()


@pytest.mark.asyncio
async def test_async_stream_broken_after_first_chunk(
    respx_mock, model, make_request, clock, wire, astream_response
):
    body = wire("openai/stream_text.txt")
    route = respx_mock.post(URL).mock(
        side_effect=[astream_response(body, fail_after=2), astream_response(body)]
    )
    with pytest.raises(ModelStreamError) as caught:
        await model.arequest(make_request(stream=True))
    assert route.call_count == 1
    assert isinstance(caught.value.__cause__, httpx.ReadError)
    await model.aclose()


@pytest.mark.asyncio
async def test_async_stream_failing_before_first_chunk_is_retried(
    respx_mock, model, make_request, clock, wire, astream_response
):
    body = wire("openai/stream_text.txt")
    route = respx_mock.post(URL).mock(
        side_effect=[astream_response(body, fail_after=0), astream_response(body)]
    )
    response = await model.arequest(make_request(stream=True))
    assert response.text == "It is 18°C and sunny in Paris."
    assert route.call_count == 2
    assert clock.sleeps == [0.25]
    await model.aclose()


# --------------------------------------------------------------------------- other providers


def test_anthropic_overloaded_529_is_retried(respx_mock, make_request, clock, json_response):
    model = AnthropicModel("claude-3-5-haiku-latest", api_key="sk-ant-test-0123456789abcdef")
    route = respx_mock.post("https://api.anthropic.com/v1/messages").mock(
        side_effect=[
            json_response("anthropic/error_529.json", 529),
            json_response("anthropic/messages_text.json"),
        ]
    )
    assert model.request(make_request()).text == "It is 18°C and sunny in Paris."
    assert route.call_count == 2
    assert clock.sleeps == [0.25]


def test_ollama_connection_refused_is_retried_then_raised(respx_mock, make_request, clock):
    model = OllamaModel("llama3.2")
    route = respx_mock.post("http://localhost:11434/api/chat").mock(
        side_effect=httpx.ConnectError("[Errno 111] Connection refused")
    )
    with pytest.raises(ModelTransportError, match="could not connect"):
        model.request(make_request())
    assert route.call_count == 3
    assert clock.sleeps == [0.25, 0.5]


def _ok() -> dict[str, object]:
    return {
        "id": "chatcmpl-ok",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


@pytest.mark.asyncio
async def test_async_stream_answered_with_a_503_is_retried(
    respx_mock, model, make_request, clock, wire, astream_response
):
    route = respx_mock.post(URL).mock(
        side_effect=[status(503), astream_response(wire("openai/stream_text.txt"))]
    )
    response = await model.arequest(make_request(stream=True))
    assert response.text == "It is 18°C and sunny in Paris."
    assert route.call_count == 2
    assert clock.sleeps == [0.25]
    await model.aclose()


def test_a_taxonomy_error_raised_by_the_transport_passes_through(respx_mock, model, make_request):
    # A fault injected as a taxonomy error is not translated twice, nor retried blindly.
    injected = ModelTransportError("injected", model="x")
    route = respx_mock.post(URL).mock(side_effect=injected)
    with pytest.raises(ModelTransportError) as caught:
        model.request(make_request())
    assert caught.value is injected
    assert route.call_count == 1


def test_the_note_added_to_an_error_not_retried_says_why_or_nothing():
    from pytest_agentfaults.errors import ModelHTTPError, ModelTransportError
    from pytest_agentfaults.runtime.models._retry import TransportRetry

    retry = TransportRetry()
    # nothing to say: the error is simply not one a transport retry repeats
    assert retry.decide(ModelHTTPError("bad", status=400), 1) == (None, "")
    assert retry.decide(ValueError("not a model error"), 1) == (None, "")
    assert retry.decide(ModelTransportError("x"), 1) == (None, "")
    assert TransportRetry(max_attempts=1).decide(ModelHTTPError("x", status=503), 1) == (None, "")
    # something to say
    assert retry.decide(ModelHTTPError("x", status=503), 3) == (
        None,
        "transport retry: gave up after 3 attempts",
    )
    assert retry.decide(
        ModelHTTPError("x", status=503, headers={"x-should-retry": "false"}), 1
    ) == (None, "transport retry: not retried, the server said x-should-retry: false")


def test_a_transport_wait_without_a_jitter_draw_is_the_full_backoff():
    from pytest_agentfaults.errors import ModelHTTPError
    from pytest_agentfaults.runtime.models._retry import TransportRetry

    error = ModelHTTPError("x", status=503)
    assert TransportRetry().next_delay(error, 1) == 0.25
    assert TransportRetry().next_delay(error, 2) == 0.5
    # a Retry-After of exactly max_delay is waited out
    asked = ModelHTTPError("x", status=503, headers={"retry-after": "60"})
    assert TransportRetry().next_delay(asked, 1) == 60.0
