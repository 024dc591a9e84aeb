"""The verdict judges the official SDKs by their own retry rules (issue 19.3) and names
them in its advice (issue 21.6), through the real openai and anthropic SDKs.

The rules, as read in the installed ``openai/_base_client.py`` and
``anthropic/_base_client.py``: 408, 409, 429 and 5xx are retried, and so are timeouts and
dropped connections; ``x-should-retry: true|false`` overrides the status; a
``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date) above 0 is waited (openai up to
120 s, above which it does not retry; anthropic any), else ``min(0.5 * 2**n, 8)`` less up to
25 % jitter; ``max_retries`` 2 by default. No SDK re-issues a stream that has started.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from pathlib import Path

import httpx
import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"
WIRE = Path(__file__).parents[2] / "fixtures" / "wire"
CHAT = (WIRE / "openai" / "chat_text.json").read_bytes()
CHAT_STREAM = (WIRE / "openai" / "stream_text.txt").read_bytes()
MESSAGE = (WIRE / "anthropic" / "messages_text.json").read_bytes()
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
JSON = {"content-type": "application/json"}
ERROR = {"error": {"message": "injected", "type": "server_error"}}


def chat_ok() -> httpx.Response:
    return httpx.Response(200, content=CHAT, headers=JSON)


def message_ok() -> httpx.Response:
    return httpx.Response(200, content=MESSAGE, headers=JSON)


def status(code: int, **headers: str) -> httpx.Response:
    return httpx.Response(
        code, json=ERROR, headers={k.replace("_", "-"): v for k, v in headers.items()}
    )


def ask(client, **options):
    return client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, **options)


def ask_anthropic(client):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES)


@pytest.fixture
def openai_sdk():
    with openai.OpenAI(api_key="sk-test-0123456789abcdef") as made:
        yield made


@pytest.fixture
def anthropic_sdk():
    with anthropic.Anthropic(api_key="sk-ant-test-0123456789abcdef") as made:
        yield made


# ------------------------------------------------------------------- x-should-retry


def test_openai_obeys_x_should_retry_false_and_passes(
    openai_sdk, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[status(503, x_should_retry="false")])
    with pytest.raises(openai.InternalServerError):
        ask(openai_sdk)
    (only,) = trace.of("http.request")
    assert only.field("should_retry") is False
    assert only.field("client") == "openai.OpenAI"
    trace.assert_resilient()


def test_async_openai_retries_a_400_marked_retryable_and_passes(http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[status(400, x_should_retry="true"), chat_ok()])

    async def go():
        async with openai.AsyncOpenAI(api_key="sk-test-0123456789abcdef") as client:
            return await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)

    asyncio.run(go())
    first, second = trace.of("http.request")
    assert (first.status, first.field("should_retry"), second.status) == (400, True, 200)
    assert first.field("client") == "openai.AsyncOpenAI"
    trace.assert_resilient()


def test_anthropic_obeys_x_should_retry_both_ways(anthropic_sdk, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(ANTHROPIC_URL).mock(
        side_effect=[
            status(400, x_should_retry="true"),
            message_ok(),
            status(529, x_should_retry="false"),
        ]
    )
    ask_anthropic(anthropic_sdk)
    with pytest.raises(anthropic.APIStatusError):
        ask_anthropic(anthropic_sdk)
    assert [e.status for e in trace.of("http.request")] == [400, 200, 529]
    trace.assert_resilient()


def test_async_anthropic_marked_not_retryable_passes(http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(ANTHROPIC_URL).mock(side_effect=[status(503, x_should_retry="false")])

    async def go():
        async with anthropic.AsyncAnthropic(api_key="sk-ant-test-0123456789abcdef") as client:
            await client.messages.create(model="m", max_tokens=10, messages=MESSAGES)

    with pytest.raises(anthropic.InternalServerError):
        asyncio.run(go())
    assert trace.of("http.request")[0].field("client") == "anthropic.AsyncAnthropic"
    trace.assert_resilient()


# ------------------------------------------------------------------- server-asked waits


def test_obeying_a_20ms_retry_after_ms_is_not_no_backoff(
    openai_sdk, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[status(429, retry_after_ms="20"), chat_ok()])
    ask(openai_sdk)
    assert virtual_clock.sleeps == [0.02]
    trace.assert_resilient()


def http_date(seconds_ahead: float) -> str:
    return email.utils.formatdate(time.time() + seconds_ahead, usegmt=True)


def test_a_date_retry_after_is_recorded_and_the_sdk_that_waits_it_passes(
    openai_sdk, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(
        side_effect=[status(429, retry_after=http_date(30)), chat_ok()]
    )
    ask(openai_sdk)
    first = trace.of("http.request")[0]
    assert 28.0 <= first.field("retry_after") <= 30.0
    assert first.field("retry_after_date") is True
    assert 28.0 <= virtual_clock.sleeps[0] <= 30.0
    trace.assert_resilient()


def test_a_date_retry_after_ignored_by_a_plain_loop_is_caught(http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(
        side_effect=[status(429, retry_after=http_date(30)), chat_ok()]
    )
    with httpx.Client() as client:
        for _ in range(2):
            if client.post(OPENAI_URL, content=b"{}").status_code == 200:
                break
            time.sleep(1.0)  # virtual: the server asked for 30 s
    result = trace.verdict()
    assert result.codes == ["retry_after_ignored"]
    assert "python-httpx" in result.findings[0].message or "httpx" in result.findings[0].message


# ------------------------------------------------------------------- storms


def test_max_retries_5_riding_out_five_503s_is_not_a_storm(http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[status(503)] * 5 + [chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=5) as client:
        ask(client)
    assert [e.field("retry_count") for e in trace.of("http.request")] == [0, 1, 2, 3, 4, 5]
    trace.assert_resilient()


# ------------------------------------------------------------------- the app's own loop
# Each call of an SDK numbers its attempts from 0 (x-stainless-retry-count), so a loop
# around the SDK shows as calls that all start at 0: still one request, judged as a retry.


def app_loop(client, waits, error=openai.APIStatusError):
    """The app's own retry loop: call, and on ``error`` wait the next of ``waits``."""
    for wait in [*waits, None]:
        try:
            return ask(client)
        except error:
            if wait is None:
                raise
            time.sleep(wait)  # virtual: the test uses the kit
    return None


