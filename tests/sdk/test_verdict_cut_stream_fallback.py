"""A cut stream the app asks for again without streaming is requested again (issue 19.3).

No SDK re-issues a started stream; a common recovery is to ask for the same answer again
as one JSON body. The request differs only in its ``stream`` members, so the verdict must
count it as the re-request, through the real SDKs, in-process and over ``llm_server``.
"""

from __future__ import annotations

import pytest

from pytest_agentfaults.testing import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

OPENAI_URL = "https://api.openai.com/v1/chat/completions"
ASK = [{"role": "user", "content": "Weather in Paris?"}]


def cut_then_ask_without_streaming(client, **stream_options) -> str:
    with pytest.raises(openai.APIConnectionError):  # no SDK re-issues a started stream
        list(
            client.chat.completions.create(
                model="gpt-4o-mini", messages=ASK, stream=True, **stream_options
            )
        )
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=ASK)
    return answer.choices[0].message.content


@pytest.mark.inject_fault(http="truncated_stream", url=OPENAI_URL, after=2)
def test_openai_cut_stream_asked_again_as_json_is_resilient(openai_client, http_faults, trace):
    http_faults.script("openai", [say("Sunny all week.")])
    assert cut_then_ask_without_streaming(openai_client) == "Sunny all week."
    trace.assert_resilient()


@pytest.mark.inject_fault(http="truncated_stream", url=OPENAI_URL, after=2)
def test_with_stream_options_too(openai_client, http_faults, trace):
    http_faults.script("openai", [say("Sunny all week.")])
    answer = cut_then_ask_without_streaming(openai_client, stream_options={"include_usage": True})
    assert answer == "Sunny all week."
    trace.assert_resilient()


@pytest.mark.inject_fault(http="truncated_stream", after=2)
def test_over_llm_server_too(openai_client, llm_server, trace):
    llm_server.script([say("Sunny all week.")])
    assert cut_then_ask_without_streaming(openai_client) == "Sunny all week."
    trace.assert_resilient()


@pytest.mark.inject_fault(http="truncated_stream", after=2)
def test_anthropic_over_llm_server(anthropic_client, llm_server, trace):
    llm_server.script([say("Sunny all week.")])
    ask = {"model": "claude-haiku-4-5", "max_tokens": 100, "messages": ASK}
    with pytest.raises(httpx2.RemoteProtocolError):  # anthropic does not wrap it
        list(anthropic_client.messages.create(stream=True, **ask))
    assert anthropic_client.messages.create(**ask).content[0].text == "Sunny all week."
    trace.assert_resilient()


@pytest.mark.inject_fault(http="truncated_stream", url=OPENAI_URL, after=2)
def test_another_question_after_the_cut_is_no_re_request(openai_client, http_faults, trace):
    http_faults.script("openai", [say("Hello.")])
    with pytest.raises(openai.APIConnectionError):
        list(openai_client.chat.completions.create(model="gpt-4o-mini", messages=ASK, stream=True))
    other = [{"role": "user", "content": "Hello?"}]
    openai_client.chat.completions.create(model="gpt-4o-mini", messages=other)
    assert trace.verdict().codes == ["gave_up_early"]


@pytest.mark.parametrize(
    ("streamed", "asked_again"),
    [
        (b'{"model":"m","stream":true,"input":"hi"}', b'{"model":"m","input":"hi"}'),
        (b'{"stream":true,"model":"m"}', b'{"model":"m"}'),
        (b'{"a":1,"stream": false, "stream_options": {"include_usage": true}}', b'{"a":1}'),
        (b'{"stream":true}', b"{}"),
    ],
)
def test_the_unstreamed_digest_is_the_body_sha_of_the_same_request_unstreamed(
    streamed, asked_again
):
    import hashlib

    from pytest_agentfaults.testing._body_digest import unstreamed_body_sha

    expected = hashlib.sha1(asked_again, usedforsecurity=False).hexdigest()[:12]
    assert unstreamed_body_sha(streamed) == expected


def test_stream_in_a_message_text_is_kept_and_no_stream_member_no_digest():
    import hashlib

    from pytest_agentfaults.testing._body_digest import unstreamed_body_sha

    text = b'{"model":"m","content":"say \\"stream\\":true"}'  # a quote in a string is escaped
    assert unstreamed_body_sha(text) == hashlib.sha1(text, usedforsecurity=False).hexdigest()[:12]
    assert unstreamed_body_sha(b'{"model":"m"}') is None
