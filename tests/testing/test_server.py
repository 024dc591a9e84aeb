"""The loopback LLM server: three wire formats, and faults served over its socket."""

from __future__ import annotations

import json
import secrets
import urllib.request
from collections.abc import Iterator

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults._redact import REDACTED, LearnedSecrets, redact_text
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ToolSpec
from pytest_agentfaults.testing import call_tool, call_tools, fail, malformed, say
from pytest_agentfaults.testing._wire import model_request, provider_for
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.server import LLMServer

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}
TOOL = ToolSpec(name="fetch", parameters={"type": "object", "properties": {"url": {}}})


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(timeout_hold=0.5) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    server.reset()


@pytest.fixture
def make_model(server: LLMServer):
    """Our model clients pointed at the server; closed at teardown."""
    made = []

    def build(provider: str, **options: object):
        base = server.base_url(provider)
        if provider == "openai":
            model = af.OpenAIModel(
                "gpt-4o-mini", base_url=base, api_key="sk-test-key-0123456789", **options
            )
        elif provider == "anthropic":
            model = af.AnthropicModel(
                "claude", base_url=base, api_key="sk-ant-test-0123456789", **options
            )
        else:
            model = af.OllamaModel("llama3.2", base_url=base, **options)
        made.append(model)
        return model

    yield build
    for model in made:
        model.close()


def ask(model: af.Model, *, stream: bool = False):
    request = ModelRequest(messages=[Message.user("hi")], tools=[TOOL], stream=stream)
    return model.request(request)


# ---------------------------------------------------------------------------- basics


def test_it_binds_loopback_on_an_ephemeral_port(server):
    assert server.url.startswith("http://127.0.0.1:")
    assert server.port > 0
    assert server._server is not None
    assert server._server.server_address[0] == "127.0.0.1"


def test_base_urls_follow_each_sdks_convention(server):
    assert server.base_url("openai") == f"{server.url}/v1"
    assert server.base_url("anthropic") == server.url
    assert server.base_url("ollama") == server.url
    assert server.base_url("openai-responses") == f"{server.url}/v1"
    assert server.base_url("gemini") == server.url  # google-genai adds /v1beta/models/...
    with pytest.raises(UsageError, match="unknown provider"):
        server.base_url("mistral")
    with pytest.raises(UsageError, match=r"base_url\('antropic'\): .*did you mean 'anthropic'\?"):
        server.base_url("antropic")


def test_env_points_sdks_and_our_clients_here(server, monkeypatch):
    env = server.env()
    assert env["OPENAI_BASE_URL"] == server.base_url("openai")
    assert env["ANTHROPIC_BASE_URL"] == server.url
    assert env["OLLAMA_HOST"] == server.url
    assert env["OPENAI_API_KEY"]
    assert env["ANTHROPIC_API_KEY"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    server.script([say("from env"), say("ollama too")])
    with af.OpenAIModel("gpt-4o-mini") as model:  # key and base URL from the environment
        assert af.Agent("bot", model=model).run("hi").output == "from env"
    with af.OllamaModel("llama3.2") as model:
        assert af.Agent("bot", model=model).run("hi").output == "ollama too"


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_scripted_answers_in_each_wire_format(make_model, server, provider, stream):
    server.script(
        [call_tools([call_tool("fetch", url="a"), call_tool("fetch", url="b")]), say("done")]
    )
    model = make_model(provider)
    first = ask(model, stream=stream)
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("fetch", {"url": "a"}),
        ("fetch", {"url": "b"}),
    ]
    assert first.finish_reason == "tool_calls"
    second = ask(model, stream=stream)
    assert second.text == "done"
    assert second.finish_reason == "stop"
    assert [r.path for r in server.requests] == [PATHS[provider]] * 2
    assert {r.stream for r in server.requests} == {stream}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_an_agent_runs_end_to_end_over_the_socket(make_model, server, provider):
    @af.tool
    def fetch(url: str) -> str:
        """Fetch."""
        return f"page at {url}"

    server.script([call_tool("fetch", url="https://x.test"), say("The page is fine.")])
    agent = af.Agent("bot", model=make_model(provider), tools=[fetch])
    assert agent.run("check").output == "The page is fine."
    conversation = server.requests[1].json()
    assert "page at https://x.test" in json.dumps(conversation)


