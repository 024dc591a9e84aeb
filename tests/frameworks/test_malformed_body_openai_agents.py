"""A 2xx body that is not the provider's JSON, through the OpenAI Agents SDK.

The official openai SDK hands such a body (an HTML page from a proxy) back as a ``str``
where a completion was expected. The Agents SDK's own OpenAI models do not use it: the
Responses model reads ``.usage`` of it and the chat-completions model ``.choices`` (it
takes a ``str`` for a stream), so the run raises ``AttributeError``, and no retry setting
of the SDK's requests it again unless a policy of the user's asks. That is the call given
up, ``gave_up_early``, not the page used (``malformed_body_accepted``); the finding and its
advice name the Agents SDK, which sends its own user-agent (``Agents/Python x.y``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import agents
import openai
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.testing import say

KEY = "sk-test-0123456789abcdef"
NO_TRACING = agents.RunConfig(tracing_disabled=True)
CHAT_URL = "https://api.openai.com/v1/chat/completions"
CHAT = (Path(__file__).parents[2] / "fixtures" / "wire" / "openai" / "chat_text.json").read_bytes()
MODELS = {
    "responses": ("https://api.openai.com/v1/responses", agents.OpenAIResponsesModel),
    "chat": (CHAT_URL, agents.OpenAIChatCompletionsModel),
}
#: what each model raises on the str the openai SDK hands it
RAISED = {"responses": "'str' object has no attribute 'usage'", "chat": "no attribute 'choices'"}


def run(kind: str, how: str, *, base_url: str | None = None, **agent: object) -> object:
    """One run of an agent on ``kind``'s model, by ``Runner.run_sync`` or ``Runner.run``.

    Over a client the test closes, in the loop that used it (no socket left open).
    """

    def bot(client: openai.AsyncOpenAI) -> agents.Agent:
        model = MODELS[kind][1]("gpt-4o", client)
        return agents.Agent(name="bot", model=model, **agent)  # type: ignore[arg-type]

    async def go() -> object:
        async with openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0) as client:
            return (await agents.Runner.run(bot(client), "hi", run_config=NO_TRACING)).final_output

    if how == "async":
        return asyncio.run(go())
    client = openai.AsyncOpenAI(api_key=KEY, base_url=base_url, max_retries=0)
    try:
        return agents.Runner.run_sync(bot(client), "hi", run_config=NO_TRACING).final_output
    finally:  # on the thread's loop run_sync used (and left open: conftest closes it)
        asyncio.get_event_loop_policy().get_event_loop().run_until_complete(client.close())


@pytest.mark.parametrize("how", ["sync", "async"])
@pytest.mark.parametrize("kind", ["responses", "chat"])
def test_the_run_raises_on_the_page_and_gives_the_call_up(kind, how, faults, trace) -> None:
    faults.inject_fault(http="malformed_body", url=MODELS[kind][0])

    with pytest.raises(AttributeError, match=RAISED[kind]):
        run(kind, how)

    (request,) = trace.of("http.request")
    assert request.field("via") == "openai_agents"
    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early", found.message
    assert "the OpenAI Agents SDK's model raised AttributeError on it" in found.message
    assert "used" not in found.message
    assert "ModelRetrySettings(" in found.advice


@pytest.mark.inject_fault(http="malformed_body", times=1)
def test_the_same_over_llm_server(llm_server, trace: af.Trace) -> None:
    llm_server.script([say("never reached")], strict=False)
    with pytest.raises(AttributeError):
        run("chat", "async", base_url=llm_server.base_url("openai"))

    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early", found.message
    assert "Agents SDK" in found.message


@pytest.mark.inject_fault(http="malformed_body", url=CHAT_URL, times=1)
def test_following_the_advice_passes(trace: af.Trace, http_faults, virtual_clock) -> None:
    http_faults.post(CHAT_URL).respond(
        200, content=CHAT, headers={"content-type": "application/json"}
    )
    retry = agents.ModelRetrySettings(
        max_retries=2,
        policy=lambda ctx: isinstance(ctx.error, AttributeError),
    )

    assert run("chat", "async", model_settings=agents.ModelSettings(retry=retry))

    assert [e.field("status") for e in trace.of("http.request")] == [200, 200]
    assert len(virtual_clock.sleeps) == 1  # the runner's backoff, never slept
    trace.assert_resilient()


@pytest.mark.inject_fault(http="malformed_body", url=CHAT_URL)
def test_the_sdks_ready_made_policies_do_not_retry_it(trace: af.Trace) -> None:
    # the advice's claim: none of agents.retry_policies asks for the page again
    policies = agents.retry_policies
    retry = agents.ModelRetrySettings(
        max_retries=2,
        policy=policies.any(
            policies.provider_suggested(),
            policies.network_error(),
            policies.retry_after(),
            policies.http_status([200, 408, 429, 500, 502, 503]),
        ),
    )

    with pytest.raises(AttributeError):
        run("chat", "async", model_settings=agents.ModelSettings(retry=retry))

    assert len(trace.of("http.request")) == 1


@pytest.mark.parametrize("kind", ["responses", "chat"])
def test_a_streamed_run_is_the_sdks_own_error(kind, faults, trace: af.Trace) -> None:
    faults.inject_fault(http="malformed_body", url=MODELS[kind][0])

    async def go() -> None:
        async with openai.AsyncOpenAI(api_key=KEY, max_retries=0) as client:
            bot = agents.Agent(name="bot", model=MODELS[kind][1]("gpt-4o", client))
            result = agents.Runner.run_streamed(bot, "hi", run_config=NO_TRACING)
            async for _ in result.stream_events():
                pass

    with pytest.raises(ValueError, match="Expecting value"):  # json.JSONDecodeError
        asyncio.run(go())

    (found,) = trace.verdict().findings
    assert found.code == "gave_up_early", found.message
    assert "the SDK raised json.JSONDecodeError on it" in found.message
