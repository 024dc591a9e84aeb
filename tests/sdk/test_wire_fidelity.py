"""The rendered wire reads as the real providers' does, through the official SDKs.

What an application (or the SDK) reads of an answer beyond its text: the request ids,
the usage details, the Anthropic error types, a quota 429's retry headers, the Responses
object's echo of the request. In-process (``http_faults.script``, ``faults.http``) and
over ``llm_server``, which render from the same ``_wire``.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from pytest_agentfaults.testing import call_tool, fail, say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ASK = [{"role": "user", "content": "Weather in Paris?"}]
OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ANTHROPIC_URL = "https://api.anthropic.com/v1/messages"


@pytest.fixture(autouse=True)
def _virtual_waits(virtual_clock):
    virtual_clock.patch_sleep()


# ----------------------------------------------------------------------------- request ids


def test_openai_answers_carry_a_request_id_per_test(http_faults):
    http_faults.script("openai", [say("one"), say("two")])
    with openai.OpenAI(api_key="sk-test") as client:
        first = client.chat.completions.create(model="gpt-4o", messages=ASK)
        with client.chat.completions.with_streaming_response.create(
            model="gpt-4o", messages=ASK, stream=True
        ) as raw:
            streamed = raw.headers["x-request-id"]
            raw.read()
    # deterministic: counted per test, so snapshots of a run are the same on every run
    assert (first._request_id, streamed) == ("req_agentfaults000001", "req_agentfaults000002")


def test_an_injected_openai_error_carries_a_request_id(faults):
    faults.http(url=OPENAI_URL).status(400)
    with (
        openai.OpenAI(api_key="sk-test") as client,
        pytest.raises(openai.BadRequestError) as raised,
    ):
        client.chat.completions.create(model="gpt-4o", messages=ASK)
    assert raised.value.request_id == "req_agentfaults000001"


def test_a_scripted_anthropic_error_has_the_id_in_its_header_and_body(http_faults):
    http_faults.script("anthropic", [fail.http(529)])
    with (
        anthropic.Anthropic(api_key="sk-ant-test", max_retries=0) as client,
        pytest.raises(anthropic.APIStatusError) as raised,
    ):
        client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ASK)
    assert raised.value.request_id == "req_agentfaults000001"
    assert raised.value.body["request_id"] == "req_agentfaults000001"


@pytest.mark.inject_fault(http=529)
def test_an_injected_anthropic_error_has_the_id_in_its_header_and_body(http_faults):
    http_faults.script("anthropic", [say("Back.")])
    with anthropic.Anthropic(api_key="sk-ant-test") as client:
        raw = client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=10, messages=ASK
        )
    # the 529 took the first id of the test, the retried answer the next
    assert raw.headers["request-id"] == "req_agentfaults000002"


@pytest.mark.inject_fault(http=529)
def test_llm_server_answers_and_errors_carry_request_ids(llm_server):
    llm_server.script([say("Back.")])
    url = llm_server.base_url("anthropic")
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=url) as client:
        raw = client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=10, messages=ASK
        )
        assert raw.parse()._request_id == "req_agentfaults000002"
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=url, max_retries=0) as client:
        llm_server.script([fail.http(500)])
        with pytest.raises(anthropic.InternalServerError) as raised:
            client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ASK)
    assert raised.value.body["request_id"] == raised.value.request_id == "req_agentfaults000003"


def test_llm_server_counts_request_ids_per_test_for_openai_too(llm_server):
    llm_server.script([say("ok")])
    with openai.OpenAI(api_key="sk-test", base_url=llm_server.base_url("openai")) as client:
        answer = client.chat.completions.create(model="gpt-4o", messages=ASK)
    assert answer._request_id == "req_agentfaults000001"


# ----------------------------------------------------------------------------- chat completions


def test_a_streamed_tool_call_has_no_content_like_the_plain_one(http_faults):
    http_faults.script("openai", [call_tool("get_weather", city="Paris")] * 2)
    with openai.OpenAI(api_key="sk-test") as client:
        plain = client.chat.completions.create(model="gpt-4o", messages=ASK)
        with client.chat.completions.stream(model="gpt-4o", messages=ASK) as stream:
            streamed = stream.get_final_completion()
    assert plain.choices[0].message.content is None
    assert streamed.choices[0].message.content is None
    assert streamed.choices[0].message.refusal is None


def test_chat_usage_has_the_token_details_openai_always_sends(http_faults):
    http_faults.script("openai", [say("ok"), say("ok")])
    with openai.OpenAI(api_key="sk-test") as client:
        answer = client.chat.completions.create(model="gpt-4o", messages=ASK)
        chunks = list(
            client.chat.completions.create(
                model="gpt-4o",
                messages=ASK,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    for usage in (answer.usage, chunks[-1].usage):
        assert usage.prompt_tokens_details.model_dump(exclude_none=True) == {
            "audio_tokens": 0,
            "cached_tokens": 0,
        }
        assert usage.completion_tokens_details.model_dump(exclude_none=True) == {
            "accepted_prediction_tokens": 0,
            "audio_tokens": 0,
            "reasoning_tokens": 0,
            "rejected_prediction_tokens": 0,
        }
    assert answer.choices[0].message.annotations == []
    assert answer.service_tier == chunks[0].service_tier == "default"


def test_langchain_reads_the_token_details(http_faults):
    langchain_openai = pytest.importorskip("langchain_openai")
    http_faults.script("openai", [say("ok")])
    message = langchain_openai.ChatOpenAI(model="gpt-4o", api_key="sk-test").invoke("hi")
    assert message.usage_metadata["input_token_details"] == {"audio": 0, "cache_read": 0}


# ----------------------------------------------------------------------------- Responses API


def test_a_responses_body_validates_as_the_sdks_response(http_faults):
    from openai.types.responses import Response

    http_faults.script("openai-responses", [say("ok")])
    with openai.OpenAI(api_key="sk-test") as client:
        raw = client.responses.with_raw_response.create(model="gpt-4o", input="hi")
    Response.model_validate(raw.http_response.json())
    assert raw.parse().usage.input_tokens_details.cache_write_tokens == 0


TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    }
]


class Weather(BaseModel):
    city: str


def test_a_responses_object_echoes_the_request(http_faults):
    http_faults.script("openai-responses", [say("ok"), say("ok"), say(json.dumps({"city": "P"}))])
    with openai.OpenAI(api_key="sk-test") as client:
        plain = client.responses.create(
            model="gpt-4o",
            input="hi",
            instructions="Be brief.",
            tools=TOOLS,
            parallel_tool_calls=False,
        )
        stream = client.responses.create(
            model="gpt-4o", input="hi", instructions="Be brief.", stream=True
        )
        events = list(stream)
        parsed = client.responses.parse(model="gpt-4o", input="hi", text_format=Weather)
    assert plain.instructions == "Be brief."
    assert [tool.name for tool in plain.tools] == ["get_weather"]
    assert plain.parallel_tool_calls is False
    assert events[0].response.instructions == events[-1].response.instructions == "Be brief."
    assert parsed.text.format.type == "json_schema"
    assert parsed.output_parsed == Weather(city="P")


def test_llm_server_echoes_the_responses_request_too(llm_server):
    llm_server.script([say("ok")])
    url = llm_server.base_url("openai-responses")
    with openai.OpenAI(api_key="sk-test", base_url=url) as client:
        answer = client.responses.create(
            model="gpt-4o", input="hi", instructions="Be brief.", tools=TOOLS
        )
    assert (answer.instructions, [tool.name for tool in answer.tools]) == (
        "Be brief.",
        ["get_weather"],
    )
    assert answer.usage.input_tokens_details.cache_write_tokens == 0


# ----------------------------------------------------------------------------- Anthropic


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_usage_and_tool_use_ids_read_as_real_ones(http_faults, stream):
    script = http_faults.script(
        "anthropic", [call_tool("get_weather", city="Paris"), say("Sunny.")]
    )
    with anthropic.Anthropic(api_key="sk-ant-test") as client:
        ask = {"model": "claude-haiku-4-5", "max_tokens": 10, "messages": ASK}
        if stream:
            with client.messages.stream(**ask) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**ask)
        (use,) = message.content
        assert use.id == "toolu_call_1"
        usage = message.usage
        assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, 0)
        assert usage.service_tier == "standard"
        # the app sends the id back: the script sees the id it issued
        history = [
            *ASK,
            {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sun"}],
            },
        ]
        client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=history)
    seen = script.requests[1].messages
    assert [m.tool_calls[0].id for m in seen if m.tool_calls] == ["call_1"]
    assert seen[-1].tool_call_id == "call_1"


@pytest.mark.parametrize(
    ("status", "kind"),
    [(402, "billing_error"), (504, "timeout_error"), (413, "request_too_large")],
)
def test_anthropic_error_types_by_status(faults, status, kind):
    faults.http(url=ANTHROPIC_URL).status(status)
    with (
        anthropic.Anthropic(api_key="sk-ant-test", max_retries=0) as client,
        pytest.raises(anthropic.APIStatusError) as raised,
    ):
        client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ASK)
    # 413 is the documented ``request_too_large`` (sent by Cloudflare, in front of the
    # API), though the SDK's typed ErrorObject union does not list it
    assert raised.value.type == kind


# ----------------------------------------------------------------------------- quota


@pytest.mark.parametrize(("name", "url"), [("anthropic", ANTHROPIC_URL), ("openai", OPENAI_URL)])
def test_a_quota_429_asks_for_the_wait_it_declares(
    faults, http_faults, virtual_clock, monkeypatch, name, url
):
    module = anthropic if name == "anthropic" else openai
    monkeypatch.setattr(f"{name}._base_client.random", lambda: 0.0)  # no jitter
    faults.http(url=url).quota()
    http_faults.script(name, [say("ok")])
    if name == "anthropic":
        with module.Anthropic(api_key="sk-ant-test") as client:
            client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ASK)
    else:
        with module.OpenAI(api_key="sk-test") as client:
            client.chat.completions.create(model="gpt-4o", messages=ASK)
    # the body says "try again in 1s": the headers say the same, and the SDK waits it
    assert virtual_clock.sleeps == [1.0]