def test_blocked_and_empty_answers(make_model, server):
    server.script([malformed.blocked("content_filter"), malformed.empty()])
    model = make_model("anthropic", transport_retry=False)
    assert ask(model).finish_reason == "content_filter"
    assert ask(model).text == ""


def test_requests_are_recorded_with_credentials_redacted(make_model, server):
    server.script([say("ok")])
    ask(make_model("openai"))
    (received,) = server.requests
    assert received.method == "POST"
    assert received.provider == "openai"
    assert received.headers["authorization"] == "[REDACTED]"
    assert received.json()["model"] == "gpt-4o-mini"
    assert received.fault is None
    assert received.retry_count is None


def test_the_script_sees_the_conversation_as_a_model_request(make_model, server):
    model = server.script([say("ok")])
    ask(make_model("anthropic"))
    (seen,) = model.requests
    assert [m.content for m in seen.messages] == ["hi"]
    assert seen.tool_names() == ["fetch"]


def test_anthropic_tool_results_become_tool_messages():
    body = {
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "calling"},
                    {"type": "tool_use", "id": "t1", "name": "fetch", "input": {"url": "u"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "page"}],
            },
        ],
        "tools": [{"name": "fetch", "description": "Fetch.", "input_schema": {"type": "object"}}],
    }
    request = model_request("anthropic", body, stream=False)
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[2].tool_calls[0].arguments == '{"url": "u"}'
    assert request.messages[3].tool_call_id == "t1"
    assert request.tools[0].description == "Fetch."


def test_provider_for_paths():
    assert provider_for("/v1/chat/completions") == "openai"
    assert provider_for("/openai/v1/chat/completions?x=1") == "openai"
    assert provider_for("/v1/messages") == "anthropic"
    assert provider_for("/api/chat") == "ollama"
    assert provider_for("/v1/embeddings") is None


def test_an_unknown_path_is_a_404_not_a_retryable_error(server):
    response = httpx.get(f"{server.url}/v1/models")
    assert response.status_code == 404
    assert server.requests[0].provider is None


# ---------------------------------------------------------------------------- script steps


def test_an_exhausted_script_answers_400_and_fails_the_check(make_model, server):
    server.script([say("only one")])
    model = make_model("openai")
    ask(model)
    with pytest.raises(af.ModelHTTPError) as caught:
        ask(model)
    assert caught.value.status == 400
    with pytest.raises(AssertionError, match="no step for call 2"):
        server.check()


def test_failure_steps_are_served_over_the_wire(server):
    server.script([fail.rate_limit(retry_after=2), fail.http(503), say("ok")])
    raw = httpx.post(f"{server.url}/v1/chat/completions", json={"messages": []})
    assert raw.status_code == 429
    assert raw.headers["retry-after"] == "2"
    assert raw.headers["retry-after-ms"] == "2000"
    assert raw.json()["error"]["code"] == "rate_limit_exceeded"
    assert httpx.post(f"{server.url}/v1/chat/completions", json={}).status_code == 503
    assert [r.fault for r in server.requests] == ["429", "503"]


def test_our_client_retries_a_scripted_429_and_honours_its_retry_after(
    make_model, server, virtual_clock
):
    server.script([fail.rate_limit(retry_after=2), say("ok")])
    agent = af.Agent("bot", model=make_model("ollama"))
    assert agent.run("hi").output == "ok"
    assert virtual_clock.sleeps == [2.0]


def test_not_json_and_truncated_steps(make_model, server):
    server.script([malformed.not_json("<html>oops</html>"), malformed.truncated()])
    model = make_model("openai", transport_retry=False)
    with pytest.raises(af.MalformedResponseError, match="oops"):
        ask(model)
    with pytest.raises(af.ModelStreamError):
        ask(model, stream=True)


def test_a_connection_step_drops_the_connection(make_model, server):
    server.script([fail.connection(), say("back")])
    model = make_model("anthropic", transport_retry=False)
    with pytest.raises(af.ModelTransportError):
        ask(model)
    assert ask(model).text == "back"


