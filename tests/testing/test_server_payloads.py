"""A malformed request body gets a 400 from `llm_server` saying what is wrong, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from pytest_agentfaults.testing import say
from pytest_agentfaults.testing._wire import wants_stream
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.server import LLMServer

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
DEPTH = 100_000
BODIES = {
    "deep_list": (b"[" * DEPTH + b"]" * DEPTH, "nested too deeply"),
    "deep_object": (b'{"a":' * DEPTH + b"1" + b"}" * DEPTH, "nested too deeply"),
    # "stream" in the body makes the server parse it to choose a stream: that parse too
    "deep_with_stream": (b'{"stream":true,"x":' + b"[" * DEPTH + b"]" * DEPTH + b"}", "deeply"),
    "not_json": (b"model=gpt&stream=true", "not JSON"),
    "html": (b"<html><body>hello</body></html>", "not JSON"),
    "invalid_utf8": (b'{"model": "caf\xc3", "stream": false}', "not valid UTF-8"),
    "truncated": (b'{"model": "m", "messages": [{"role": "us', "not JSON"),
    "huge_number": (b'{"model": "m", "seed": ' + b"9" * 5000 + b"}", "cannot be read"),
}


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    server.reset()


def message(provider: str, response: httpx.Response) -> str:
    data = json.loads(response.content)
    error = data["error"]
    return error if provider == "ollama" else error["message"]


@pytest.mark.parametrize("kind", BODIES)
@pytest.mark.parametrize("provider", PATHS)
def test_a_malformed_request_body_is_a_400_saying_why(server, provider, kind):
    body, said = BODIES[kind]
    server.script([say("after")])
    with httpx.Client(base_url=server.url) as client:
        response = client.post(PATHS[provider], content=body)
        assert response.status_code == 400, response.text[:300]
        assert response.headers["content-type"].startswith("application/json")
        text = message(provider, response)
        assert said in text
        assert len(text) < 300  # never an echo of the body
        # the connection and the script are intact: the next request gets the step
        after = client.post(PATHS[provider], json={"model": "m", "stream": False})
        assert after.status_code == 200
        assert "after" in after.text
    server.check()  # no crash was recorded


@pytest.mark.parametrize("provider", PATHS)
def test_a_fault_is_served_whatever_the_body(server, provider):
    # the fault reply reads the model name from the body: a deep one is no crash
    plan = FaultPlan(seed=3)
    server.bind(plan)
    with plan.active():
        plan.http().malformed_body()
        with httpx.Client(base_url=server.url) as client:
            response = client.post(PATHS[provider], content=BODIES["deep_object"][0])
    assert response.status_code == 200
    assert server.requests[0].fault == "malformed_body"
    server.check()


def test_wants_stream_is_false_for_a_body_it_cannot_parse():
    assert wants_stream("openai", BODIES["deep_with_stream"][0]) is False
    assert wants_stream("ollama", BODIES["deep_with_stream"][0]) is False


@pytest.mark.parametrize("kind", ["truncated_stream", "read_error"])
def test_in_process_http_faults_read_a_deep_body_without_a_crash(faults, kind):
    # the in-process fault reads the model name from the request body too
    getattr(faults.http(), kind)()
    body = b'{"model": "m", "stream": true, "x": ' + b"[" * DEPTH + b"]" * DEPTH + b"}"
    url = "https://api.openai.com" + PATHS["openai"]

    def post() -> None:
        with httpx.Client() as client, client.stream("POST", url, content=body) as response:
            response.read()

    with pytest.raises(httpx.TransportError):
        post()
    assert [f.kind for f in faults.fired] == [kind]
