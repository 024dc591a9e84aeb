"""A 2xx body that is not the provider's JSON, through langchain-openai and pydantic-ai.

The official openai SDK hands such a body (an HTML page from a proxy) back as a ``str``
where a completion was expected, without an error: alone, the code that called it gets
the page as its answer, which the verdict calls ``malformed_body_accepted``. Through a
framework it is not used: langchain-openai's ``ChatOpenAI`` raises ``ValueError`` on it
and pydantic-ai ``UnexpectedModelBehavior``, and neither requests it again. That is the
call given up, ``gave_up_early``, and the finding and its advice name the framework. A
stream is the SDK's own error either way (its SSE decoder raises), as before.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import openai
import pytest
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import pytest_agentfaults as af
from pytest_agentfaults.testing import say

URL = "https://api.openai.com/v1/chat/completions"
KEY = "sk-test-0123456789abcdef"
CHAT = (Path(__file__).parents[2] / "fixtures" / "wire" / "openai" / "chat_text.json").read_bytes()


def run_pydantic_ai(base_url: str | None = None, *, stream: bool = False) -> object:
    """One pydantic-ai run over an openai client the test closes (no socket left open)."""

    async def go() -> object:
        async with openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0) as client:
            agent = Agent(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client)))
            if not stream:
                return (await agent.run("hi")).output
            async with agent.run_stream("hi") as run:
                return await run.get_output()

    return asyncio.run(go())


def only_finding(trace: af.Trace):
    (found,) = trace.verdict().findings
    return found


@pytest.mark.inject_fault(http="malformed_body", url=URL)
def test_langchain_raises_on_the_page_and_gives_the_call_up(trace: af.Trace) -> None:
    with pytest.raises(ValueError, match="Unexpected response type"):
        ChatOpenAI(model="gpt-4o", api_key=KEY, max_retries=0).invoke("hi")

    found = only_finding(trace)
    assert found.code == "gave_up_early", found.message
    assert "ChatOpenAI raised ValueError on it" in found.message
    assert "used" not in found.message
    assert ".with_retry(" in found.advice


@pytest.mark.inject_fault(http="malformed_body", url=URL)
def test_pydantic_ai_raises_on_the_page_and_gives_the_run_up(trace: af.Trace) -> None:
    with pytest.raises(UnexpectedModelBehavior, match="expected JSON data"):
        run_pydantic_ai()

    found = only_finding(trace)
    assert found.code == "gave_up_early", found.message
    assert "pydantic-ai raised UnexpectedModelBehavior on it" in found.message
    assert "UnexpectedModelBehavior" in found.advice


@pytest.mark.inject_fault(http="malformed_body", times=2)
def test_the_same_over_llm_server(llm_server, trace: af.Trace) -> None:
    llm_server.script([say("never reached")], strict=False)
    base_url = llm_server.base_url("openai")
    with pytest.raises(ValueError, match="Unexpected response type"):
        ChatOpenAI(model="m", base_url=base_url, api_key=KEY, max_retries=0).invoke("hi")
    with pytest.raises(UnexpectedModelBehavior):
        run_pydantic_ai(base_url)

    verdict = trace.verdict()
    assert [found.code for found in verdict.findings] == ["gave_up_early"] * 2, verdict.render()
    assert "ChatOpenAI raised ValueError" in verdict.findings[0].message
    assert "pydantic-ai raised UnexpectedModelBehavior" in verdict.findings[1].message


@pytest.mark.inject_fault(http="malformed_body", url=URL)
def test_the_sdk_alone_still_hands_the_page_over(trace: af.Trace) -> None:
    # langchain-openai is loaded, but this call is the SDK's own: the page is the answer
    with openai.OpenAI(api_key=KEY, max_retries=0) as client:
        answer = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert isinstance(answer, str)
    assert only_finding(trace).code == "malformed_body_accepted"


@pytest.mark.inject_fault(http="malformed_body", url=URL)
def test_a_stream_is_the_sdks_own_error_either_way(trace: af.Trace) -> None:
    with pytest.raises(Exception, match="JSON"):
        run_pydantic_ai(stream=True)
    found = only_finding(trace)
    assert found.code == "gave_up_early"


@pytest.mark.inject_fault(http="malformed_body", url=URL, times=1)
def test_langchain_following_the_advice_passes(trace: af.Trace, http_faults) -> None:
    http_faults.post(URL).respond(200, content=CHAT, headers={"content-type": "application/json"})
    chat = ChatOpenAI(model="gpt-4o", api_key=KEY, max_retries=0).with_retry()

    assert chat.invoke("hi").content

    assert [e.field("status") for e in trace.of("http.request")] == [200, 200]
    trace.assert_resilient()


def raw_create(client: openai.OpenAI) -> object:
    """The user's own raw-response call, as langchain-openai makes it, parsed by the user."""
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    return raw.parse()


@pytest.mark.inject_fault(http="malformed_body", url=URL)
def test_a_raw_response_call_of_the_users_own_is_not_langchains(trace: af.Trace) -> None:
    # langchain-openai is loaded and the request asks for the raw response, as its are: but
    # no langchain-openai code made it, and the page is the user's answer
    with openai.OpenAI(api_key=KEY, max_retries=0) as client:
        answer = raw_create(client)
    assert isinstance(answer, str)

    (request,) = trace.of("http.request")
    assert request.field("via") is None
    assert only_finding(trace).code == "malformed_body_accepted"


@pytest.mark.asyncio
@pytest.mark.inject_fault(http="malformed_body", url=URL)
async def test_the_same_async(trace: af.Trace) -> None:
    async with openai.AsyncOpenAI(api_key=KEY, max_retries=0) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
        )
    assert isinstance(raw.parse(), str)
    assert only_finding(trace).code == "malformed_body_accepted"


@pytest.mark.asyncio
@pytest.mark.inject_fault(http="malformed_body", url=URL)
async def test_langchain_async_is_still_told(trace: af.Trace) -> None:
    # ainvoke runs the model in a task of its own: its frames still lead to the request
    with pytest.raises(ValueError, match="Unexpected response type"):
        await ChatOpenAI(model="gpt-4o", api_key=KEY, max_retries=0).ainvoke("hi")
    assert only_finding(trace).code == "gave_up_early"


@pytest.mark.inject_fault(http="malformed_body")
def test_over_llm_server_the_caller_is_still_inferred(llm_server, trace: af.Trace) -> None:
    """The limit: the loopback server sees the request, not the code that sent it.

    So a raw-response request while langchain-openai is loaded is taken for LangChain's
    there, even when the user made it: ``gave_up_early`` where the page was used.
    """
    llm_server.script([say("never reached")], strict=False)
    base_url = llm_server.base_url("openai")
    with openai.OpenAI(api_key=KEY, base_url=base_url, max_retries=0) as client:
        assert isinstance(raw_create(client), str)

    (request,) = trace.of("http.request")
    assert request.field("via") == "langchain"
    assert only_finding(trace).code == "gave_up_early"