def test_a_timeout_step_holds_until_the_client_gives_up(make_model, server):
    server.script([fail.timeout(), say("in time")])
    model = make_model("openai", timeout=0.3, transport_retry=False)
    with pytest.raises(af.ModelTimeoutError):
        ask(model)
    assert ask(model).text == "in time"
    server.check()


def test_a_client_that_never_gives_up_is_reported():
    with LLMServer(timeout_hold=0.02) as impatient:
        impatient.script([fail.timeout()])
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{impatient.url}/api/chat", json={"stream": False}, timeout=5)
        with pytest.raises(AssertionError, match="never gave up"):
            impatient.check()


def test_a_hold_the_client_never_gave_up_on_is_traced_as_the_drop_that_ended_it():
    anthropic = pytest.importorskip("anthropic")
    plan = FaultPlan()
    plan.http().timeout()
    with LLMServer(timeout_hold=0.02) as impatient:
        impatient.bind(plan)
        impatient.script([say("unused")], strict=False)
        # the SDK's default timeout (10 min) outlasts the hold: the server drops the line
        with (
            anthropic.Anthropic(base_url=impatient.url, api_key="k", max_retries=0) as client,
            pytest.raises(anthropic.APIConnectionError),
        ):
            client.messages.create(
                model="c", max_tokens=5, messages=[{"role": "user", "content": "Hi"}]
            )
        with pytest.raises(AssertionError, match="never gave up"):
            impatient.check()
    assert plan.http_recorder is not None
    (attempt,) = plan.http_recorder.trace.of("http.request")
    assert attempt.error is not None
    assert (attempt.error.type, attempt.error.message) == (
        "RemoteProtocolError",
        "the server held the response 0.02s, then dropped the connection: the client never gave up",
    )


def test_a_hold_the_client_gave_up_on_is_traced_as_its_timeout(server, make_model):
    plan = FaultPlan()
    plan.http().timeout()
    server.bind(plan)
    with pytest.raises(af.ModelTimeoutError):
        ask(make_model("openai", timeout=0.05, transport_retry=False))
    assert plan.http_recorder is not None
    (attempt,) = plan.http_recorder.trace.of("http.request")
    assert attempt.error is not None
    assert attempt.error.type == "ReadTimeout"


def test_other_exceptions_are_a_500(server):
    server.script([af.testing.fail(ValueError("boom"))])
    response = httpx.post(f"{server.url}/api/chat", json={"stream": False})
    assert response.status_code == 500
    assert "ValueError: boom" in response.json()["error"]


# ---------------------------------------------------------------------------- plan faults


@pytest.fixture
def bound(server: LLMServer) -> Iterator[FaultPlan]:
    plan = FaultPlan(seed=3)
    server.bind(plan)
    with plan.active():
        yield plan


def test_plan_faults_are_served_and_do_not_use_up_the_script(
    make_model, server, bound, virtual_clock
):
    bound.http(url="https://api.openai.com/v1/chat/completions").status(503, retry_after=1).times(2)
    server.script([say("third time")])
    agent = af.Agent("bot", model=make_model("openai"))
    assert agent.run("hi").output == "third time"
    assert [r.fault for r in server.requests] == ["503", "503", None]
    assert [f.kind for f in bound.fired] == ["503", "503"]
    assert virtual_clock.sleeps == [1.0, 1.0]


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("connect_error", httpx.RemoteProtocolError),
        ("reset", (httpx.ReadError, httpx.RemoteProtocolError)),
        ("read_error", httpx.RemoteProtocolError),
    ],
)
def test_connection_faults_over_the_socket(server, bound, kind, error):
    getattr(bound.http(), kind)()
    server.script([say("after")])
    with httpx.Client() as client:
        with pytest.raises(error):
            client.post(f"{server.url}/api/chat", json={"stream": False})
        assert client.post(f"{server.url}/api/chat", json={"stream": False}).status_code == 200
    assert server.requests[0].fault == kind


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_a_truncated_stream_is_cut_mid_way(server, bound, provider):
    bound.http().truncated_stream()
    lines = []
    body = {"model": "m", "stream": True, "messages": []}
    with (
        httpx.Client() as client,
        client.stream("POST", server.url + PATHS[provider], json=body) as r,
    ):
        assert r.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):
            lines.extend(r.iter_lines())
    assert lines
    assert not any(
        "[DONE]" in line or "message_stop" in line or '"done":true' in line for line in lines
    )


