"""A streamed request answered with a body that is not the provider's is judged by what
the SDK did with it (issue 19.4, "judge malformed_body too").

Read from the real SDKs: a stream whose body is JSON-typed plain text (``not_json``) is
handed back empty by openai (chat and Responses) and anthropic, without an error; a stream
whose first event is not JSON (``malformed_body``) raises ``json.JSONDecodeError`` in
openai and is an empty stream in anthropic. Not raising is ``malformed_body_accepted``;
raising and never asking again is ``gave_up_early``.
"""

from __future__ import annotations

import json

import pytest

from pytest_agentfaults.testing import say

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ASK = [{"role": "user", "content": "Weather in Paris?"}]
ENDPOINTS = {
    "chat": ("openai", "https://api.openai.com/v1/chat/completions"),
    "responses": ("openai-responses", "https://api.openai.com/v1/responses"),
    "anthropic": ("anthropic", "https://api.anthropic.com/v1/messages"),
}


def stream(client, endpoint: str) -> list:
    if endpoint == "chat":
        return list(client.chat.completions.create(model="m", messages=ASK, stream=True))
    if endpoint == "responses":
        return list(client.responses.create(model="m", input="Hi", stream=True))
    return list(client.messages.create(model="m", max_tokens=9, messages=ASK, stream=True))


def judged(request, endpoint: str, kind: str, where: str):
    provider, url = ENDPOINTS[endpoint]
    faults = request.getfixturevalue("faults")
    getattr(faults.http(url=url), kind)()
    if where == "llm_server":
        server = request.getfixturevalue("llm_server")
        server.script([say("never reached")], strict=False)
        base = {"base_url": server.base_url("openai" if provider != "anthropic" else provider)}
    else:
        routes = request.getfixturevalue("http_faults")
        routes.script(provider, [say("never reached")], strict=False)
        routes.assert_all_called = False
        base = {}
    sdk = anthropic.Anthropic if provider == "anthropic" else openai.OpenAI
    with sdk(api_key="sk-test-0123456789abcdef", **base) as client:
        try:
            events = stream(client, endpoint)
        except json.JSONDecodeError:
            events = None
    return events, request.getfixturevalue("trace").verdict()


@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_a_not_json_stream_handed_back_empty_is_accepted(request, endpoint, where):
    events, verdict = judged(request, endpoint, "not_json", where)
    assert events == []  # no error: the app reads an empty answer
    assert verdict.codes == ["malformed_body_accepted"]
    assert "raised" not in verdict.findings[0].message


@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
@pytest.mark.parametrize("endpoint", ["chat", "responses"])
def test_a_malformed_openai_stream_raises_and_giving_up_is_the_finding(request, endpoint, where):
    events, verdict = judged(request, endpoint, "malformed_body", where)
    assert events is None  # json.JSONDecodeError
    assert verdict.codes == ["gave_up_early"]
    assert "json.JSONDecodeError" in verdict.findings[0].message


@pytest.mark.parametrize("where", ["http_faults", "llm_server"])
def test_a_malformed_anthropic_stream_is_empty_and_accepted(request, where):
    events, verdict = judged(request, "anthropic", "malformed_body", where)
    assert events == []
    assert verdict.codes == ["malformed_body_accepted"]
