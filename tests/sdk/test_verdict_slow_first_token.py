"""A client that gave up on a held first chunk (``slow_first_token``) is judged as one.

In-process the kit answers a read timeout shorter than the delay with the timeout itself;
over ``llm_server`` the answer is really held on the socket, and the server sees the
client close the connection before the first chunk went out. Either way the request's
``http.request`` event carries the client's ``ReadTimeout``, so the verdict says
``gave_up_early`` when nothing asked again (a started stream is not retried by the SDKs).
Real SDKs, sync and async; over the socket the waits are real and short.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_agentfaults.testing import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ASK = [{"role": "user", "content": "hi"}]
ENDPOINTS = {
    "chat": ("openai", "https://api.openai.com/v1/chat/completions"),
    "responses": ("openai-responses", "https://api.openai.com/v1/responses"),
    "anthropic": ("anthropic", "https://api.anthropic.com/v1/messages"),
}
TIMEOUT = 0.05  # the client's read timeout: real seconds over the socket
DELAY = 0.3  # the held first chunk, past it


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


def _ask(client: Any, endpoint: str, *, stream: bool) -> Any:
    if endpoint == "chat":
        return client.chat.completions.create(model="m", messages=ASK, stream=stream)
    if endpoint == "responses":
        return client.responses.create(model="m", input="hi", stream=stream)
    return client.messages.create(model="m", max_tokens=9, messages=ASK, stream=stream)


def _sync(sdk: Any, endpoint: str, stream: bool, **options: Any) -> Any:
    with sdk(**options) as client:
        answer = _ask(client, endpoint, stream=stream)
        return list(answer) if stream else answer


def _async(sdk: Any, endpoint: str, stream: bool, **options: Any) -> Any:
    async def go() -> Any:
        async with sdk(**options) as client:
            answer = await _ask(client, endpoint, stream=stream)
            return [event async for event in answer] if stream else answer

    return asyncio.run(go())


def ask(request, endpoint: str, where: str, *, mode: str, stream: bool = True, **options):
    """``endpoint`` asked once through the real SDK, the fault on; what it raised, or None."""
    provider, url = ENDPOINTS[endpoint]
    faults = request.getfixturevalue("faults")
    faults.http(url=url).slow_first_token(delay=options.pop("delay", DELAY))
    if where == "llm_server":
        server = request.getfixturevalue("llm_server")
        server.script([say("Slow start.")], strict=False)
        options["base_url"] = server.base_url("anthropic" if provider == "anthropic" else "openai")
    else:
        routes = request.getfixturevalue("http_faults")
        routes.script(provider, [say("Slow start.")], strict=False)
        routes.assert_all_called = False
    if provider == "anthropic":
        sdk = anthropic.AsyncAnthropic if mode == "async" else anthropic.Anthropic
    else:
        sdk = openai.AsyncOpenAI if mode == "async" else openai.OpenAI
    options.setdefault("timeout", TIMEOUT)
    run = _async if mode == "async" else _sync
    try:
        run(sdk, endpoint, stream, api_key="sk-test-0123456789abcdef", **options)
    except Exception as exc:  # the test looks at what the SDK raised
        return exc
    return None


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_a_stream_given_up_on_before_its_first_chunk_is_gave_up_early(
    request, trace, endpoint, where, mode
):
    raised = ask(request, endpoint, where, mode=mode)
    # openai wraps the read timeout of a stream's first read in APITimeoutError; anthropic
    # hands httpx's ReadTimeout through from the iteration
    assert type(raised).__name__ in ("APITimeoutError", "ReadTimeout")
    (attempt,) = trace.of("http.request")
    assert attempt.field("fault") == "slow_first_token"
    assert attempt.error is not None
    assert attempt.error.type == "ReadTimeout"
    verdict = trace.verdict()
    assert verdict.codes == ["gave_up_early"]
    assert "ReadTimeout (slow_first_token)" in verdict.findings[0].message


@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
def test_an_unstreamed_request_given_up_on_without_retries_is_gave_up_early(request, trace, where):
    raised = ask(request, "chat", where, mode="sync", stream=False, max_retries=0)
    assert isinstance(raised, openai.APITimeoutError)
    assert trace.verdict().codes == ["gave_up_early"]


@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
def test_an_unstreamed_request_the_sdk_retried_is_one_request_of_two_attempts(
    request, trace, where
):
    assert ask(request, "chat", where, mode="sync", stream=False, max_retries=1) is None
    first, second = trace.of("http.request")
    assert first.error is not None
    assert first.error.type == "ReadTimeout"
    assert second.error is None
    assert trace.verdict().codes == []


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
def test_a_first_chunk_the_client_waited_for_is_no_failure(request, trace, where, mode):
    assert ask(request, "anthropic", where, mode=mode, delay=0.05, timeout=5) is None
    (attempt,) = trace.of("http.request")
    assert attempt.status == 200
    assert attempt.error is None
    assert trace.verdict().codes == []