@pytest.mark.parametrize("stream", [False, True])
def test_a_malformed_body_or_chunk(make_model, server, bound, stream):
    bound.http().malformed_body()
    model = make_model("openai", transport_retry=False)
    with pytest.raises(af.MalformedResponseError):
        ask(model, stream=stream)


def test_a_timeout_fault(server, bound):
    bound.http(method="POST").timeout()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.url}/api/chat", json={"stream": False}, timeout=0.05)
    server.check()


def test_events_land_in_the_plans_recorder(server, bound, trace):
    bound.http_recorder = None  # made on bind when missing; here the test's recorder is used
    server.bind(bound)
    bound.http().status(500)
    server.script([say("ok")])
    httpx.post(
        f"{server.url}/api/chat", json={"stream": False}, headers={"x-stainless-retry-count": "0"}
    )
    httpx.post(
        f"{server.url}/api/chat", json={"stream": False}, headers={"x-stainless-retry-count": "1"}
    )
    recorded = bound.http_recorder.trace.of("http.request")
    assert [e.status for e in recorded] == [500, 200]
    assert [e.field("retry_count") for e in recorded] == [0, 1]
    assert recorded[0].field("fault") == "500"
    assert bound.http_recorder.trace.count("http.fault") == 1


def test_in_process_faults_leave_server_traffic_alone(make_model, server, faults, trace):
    faults.http(url="https://elsewhere.test/").status(503).strict(False)
    server.bind(faults)
    server.script([say("straight through")])
    assert ask(make_model("openai")).text == "straight through"
    assert faults.fired == []
    assert len(trace.of("http.request")) == 1  # recorded once, by the server


def test_an_unbound_server_records_on_its_own_trace(server):
    server.script([say("ok")])
    httpx.post(f"{server.url}/api/chat", json={"stream": False})
    assert server.trace.of("http.request")[0].status == 200


def test_timeout_hold_must_be_positive():
    with pytest.raises(UsageError):
        LLMServer(timeout_hold=0)


def test_an_unstarted_server_says_so():
    with pytest.raises(UsageError, match="not started"):
        LLMServer().url  # noqa: B018


def test_localhost_reaches_the_server_untouched_by_in_process_faults(server, faults):
    faults.http().status(503).strict(False)
    server.bind(faults)
    faults.faults[0].url = "https://elsewhere.test/v1/chat/completions"  # not the server's path
    server.script([say("hello")])
    reply = httpx.post(f"http://localhost:{server.port}/api/chat", json={"stream": False})
    assert reply.json()["message"]["content"] == "hello"
    assert faults.fired == []


def test_a_crash_of_the_server_fails_the_check(server, monkeypatch):
    import pytest_agentfaults.testing._serve as module

    def broken(*args, **kwargs):
        raise RuntimeError("bug in the server")

    monkeypatch.setattr(module, "model_request", broken)
    server.script([say("never")])
    response = httpx.post(f"{server.url}/api/chat", json={"stream": False})
    assert response.status_code == 500
    with pytest.raises(AssertionError, match="(?s)crashed.*bug in the server"):
        server.check()


@pytest.mark.parametrize("steps", ["hello", say("hi")])
def test_a_script_that_is_not_a_list_of_steps_is_refused(server, steps):
    # "hello" would be five steps of one letter; a lone step, a TypeError from deep inside
    with pytest.raises(UsageError, match=r"give a list of steps, such as \[say\('done'\)\]"):
        server.script(steps)
    assert server.script([say("hi"), "there"]).remaining == 2


def test_the_server_learns_the_credentials_each_request_carries(server: LLMServer):
    # sent past the in-process layer (urllib): only the server sees the headers
    plan = FaultPlan()
    plan.learned = learned = LearnedSecrets()
    server.bind(plan)
    server.script([say("hi")])
    bearer, query = "gw_live_" + secrets.token_hex(16), secrets.token_hex(16)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    request = urllib.request.Request(
        f"{server.base_url('openai')}/chat/completions?key={query}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {bearer}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200
    assert redact_text(f"{bearer} {query}", learned) == f"{REDACTED} {REDACTED}"