def test_an_app_loop_retrying_a_401_around_the_sdk_is_retried_non_retryable(http_faults, trace):
    http_faults.post(OPENAI_URL).mock(side_effect=[status(401), status(401), chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=2) as client:
        app_loop(client, [1.0, 1.0])
    result = trace.verdict()
    assert result.codes == ["retried_non_retryable"]
    assert "the repeat came from code around it" in result.findings[0].advice


def test_an_app_loop_past_x_should_retry_false_is_retried_non_retryable(http_faults, trace):
    refused = status(503, x_should_retry="false")
    http_faults.post(OPENAI_URL).mock(side_effect=[refused, refused, chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef") as client:
        app_loop(client, [1.0, 1.0])
    assert trace.verdict().codes == ["retried_non_retryable"]


def test_an_app_loop_with_backoff_around_an_sdk_without_retries_is_resilient(
    http_faults, trace, virtual_clock
):
    http_faults.post(OPENAI_URL).mock(side_effect=[status(503)] * 3 + [chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=0) as client:
        app_loop(client, [1.0, 2.0, 4.0])
    assert virtual_clock.sleeps == [1.0, 2.0, 4.0]
    trace.assert_resilient()


def test_an_app_loop_hammering_an_sdk_without_retries_is_no_backoff_and_a_storm(http_faults, trace):
    http_faults.post(OPENAI_URL).mock(side_effect=[status(503)] * 20 + [chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=0) as client:
        app_loop(client, [0.0] * 20)
    result = trace.verdict()
    assert {"no_backoff", "retry_storm"} <= set(result.codes)
    assert "gave_up_early" not in result.codes


def test_an_app_loop_cutting_a_retry_after_short_is_retry_after_ignored(http_faults, trace):
    limited = status(429, retry_after="10")
    http_faults.post(OPENAI_URL).mock(side_effect=[limited, chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=0) as client:
        app_loop(client, [1.0])
    assert trace.verdict().codes == ["retry_after_ignored"]


def test_an_app_loop_around_an_sdk_that_retries_is_judged_per_call(
    http_faults, trace, virtual_clock
):
    # two calls of max_retries=2 (3 attempts each, the SDK's own backoff), 10 s apart
    http_faults.post(OPENAI_URL).mock(side_effect=[status(503)] * 5 + [chat_ok()])
    with openai.OpenAI(api_key="sk-test-0123456789abcdef") as client:
        app_loop(client, [10.0])
    assert [e.field("retry_count") for e in trace.of("http.request")] == [0, 1, 2, 0, 1, 2]
    trace.assert_resilient()


# ------------------------------------------------------------------- streams


def stream_ok() -> httpx.Response:
    return httpx.Response(200, content=CHAT_STREAM, headers={"content-type": "text/event-stream"})


def read_stream(client) -> str:
    stream = ask(client, stream=True)
    return "".join(c.delta.content or "" for chunk in stream for c in chunk.choices)


@pytest.mark.inject_fault(http="truncated_stream", url=OPENAI_URL)
def test_a_cut_stream_the_app_requests_again_is_resilient(
    openai_sdk, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[stream_ok()])
    try:
        read_stream(openai_sdk)
    except openai.APIError:  # no SDK re-issues a started stream: the app does
        virtual_clock.sleep(0.5)  # the app waits before asking again
        assert read_stream(openai_sdk)
    assert [e.field("fault") for e in trace.of("http.request")] == ["truncated_stream", None]
    trace.assert_resilient()


@pytest.mark.inject_fault(http="truncated_stream", url=OPENAI_URL)
def test_a_cut_stream_never_requested_again_is_a_finding_with_sdk_advice(openai_sdk, trace):
    with pytest.raises(openai.APIError):
        read_stream(openai_sdk)
    result = trace.verdict()
    assert result.codes == ["gave_up_early"]
    advice = result.findings[0].advice
    assert "openai.APIError" in advice
    assert "stream" in advice
    assert "max_retries above 0" not in advice


# ------------------------------------------------------------------- advice per client


@pytest.mark.inject_fault(http=503)
def test_gave_up_early_advice_names_openai_and_max_retries(http_faults, trace):
    client = openai.OpenAI(api_key="sk-test-0123456789abcdef", max_retries=0)
    with client, pytest.raises(openai.InternalServerError):
        ask(client)
    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early"
    assert "official openai SDK (openai.OpenAI)" in found.message
    assert "max_retries" in found.advice
    assert "openai.OpenAI(" in found.advice


@pytest.mark.inject_fault(http=529, url=ANTHROPIC_URL)
def test_gave_up_early_advice_names_anthropic(http_faults, trace):
    client = anthropic.Anthropic(api_key="sk-ant-test-0123456789abcdef", max_retries=0)
    with client, pytest.raises(anthropic.APIStatusError):
        ask_anthropic(client)
    (found,) = trace.verdict().findings
    assert "anthropic.Anthropic(" in found.advice
    assert "max_retries" in found.advice


# ------------------------------------------------------------------- malformed bodies


@pytest.mark.inject_fault(http="malformed_body", url=OPENAI_URL)
def test_an_html_page_taken_as_the_completion_is_a_finding(openai_sdk, trace):
    answer = ask(openai_sdk)
    assert isinstance(answer, str)  # the SDK hands the proxy's page over as the answer
    assert "<html>" in answer
    result = trace.verdict()
    assert result.codes == ["malformed_body_accepted"]
    (found,) = result.findings
    assert "official openai SDK (openai.OpenAI)" in found.message
    assert "openai.OpenAI" in found.advice


@pytest.mark.inject_fault(http="malformed_body", url=OPENAI_URL)
def test_an_html_page_the_app_requests_again_passes(openai_sdk, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).mock(side_effect=[chat_ok()])
    answer = ask(openai_sdk)
    if isinstance(answer, str):  # not a completion: treat it as a failure
        virtual_clock.sleep(0.5)  # the app waits before asking again
        answer = ask(openai_sdk)
    assert answer.choices[0].message.content
    trace.assert_resilient()


@pytest.mark.inject_fault(http="not_json", url=OPENAI_URL)
def test_a_json_answer_that_is_not_json_raises_in_openai_and_giving_up_is_the_finding(
    openai_sdk, trace
):
    # the SDK raises on it (json.JSONDecodeError, no openai.APIError): nothing was used, the
    # app gave the answer up
    with pytest.raises(json.JSONDecodeError):
        ask(openai_sdk)
    result = trace.verdict()
    assert result.codes == ["gave_up_early"]
    (found,) = result.findings
    assert "the SDK raised json.JSONDecodeError on it" in found.message
    assert "used" not in found.message
    assert "json.JSONDecodeError" in found.advice
    assert "isinstance(result, str)" not in found.advice


@pytest.mark.inject_fault(http="not_json", url=ANTHROPIC_URL)
def test_a_json_answer_that_is_not_json_raises_in_anthropic_too(anthropic_sdk, trace):
    with pytest.raises(json.JSONDecodeError):
        ask_anthropic(anthropic_sdk)
    assert trace.verdict().codes == ["gave_up_early"]


@pytest.mark.inject_fault(http="not_json", url=OPENAI_URL)
def test_a_json_answer_that_is_not_json_the_app_requests_again_passes(
    openai_sdk, http_faults, trace, virtual_clock
):
    http_faults.post(OPENAI_URL).mock(side_effect=[chat_ok()])
    try:
        ask(openai_sdk)
    except json.JSONDecodeError:
        virtual_clock.sleep(0.5)
        assert ask(openai_sdk).choices[0].message.content
    trace.assert_resilient()


@pytest.mark.inject_fault(http="malformed_body", url=ANTHROPIC_URL)
def test_an_empty_anthropic_stream_is_a_finding(anthropic_sdk, trace):
    stream = anthropic_sdk.messages.create(
        model="claude-haiku-4-5", max_tokens=100, messages=MESSAGES, stream=True
    )
    assert list(stream) == []  # no event, no error: silently nothing
    result = trace.verdict()
    assert result.codes == ["malformed_body_accepted"]
    assert "anthropic.Anthropic" in result.findings[0].advice


@pytest.mark.inject_fault(http="malformed_body", url=ANTHROPIC_URL)
def test_an_empty_async_anthropic_stream_is_a_finding(trace):
    async def go():
        async with anthropic.AsyncAnthropic(api_key="sk-ant-test-0123456789abcdef") as client:
            stream = await client.messages.create(
                model="m", max_tokens=10, messages=MESSAGES, stream=True
            )
            return [event async for event in stream]

    assert asyncio.run(go()) == []
    assert trace.verdict().codes == ["malformed_body_accepted"]


# ------------------------------------------------------------------- over the socket


@pytest.mark.inject_fault(http=503)
def test_over_llm_server_the_sdk_is_named_and_judged_by_its_rules(llm_server, trace):
    from pytest_agentfaults.testing import say

    llm_server.script([say("never reached")], strict=False)
    client = openai.OpenAI(
        base_url=llm_server.base_url("openai"), api_key="sk-test-0123456789", max_retries=0
    )
    with client, pytest.raises(openai.InternalServerError):
        ask(client)
    (only,) = trace.of("http.request")
    assert only.field("client") == "openai.OpenAI"
    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early"
    assert "openai.OpenAI(max_retries=2)" in found.advice


@pytest.mark.inject_fault(http=529, times=2)
def test_over_llm_server_anthropic_riding_out_529s_passes(llm_server, trace, virtual_clock):
    from pytest_agentfaults.testing import say

    virtual_clock.patch_sleep()
    llm_server.script([say("It is sunny.")])
    with anthropic.Anthropic(
        base_url=llm_server.base_url("anthropic"), api_key="sk-ant-test-0123456789"
    ) as client:
        ask_anthropic(client)
    assert {e.field("client") for e in trace.of("http.request")} == {"anthropic.Anthropic"}
    trace.assert_resilient()


@pytest.mark.inject_fault(http=409)
def test_over_llm_server_our_runtime_is_named_and_judged_by_its_rules(llm_server, trace):
    import pytest_agentfaults as af
    from pytest_agentfaults.testing import say

    llm_server.script([say("never reached")], strict=False)
    model = af.OpenAIModel("m", base_url=llm_server.base_url("openai"), api_key="sk-test-0123")
    with model, pytest.raises(af.ModelHTTPError):
        af.Agent("bot", model=model).run("hi")
    assert trace.of("http.request")[0].field("client") == "agentfaults"
    trace.assert_resilient()  # a 409 is left to on_llm_error by our declared rules


# ------------------------------------------------------------------- through LangChain


@pytest.mark.inject_fault(http=503, url=OPENAI_URL)
def test_gave_up_early_advice_names_langchains_setting(http_faults, trace):
    langchain_openai = pytest.importorskip("langchain_openai")
    chat = langchain_openai.ChatOpenAI(model="gpt-4o", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.InternalServerError):
        chat.invoke("hi")
    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early"
    assert "openai.OpenAI(max_retries=2)" in found.advice  # what the SDK's own users set
    assert found.advice.endswith("(through LangChain: ChatOpenAI(max_retries=2))")


def test_the_langchain_setting_is_named_only_when_langchain_is_loaded(monkeypatch):
    import sys
    import types

    from pytest_agentfaults.runtime._verdict_codes import advice_for

    monkeypatch.delitem(sys.modules, "langchain_openai", raising=False)
    monkeypatch.delitem(sys.modules, "langchain_anthropic", raising=False)
    for kind, client in (("openai", "openai.OpenAI"), ("anthropic", "anthropic.Anthropic")):
        assert "LangChain" not in advice_for("gave_up_early", kind, client)
    monkeypatch.setitem(sys.modules, "langchain_anthropic", types.ModuleType("langchain_anthropic"))
    storm = advice_for("retry_storm", "anthropic", "anthropic.Anthropic")
    assert storm.endswith("(through LangChain: ChatAnthropic(max_retries=...))")
    assert "LangChain" not in advice_for("gave_up_early", "openai", "openai.OpenAI")
    # a stream is not re-issued whatever max_retries says: no setting to name
    assert "LangChain" not in advice_for(
        "gave_up_early", "anthropic", "anthropic.Anthropic", stream=True
    )
