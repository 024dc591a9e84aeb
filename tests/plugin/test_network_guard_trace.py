"""A request the network guard refuses is an ``http.request`` of the trace, not judged.

The refusal is the kit's answer to a request nothing of the test answered (a setup
mistake that fails the test at teardown), not a server's failure: the trace shows the
attempt (``refused: True``, its URL redacted as any), so a user counting attempts counts
it, and the verdict leaves it out, whether or not the test's HTTP fault layer is on.
The inner tests stand a fake connection pool where the network would be, as in
``test_network_guard.py``: nothing here leaves the machine.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

PRELUDE = """
import asyncio

import anthropic
import httpcore2
import httpx
import httpx2
import openai
import pytest

SENT = []


def handle_request(self, request):
    SENT.append(request.url.host.decode())
    return httpcore2.Response(500)


async def handle_async_request(self, request):
    return handle_request(self, request)


@pytest.fixture(autouse=True)
def network(monkeypatch):
    monkeypatch.setattr(httpcore2.ConnectionPool, "handle_request", handle_request)
    monkeypatch.setattr(httpcore2.AsyncConnectionPool, "handle_async_request", handle_async_request)
    yield
    assert SENT == []


KEY = dict(api_key="sk-test-0123456789abcdef")
ASK = [{"role": "user", "content": "hi"}]


def ask(sdk, mode):
    if sdk == "openai":
        cls = openai.AsyncOpenAI if mode == "async" else openai.OpenAI
        call = lambda c: c.chat.completions.create(model="gpt-4o", messages=ASK)
    else:
        cls = anthropic.AsyncAnthropic if mode == "async" else anthropic.Anthropic
        call = lambda c: c.messages.create(model="claude-haiku-4-5", max_tokens=9, messages=ASK)
    if mode == "sync":
        with cls(**KEY) as client:
            return call(client)

    async def go():
        async with cls(**KEY) as client:
            return await call(client)

    return asyncio.run(go())


def refused_attempt(trace, url):
    (event,) = trace.of("http.request")
    assert event.field("refused") is True
    assert event.field("url") == url
    assert "refused" in event.detail
    assert "never sent" in event.detail
    return event
"""


def run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makepyfile(test_net=PRELUDE + body)
    return pytester.runpytest("-p", "no:randomly")


def test_an_sdk_request_refused_is_one_attempt_in_the_trace_and_not_judged(pytester):
    result = run(
        pytester,
        """
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
@pytest.mark.parametrize("layer", ["guard", "http_faults"])
def test_it(request, trace, sdk, mode, layer):
    if layer == "http_faults":
        request.getfixturevalue("http_faults")
    errors = (openai.PermissionDeniedError, anthropic.PermissionDeniedError)
    with pytest.raises(errors, match="tests do not reach the network"):
        ask(sdk, mode)
    url = (
        "https://api.openai.com/v1/chat/completions"
        if sdk == "openai"
        else "https://api.anthropic.com/v1/messages"
    )
    event = refused_attempt(trace, url)
    assert event.status == 403
    assert event.field("client").startswith(sdk)
    verdict = trace.verdict()
    assert (verdict.codes, verdict.requests, verdict.attempts, verdict.failures) == ([], 0, 0, 0)
""",
    )
    result.assert_outcomes(passed=8, errors=8)  # each fails at teardown, naming the request


def test_a_plain_client_refused_is_in_the_trace_with_its_error_and_its_url_redacted(pytester):
    result = run(
        pytester,
        """
@pytest.mark.parametrize("library", [httpx, httpx2])
def test_it(trace, library):
    with pytest.raises(AssertionError, match="tests do not reach the network"):
        library.get("https://example.com/a?key=sk-test-0123456789abcdef")
    event = refused_attempt(trace, "https://example.com/a?key=[REDACTED]")
    assert event.error.type == "UnmatchedRequestError"
    assert event.error.retryable is False
    assert "sk-test" not in event.detail
    assert trace.verdict().codes == []
""",
    )
    result.assert_outcomes(passed=2, errors=2)


def test_a_refused_request_the_app_asks_again_is_no_finding(pytester):
    # a 403 marked x-should-retry: false asked again at once would be retried_non_retryable
    # and no_backoff; a refusal is no server's answer, so the verdict leaves it out
    result = run(
        pytester,
        """
@pytest.mark.parametrize("layer", ["guard", "http_faults"])
def test_it(request, trace, layer):
    if layer == "http_faults":
        request.getfixturevalue("http_faults")
    for _ in range(3):
        with pytest.raises(openai.PermissionDeniedError):
            ask("openai", "sync")
    assert len(trace.of("http.request")) == 3
    assert trace.verdict().codes == []
""",
    )
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.no_fnmatch_line("*HTTP retr*")  # never sent: asked again, no retry
