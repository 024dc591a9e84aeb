"""``openai_client`` / ``anthropic_client``, sync and async: built once, aimed at the kit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_agentfaults import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

WIRE = Path(__file__).parents[2] / "fixtures" / "wire"
CHAT = (WIRE / "openai" / "chat_text.json").read_bytes()
MESSAGE = (WIRE / "anthropic" / "messages_text.json").read_bytes()
JSON = {"content-type": "application/json"}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


def chat(client):
    return client.chat.completions.create(model="gpt-4o-mini", messages=ASK)


def message(client):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=ASK)


@pytest.mark.inject_fault(http=503, times=2)
def test_openai_client_meets_the_tests_faults_and_routes(
    openai_client, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).respond(200, content=CHAT, headers=JSON)
    assert chat(openai_client).choices[0].message.content.startswith("It is 18")
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]


@pytest.mark.inject_fault(http=529, times=2)
def test_anthropic_client_meets_the_tests_faults_and_routes(
    anthropic_client, http_faults, trace, virtual_clock
):
    virtual_clock.patch_sleep()
    http_faults.post(ANTHROPIC_URL).respond(200, content=MESSAGE, headers=JSON)
    assert message(anthropic_client).content[0].text
    assert [e.status for e in trace.of("http.request")] == [529, 529, 200]


@pytest.mark.inject_fault(http=503, times=2)
def test_async_openai_client(async_openai_client, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(OPENAI_URL).respond(200, content=CHAT, headers=JSON)

    async def main():
        async with async_openai_client as client:  # closes this test's copy only
            return await chat(client)

    assert asyncio.run(main()).choices[0].message.content
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]


@pytest.mark.inject_fault(http=429, retry_after=1)
def test_async_anthropic_client(async_anthropic_client, http_faults, trace, virtual_clock):
    virtual_clock.patch_sleep()
    http_faults.post(ANTHROPIC_URL).respond(200, content=MESSAGE, headers=JSON)
    assert asyncio.run(message(async_anthropic_client)).content[0].text
    assert [e.status for e in trace.of("http.request")] == [429, 200]
    assert virtual_clock.sleeps == [1.0]


def test_with_llm_server_the_clients_point_at_it(openai_client, anthropic_client, llm_server):
    assert str(openai_client.base_url).rstrip("/") == llm_server.base_url("openai").rstrip("/")
    llm_server.script([say("from the server"), say("again")])
    assert chat(openai_client).choices[0].message.content == "from the server"
    assert message(anthropic_client).content[0].text == "again"
    assert len(llm_server.requests) == 2


@pytest.mark.asyncio
async def test_async_clients_with_llm_server_in_the_tests_own_loop(
    async_openai_client, async_anthropic_client, llm_server
):
    llm_server.script([say("one"), say("two")])
    assert (await chat(async_openai_client)).choices[0].message.content == "one"
    assert (await message(async_anthropic_client)).content[0].text == "two"


@pytest.mark.asyncio
async def test_a_second_loop_reuses_nothing_of_the_first(async_openai_client, llm_server):
    llm_server.script([say("three")])
    assert (await chat(async_openai_client)).choices[0].message.content == "three"
