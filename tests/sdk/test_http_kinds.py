"""The newer ``http=`` kinds and options, in-process, through the real openai and anthropic SDKs.

Each runs against both SDKs, sync and async; the success answers come from
``http_faults.script``. The same kinds on ``llm_server`` are in ``test_http_kinds_server``.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

from pytest_agentfaults.testing.steps import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

ASK = [{"role": "user", "content": "Weather in Paris?"}]


@dataclass
class Sdk:
    """One SDK, sync or async: ``ask`` sends one request and returns the answer's text."""

    name: str
    mode: str

    @property
    def module(self) -> Any:
        return openai if self.name == "openai" else anthropic

    @property
    def url(self) -> str:
        if self.name == "openai":
            return "https://api.openai.com/v1/chat/completions"
        return "https://api.anthropic.com/v1/messages"

    def _client(self, options: dict[str, Any]) -> Any:
        key = "sk-test" if self.name == "openai" else "sk-ant-test"
        if self.name == "openai":
            kind = openai.OpenAI if self.mode == "sync" else openai.AsyncOpenAI
        else:
            kind = anthropic.Anthropic if self.mode == "sync" else anthropic.AsyncAnthropic
        return kind(api_key=key, **options)

    def _create(self, client: Any, stream: bool) -> Any:
        if self.name == "openai":
            return client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=stream)
        return client.messages.create(
            model="claude-haiku-4-5", max_tokens=64, messages=ASK, stream=stream
        )

    def _text(self, answer: Any) -> str:
        if self.name == "openai":
            return str(answer.choices[0].message.content)
        return str(answer.content[0].text)

    def _piece(self, event: Any) -> str:
        if self.name == "openai":
            return (event.choices[0].delta.content or "") if event.choices else ""
        delta = getattr(event, "delta", None)
        return getattr(delta, "text", "") or ""

    def ask(self, *, stream: bool = False, events: list[Any] | None = None, **options: Any) -> str:
        """The answer's text (streamed: the pieces joined); ``events`` collects stream events."""
        seen = [] if events is None else events
        if self.mode == "sync":
            with self._client(options) as client:
                answer = self._create(client, stream)
                if not stream:
                    return self._text(answer)
                for event in answer:
                    seen.append(event)
                return "".join(map(self._piece, seen))

        async def go() -> str:
            async with self._client(options) as client:
                answer = await self._create(client, stream)
                if not stream:
                    return self._text(answer)
                async for event in answer:
                    seen.append(event)
                return "".join(map(self._piece, seen))

        return asyncio.run(go())


@pytest.fixture(
    params=[("openai", "sync"), ("openai", "async"), ("anthropic", "sync"), ("anthropic", "async")],
    ids="-".join,
)
def sdk(request, virtual_clock) -> Sdk:
    virtual_clock.patch_sleep()  # a no-op where virtual time is the default
    return Sdk(*request.param)


@pytest.fixture
def no_jitter(monkeypatch):
    monkeypatch.setattr("openai._base_client.random", lambda: 0.0)
    monkeypatch.setattr("anthropic._base_client.random", lambda: 0.0)


def statuses(trace) -> list[Any]:
    return [e.status for e in trace.of("http.request")]


# ----------------------------------------------------------------------------- bodies


def test_not_json_a_json_content_type_over_a_proxys_text(sdk, faults, http_faults):
    faults.http(url=sdk.url).not_json()
    http_faults.script(sdk.name, [say("unused")], strict=False)
    http_faults.assert_all_called = False
    with pytest.raises(json.JSONDecodeError):  # neither SDK wraps it
        sdk.ask(max_retries=0)


def test_proxy_html_is_retried_as_a_5xx(sdk, faults, http_faults, trace):
    faults.http(url=sdk.url).proxy_html(504)
    http_faults.script(sdk.name, [say("Sunny.")])
    assert sdk.ask() == "Sunny."
    assert statuses(trace) == [504, 200]


def test_proxy_html_sends_an_html_page(sdk, faults):
    faults.http(url=sdk.url).proxy_html()
    with pytest.raises(sdk.module.InternalServerError) as raised:
        sdk.ask(max_retries=0)
    response = raised.value.response
    assert response.status_code == 502
    assert response.headers["content-type"] == "text/html"
    assert "<title>502 Bad Gateway</title>" in response.text


def test_context_length_is_the_providers_400_and_is_not_retried(sdk, faults, trace):
    faults.http(url=sdk.url).context_length()
    with pytest.raises(sdk.module.BadRequestError) as raised:
        sdk.ask()
    body = raised.value.body
    if sdk.name == "openai":
        assert (body["code"], body["param"]) == ("context_length_exceeded", "messages")
        assert "maximum context length" in body["message"]
    else:
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith("prompt is too long")
    assert statuses(trace) == [400]


def test_quota_is_a_per_minute_429_honoured_with_its_retry_after(
    sdk, faults, http_faults, trace, virtual_clock
):
    faults.http(url=sdk.url).quota(retry_after=2)
    http_faults.script(sdk.name, [say("Within quota.")])
    assert sdk.ask() == "Within quota."
    assert statuses(trace) == [429, 200]
    assert virtual_clock.sleeps == [2.0]


def test_quota_carries_the_providers_rate_limit_headers(sdk, faults):
    faults.http(url=sdk.url).quota()
    with pytest.raises(sdk.module.RateLimitError) as raised:
        sdk.ask(max_retries=0)
    headers = raised.value.response.headers
    if sdk.name == "openai":
        assert raised.value.code == "rate_limit_exceeded"
        assert "tokens per min (TPM)" in raised.value.message
        assert headers["x-ratelimit-remaining-tokens"] == "0"
    else:
        assert raised.value.body["error"]["type"] == "rate_limit_error"
        assert headers["anthropic-ratelimit-input-tokens-remaining"] == "0"
        reset = datetime.fromisoformat(headers["anthropic-ratelimit-input-tokens-reset"])
        assert 0 < reset.timestamp() - time.time() <= 2
    # with no retry_after=, the 1 s the body asks for ("try again in 1s"), in the headers too
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("1", "1000")


