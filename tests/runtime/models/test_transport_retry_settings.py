"""TransportRetry's settings at their edges, the messages that say how to fix a bad one,
and what a transport retry records for the reader of a trace."""

from __future__ import annotations

import httpx
import pytest

from pytest_agentfaults.errors import ModelServerError, UsageError
from pytest_agentfaults.runtime.models._retry import TransportRetry
from pytest_agentfaults.runtime.models.openai import OpenAIModel
from pytest_agentfaults.testing._wire import JSON_TYPE, error_body

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-transport0123456789"


@pytest.fixture
def model():
    with OpenAIModel("gpt-4o-mini", api_key=KEY) as client:
        yield client


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


def status(code: int, **headers: str) -> httpx.Response:
    body = error_body("openai", code, f"status {code}")
    return httpx.Response(code, content=body, headers={"content-type": JSON_TYPE, **headers})


# --------------------------------------------------------------------------- edges


@pytest.mark.parametrize(
    "kwargs",
    [
        {"jitter": 0},
        {"jitter": 1},
        {"multiplier": 1},
        {"multiplier": 1.5},
        {"retry_statuses": {100, 599}},
        {"max_attempts": 1},
    ],
)
def test_each_setting_accepts_the_edges_of_its_range(kwargs):
    retry = TransportRetry(**kwargs)
    for name, value in kwargs.items():
        assert getattr(retry, name) == value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jitter": 1.5}, "TransportRetry(jitter=1.5): use a fraction in [0, 1]"),
        ({"jitter": "0.5"}, "TransportRetry(jitter='0.5'): use a fraction in [0, 1]"),
        ({"retry_statuses": {600}}, "TransportRetry(retry_statuses={600}): use HTTP status codes"),
        (
            {"max_attempts": 0},
            "TransportRetry(max_attempts=0): it counts the first attempt, so use 1 or more "
            "(or transport_retry=False to disable)",
        ),
    ],
)
def test_a_setting_past_its_edge_is_refused_with_the_fix(kwargs, message):
    with pytest.raises(UsageError) as caught:
        TransportRetry(**kwargs)
    assert str(caught.value) == message


def test_a_wrong_transport_retry_argument_says_what_to_pass():
    with pytest.raises(UsageError) as caught:
        OpenAIModel("gpt-4o-mini", api_key=KEY, transport_retry=3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "transport_retry=3: pass a TransportRetry(...), True for the defaults, "
        "or False / None to disable it"
    )


def test_decide_without_a_jitter_draw_gives_the_full_backoff():
    retry = TransportRetry(jitter=1)
    error = ModelServerError("x", status=503)
    assert retry.decide(error, 1)[0] == 0.25
    assert retry.decide(error, 2)[0] == retry.next_delay(error, 2) == 0.5


# --------------------------------------------------------------------------- the trace


def test_a_retried_connection_failure_names_its_cause(respx_mock, model, make_request, emitted):
    respx_mock.post(URL).mock(
        side_effect=[httpx.ConnectError("refused"), httpx.Response(200, json=_ok())]
    )
    assert model.request(make_request()).text == "ok"
    (retry,) = emitted.of("transport.retry")
    assert retry["status"] is None
    assert retry["detail"] == (
        "openai:gpt-4o-mini: ConnectError; waiting 0.25s (backoff) before attempt 2/3"
    )


def test_a_retry_records_should_retry_only_when_the_server_said_so(
    respx_mock, model, make_request, emitted
):
    respx_mock.post(URL).mock(
        side_effect=[
            status(503),
            status(503, **{"x-should-retry": "true"}),
            httpx.Response(200, json=_ok()),
        ]
    )
    assert model.request(make_request()).text == "ok"
    unmarked, marked = emitted.of("transport.retry")
    assert "should_retry" not in unmarked
    assert marked["should_retry"] is True