# ----------------------------------------------------------------------------- headers


def test_should_retry_true_makes_a_400_retried(sdk, faults, http_faults, trace):
    faults.http(url=sdk.url).status(400, should_retry=True)
    http_faults.script(sdk.name, [say("Retried.")])
    assert sdk.ask() == "Retried."
    assert statuses(trace) == [400, 200]


def test_should_retry_false_stops_the_retries_of_a_503(sdk, faults, trace):
    faults.http(url=sdk.url).status(503, should_retry=False)
    with pytest.raises(sdk.module.InternalServerError):
        sdk.ask()
    assert statuses(trace) == [503]


@pytest.mark.parametrize(
    ("fmt", "seconds", "sent"),
    [
        ("seconds", 2, {"retry-after": "2"}),
        ("ms", 0.02, {"retry-after-ms": "20"}),
        ("both", 1.5, {"retry-after": "2", "retry-after-ms": "1500"}),
    ],
)
def test_retry_after_in_one_header_or_both(
    sdk, faults, http_faults, virtual_clock, fmt, seconds, sent
):
    faults.http(url=sdk.url).status(429, retry_after=seconds, retry_after_format=fmt).times(2)
    http_faults.script(sdk.name, [say("ok")])
    with pytest.raises(sdk.module.RateLimitError) as raised:
        sdk.ask(max_retries=0)
    headers = raised.value.response.headers
    assert {k: v for k, v in headers.items() if k.startswith("retry-after")} == sent
    assert sdk.ask() == "ok"
    assert virtual_clock.sleeps == [float(seconds)]


def test_retry_after_as_a_date_is_honoured(sdk, faults, http_faults, virtual_clock):
    faults.http(url=sdk.url).status(503, retry_after=3, retry_after_format="date")
    http_faults.script(sdk.name, [say("ok")])
    assert sdk.ask() == "ok"
    (wait,) = virtual_clock.sleeps
    assert 2.0 < wait <= 4.0  # an HTTP date has whole seconds


def test_the_date_header_is_an_http_date(sdk, faults):
    faults.http(url=sdk.url).status(429, retry_after=5, retry_after_format="date")
    with pytest.raises(sdk.module.RateLimitError) as raised:
        sdk.ask(max_retries=0)
    headers = raised.value.response.headers
    assert "retry-after-ms" not in headers
    assert email.utils.parsedate_to_datetime(headers["retry-after"]).tzname() == "UTC"


# ----------------------------------------------------------------------------- streams


def test_a_stream_cut_after_n_events(sdk, faults):
    faults.http(url=sdk.url).truncated_stream(after=2)
    events: list[Any] = []
    # openai wraps a failed stream read; anthropic lets httpx2's error through
    expected = openai.APIConnectionError if sdk.name == "openai" else httpx2.RemoteProtocolError
    with pytest.raises(expected):
        sdk.ask(stream=True, events=events)
    assert len(events) == 2


def test_a_stalled_stream_ends_in_the_clients_read_timeout(sdk, faults):
    faults.http(url=sdk.url).stall(after=1)
    events: list[Any] = []
    expected = openai.APITimeoutError if sdk.name == "openai" else httpx2.ReadTimeout
    with pytest.raises(expected):
        sdk.ask(stream=True, events=events)
    assert len(events) == 1


def test_a_stalled_body_is_a_timeout_the_sdk_retries(sdk, faults, http_faults, trace):
    faults.http(url=sdk.url).stall()
    http_faults.script(sdk.name, [say("After the stall.")])
    assert sdk.ask() == "After the stall."
    assert [e.error and e.error.type for e in trace.of("http.request")] == ["ReadTimeout", None]


def test_a_slow_first_token_within_the_read_timeout_takes_virtual_time(
    sdk, faults, http_faults, trace, virtual_clock
):
    faults.http(url=sdk.url).slow_first_token(delay=20)
    http_faults.script(sdk.name, [say("Slow but fine.")])
    assert sdk.ask(stream=True) == "Slow but fine."
    assert virtual_clock.now() >= 20
    assert statuses(trace) == [200]
    assert trace.of("http.request")[0].field("fault") == "slow_first_token"


def test_a_slow_first_token_past_the_read_timeout_times_out(sdk, faults, http_faults, trace):
    faults.http(url=sdk.url).slow_first_token(delay=20)
    # the client never got the answer, so, as for a stall, the step stays for the retry
    script = http_faults.script(sdk.name, [say("The retry gets the answer.")])
    assert sdk.ask(timeout=5.0) == "The retry gets the answer."
    assert [e.error and e.error.type for e in trace.of("http.request")] == ["ReadTimeout", None]
    assert len(script.requests) == 1


def test_a_slow_first_token_past_the_timeout_keeps_a_streamed_step_too(sdk, faults, http_faults):
    faults.http(url=sdk.url).slow_first_token(delay=20)
    http_faults.script(sdk.name, [say("Asked again.")])
    expected = openai.APITimeoutError if sdk.name == "openai" else httpx2.ReadTimeout
    with pytest.raises(expected):  # no SDK re-issues a stream: the app asks again
        sdk.ask(stream=True, timeout=5.0)
    assert sdk.ask(stream=True, timeout=5.0) == "Asked again."
