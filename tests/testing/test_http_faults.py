"""In-process HTTP faults for httpx and httpx2 clients, and the http_faults router."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import threading
from collections.abc import Iterator

import httpx
import httpx2
import pytest
import respx

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import VirtualClock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing import call_tool, say
from pytest_agentfaults.testing.faults import FaultPlan
from pytest_agentfaults.testing.http import HttpFaultRouter, UnmatchedRequestError, is_loopback

API = "https://api.example.com/v1/things"
LIBRARIES = [httpx, httpx2]
LIBRARY_IDS = ["httpx", "httpx2"]


@pytest.fixture(params=LIBRARIES, ids=LIBRARY_IDS)
def lib(request):
    return request.param


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    """One client for many requests: building one costs an SSL context."""
    with httpx.Client() as shared:
        yield shared


# ---------------------------------------------------------------------------- statuses


def test_a_503_then_the_route_answers(faults, http_faults, trace, lib):
    faults.http(url=API).status(503)
    http_faults.get(API).respond(200, json={"ok": True})
    with lib.Client() as client:
        first = client.get(API)
        second = client.get(API)
    assert (first.status_code, second.status_code) == (503, 200)
    assert first.json()["error"]["type"] == "server_error"
    assert [f.target for f in faults.fired] == ["http"]
    assert faults.fired[0].kind == "503"
    requests = trace.of("http.request")
    assert [e.status for e in requests] == [503, 200]
    assert [e.field("fault") for e in requests] == ["503", None]
    assert requests[0].field("method") == "GET"
    assert requests[0].field("url") == API
    assert trace.count("http.fault") == 1
    assert http_faults.calls.call_count == 1  # the faulted request never reached the route


@pytest.mark.parametrize(
    ("seconds", "header", "millis"), [(2, "2", "2000"), (1.5, "2", "1500"), (0.25, "1", "250")]
)
def test_retry_after_sets_both_headers(faults, http_faults, seconds, header, millis, trace):
    faults.http().status(429, retry_after=seconds)
    response = httpx.post(API)
    assert response.status_code == 429
    assert response.headers["retry-after"] == header
    assert response.headers["retry-after-ms"] == millis
    assert trace.of("http.request")[0].field("retry_after") == seconds


@pytest.mark.inject_fault(http=529, url="https://api.anthropic.com/v1/messages")
def test_the_error_body_has_the_provider_shape(http_faults):
    response = httpx2.post("https://api.anthropic.com/v1/messages", json={})
    assert response.json() == {
        "type": "error",
        "error": {
            "type": "overloaded_error",
            "message": "agentfaults: injected HTTP 529 Overloaded",
        },
        "request_id": "req_agentfaults000001",  # Anthropic's, as in its request-id header
    }
    assert response.headers["request-id"] == "req_agentfaults000001"


# ---------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("kind", "error"),
    [("timeout", "ReadTimeout"), ("connect_error", "ConnectError"), ("reset", "ReadError")],
)
def test_transport_failures_raise_the_clients_own_exception(faults, lib, kind, error, trace):
    faults.http(url=API).__getattribute__(kind)()
    with lib.Client() as client, pytest.raises(getattr(lib, error)):
        client.get(API)
    assert trace.of("http.request")[0].error.type == error
    assert trace.of("http.fault")[0].status == kind


def test_a_read_error_comes_after_the_headers(faults, lib):
    faults.http(url=API).read_error()
    with lib.Client() as client, client.stream("GET", API) as response:
        assert response.status_code == 200
        with pytest.raises(lib.ReadError):
            response.read()


def test_a_truncated_stream_is_cut_mid_way(faults, lib):
    faults.http().truncated_stream()
    body = {"model": "gpt-4o-mini", "stream": True, "messages": []}
    url = "https://api.openai.com/v1/chat/completions"
    received = []
    with lib.Client() as client, client.stream("POST", url, json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        with pytest.raises(lib.RemoteProtocolError, match="incomplete chunked read"):
            received.extend(lines)
    assert any(line.startswith("data: {") for line in received)
    assert "data: [DONE]" not in received


def test_a_malformed_body_is_a_200_that_is_not_json(faults, lib):
    faults.http().malformed_body()
    with lib.Client() as client:
        response = client.post("https://api.openai.com/v1/chat/completions", json={})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "502 Bad Gateway" in response.text


@pytest.mark.parametrize("library", LIBRARIES, ids=LIBRARY_IDS)
def test_async_clients_get_faults_too(faults, http_faults, library, trace):
    faults.http().status(503).times(2)
    faults.http().timeout()
    http_faults.get(API).respond(204)

    async def go() -> list[object]:
        outcomes: list[object] = []
        async with library.AsyncClient() as client:
            for _ in range(4):
                try:
                    outcomes.append((await client.get(API)).status_code)
                except library.TimeoutException as exc:
                    outcomes.append(type(exc).__name__)
        return outcomes

    assert asyncio.run(go()) == [503, 503, "ReadTimeout", 204]
    assert len(trace.of("http.request")) == 4


# ---------------------------------------------------------------------------- which requests


def test_url_method_times_and_at_choose_the_hits(faults, http_faults, client):
    faults.http(url="https://api.example.com/v1", method="post").status(500).at(2).times(2)
    http_faults.route(host="api.example.com").respond(200)
    statuses = [client.post(f"{API}/{i}").status_code for i in range(4)]
    statuses.append(client.get(API).status_code)  # GET is not the method
    statuses.append(client.post("https://api.example.com/v10").status_code)  # not the prefix
    assert statuses == [200, 500, 500, 200, 200, 200]
    assert [f.occurrence for f in faults.fired] == [2, 3]


def test_faults_on_one_target_apply_one_after_another(faults, http_faults, client):
    faults.http().status(503)
    faults.http().status(429)
    http_faults.get(API).respond(200)
    assert [client.get(API).status_code for _ in range(3)] == [503, 429, 200]


def test_a_path_filter_matches_any_host(faults, http_faults, client):
    faults.http(url="/v1/messages").status(529)
    http_faults.route().respond(200)
    assert client.post("https://a.test/v1/messages").status_code == 529
    assert client.post("https://b.test/v1/other").status_code == 200


@pytest.mark.allow_network  # else the network guard patches httpx from the start
def test_a_fault_declared_in_the_test_body_switches_the_layer_on(faults):
    original = httpx.Client._send_single_request
    faults.http(url=API).status(418)
    assert httpx.Client._send_single_request is not original
    assert httpx.get(API).status_code == 418


@pytest.mark.allow_network
def test_without_http_faults_or_the_guard_httpx_is_left_alone(faults):
    faults.tool("x").raises(ValueError).strict(False)
    assert httpx.Client._send_single_request.__module__ == "httpx._client"
    assert httpx.HTTPTransport.handle_request.__module__ == "httpx._transports.default"


def test_an_unfinished_http_fault_is_a_usage_error(faults):
    faults.http(url=API)
    with pytest.raises(UsageError, match=r"\.status\(503\), \.timeout\(\)"):
        httpx.get(API)
    faults.faults.clear()


# ---------------------------------------------------------------------------- the guard


@pytest.mark.inject_fault(http=503, url="https://other.test/")
def test_an_unfaulted_request_never_reaches_the_network(lib, refusals_expected):
    with lib.Client() as client, pytest.raises(UnmatchedRequestError) as caught:
        client.get("https://api.example.com/secret?api_key=sk-abcdefghijklmnop")
    assert isinstance(caught.value, AssertionError)
    assert "GET https://api.example.com/secret" in str(caught.value)
    assert "sk-abcdefghijklmnop" not in str(caught.value)
    with lib.Client() as client:
        assert client.get("https://other.test/").status_code == 503


def test_a_request_no_route_matches_raises_naming_it(http_faults, lib, refusals_expected):
    http_faults.get(API).respond(200)
    with lib.Client() as client:
        assert client.get(API).status_code == 200
        with pytest.raises(AssertionError, match="POST https://nope.test/x"):
            client.post("https://nope.test/x")


def test_the_guard_is_never_retried_by_our_clients(http_faults, refusals_expected):
    model = af.OpenAIModel("m", base_url="https://llm.test/v1", api_key="k")
    agent = af.Agent("bot", model=model)
    with pytest.raises(UnmatchedRequestError):
        agent.run("hi")


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("with_router", [False, True], ids=["plan-only", "http_faults"])
def test_loopback_requests_pass_through(faults, request, lib, local_server, trace, with_router):
    if with_router:
        request.getfixturevalue("http_faults")
    faults.http(url=local_server).status(503)
    with lib.Client() as client:
        assert client.get(local_server).status_code == 503
        assert client.get(local_server).text == "hello"
    assert [e.status for e in trace.of("http.request")] == [503, 200]


def test_is_loopback():
    assert is_loopback("127.0.0.1")
    assert is_loopback("127.1.2.3")
    assert is_loopback("localhost")
    assert is_loopback("::1")
    assert not is_loopback("example.com")
    assert not is_loopback("10.0.0.1")


def test_the_tests_own_respx_routes_answer_after_the_faults(faults):
    faults.http().status(503)
    with respx.mock(assert_all_called=True) as mock:
        mock.get(API).respond(200, text="from respx")
        assert httpx.get(API).status_code == 503
        assert httpx.get(API).text == "from respx"


def test_respx_can_mock_httpx2_with_the_httpcore2_mocker():
    with respx.mock(using="httpcore2") as mock:
        mock.get(API).respond(201)
        assert httpx2.get(API).status_code == 201


# ---------------------------------------------------------------------------- events


@pytest.mark.inject_fault(http=503, times=2)
def test_inside_an_agent_run_events_land_in_the_run_and_once_in_the_test_trace(http_faults, trace):
    http_faults.post("https://llm.test/v1/chat/completions").respond(
        200,
        json={
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "hi"},
                    "finish_reason": "stop",
                }
            ],
        },
    )
    model = af.OpenAIModel("m", base_url="https://llm.test/v1", api_key="sk-secret-key-123456")
    result = af.Agent("bot", model=model).run("hello")
    assert result.output == "hi"
    run_requests = result.trace.of("http.request")
    assert [e.status for e in run_requests] == [503, 503, 200]
    assert {e.agent for e in run_requests} == {"bot"}
    first, second, third = (e.at for e in run_requests)  # transport backoff, virtual,
    assert first == 0.0  # 0.25 s then 0.5 s less up to 25 % jitter
    assert 0.1875 <= second <= 0.25
    assert 0.375 <= third - second <= 0.5
    assert len(trace.of("http.request")) == 3  # not twice
    result.trace.assert_sequence(
        "http.fault",
        "http.request",
        "transport.retry",
        "http.fault",
        "http.request",
        "transport.retry",
        "http.request",
        "run.end",
    )
    assert "sk-secret-key-123456" not in trace.to_json()
    trace.assert_resilient()


def test_an_sdk_style_retry_count_header_is_recorded(faults, http_faults, trace):
    faults.http().status(500)
    http_faults.post(API).respond(200)
    for count in (0, 1):
        httpx.post(API, content=b"{}", headers={"x-stainless-retry-count": str(count)})
    requests = trace.of("http.request")
    assert [e.field("retry_count") for e in requests] == [0, 1]
    assert requests[0].field("body_sha") == requests[1].field("body_sha")


def test_events_outside_a_run_are_stamped_with_the_tests_virtual_time(
    faults, http_faults, trace, virtual_clock
):
    faults.http().status(503)
    http_faults.get(API).respond(200)
    httpx.get(API)
    virtual_clock.sleep(3)
    httpx.get(API)
    assert [e.at for e in trace.of("http.request")] == [0.0, 3.0]
    assert {e.agent for e in trace.of("http.*")} == {"http"}


@pytest.mark.allow_network  # no network guard: the plan alone patches httpx
def test_a_plan_outside_pytest_records_on_its_own_recorder():
    plan = FaultPlan(seed=1)
    plan.http(url=API).status(503)
    clock = VirtualClock()
    trace = Trace()
    plan.http_recorder = Recorder(agent="http", clock=clock, trace=trace)
    with plan.active():
        assert httpx.get(API).status_code == 503
    assert [e.type for e in trace] == ["http.fault", "http.request"]
    assert str(plan.fired[0]) == f"http:GET {API} 503 (occurrence 1)"
    assert httpx.Client._send_single_request.__module__ == "httpx._client"
    assert httpx.HTTPTransport.handle_request.__module__ == "httpx._transports.default"


def test_the_router_is_a_respx_router():
    assert issubclass(HttpFaultRouter, respx.Router)


def test_scripted_agents_are_untouched_by_http_faults(faults, scripted_model):
    faults.http().status(503).strict(False)

    @af.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    agent = af.Agent("bot", model=scripted_model([call_tool("ping"), say("ok")]), tools=[ping])
    assert agent.run("x").output == "ok"
    assert faults.fired == []


async def read_lines(response, into: list[str]) -> None:
    async for line in response.aiter_lines():
        into.append(line)


def test_async_streams_are_cut_too(faults, lib):
    faults.http().truncated_stream()

    async def go() -> list[str]:
        lines: list[str] = []
        body = {"model": "m", "stream": True, "messages": []}
        async with (
            lib.AsyncClient() as client,
            client.stream("POST", "https://api.anthropic.com/v1/messages", json=body) as response,
        ):
            with pytest.raises(lib.RemoteProtocolError):
                await read_lines(response, lines)
        return lines

    lines = asyncio.run(go())
    assert "event: message_start" in lines
    assert "event: message_stop" not in lines


def test_a_failing_pass_through_is_recorded(faults, trace, lib):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    faults.http(url="https://other.test/").status(503).strict(False)
    with lib.Client() as client, pytest.raises(lib.ConnectError):
        client.get(f"http://127.0.0.1:{port}/")
    (event,) = trace.of("http.request")
    assert event.error.type == "ConnectError"


def test_async_requests_without_a_route_are_guarded(http_faults, lib, refusals_expected):
    http_faults.get(API).respond(200)

    async def go() -> None:
        async with lib.AsyncClient() as client:
            assert (await client.get(API)).status_code == 200
            await client.get("https://unrouted.test/")

    with pytest.raises(UnmatchedRequestError):
        asyncio.run(go())


def test_async_requests_to_the_loopback_server_go_straight_to_it(faults, trace):
    from pytest_agentfaults.testing.server import LLMServer

    faults.http(url="https://other.test/").status(503).strict(False)
    with LLMServer() as server:
        server.script([say("async hello")])

        async def go() -> str:
            async with httpx2.AsyncClient() as client:
                reply = await client.post(f"{server.url}/api/chat", json={"stream": False})
                return str(reply.json()["message"]["content"])

        assert asyncio.run(go()) == "async hello"
    assert trace.of("http.request") == []  # that server was not bound: nobody records


def test_each_attempt_shows_its_url_and_the_digest_of_its_own_body(faults, http_faults, trace, lib):
    # the layer remembers a test's URLs as shown and its bodies' digests: a remembered
    # one must be the same as worked out afresh, and a new body never takes an old digest
    url = API + "?page=2&q=a%20b"
    http_faults.post(url).respond(200)
    faults.http(url=API).status(503).times(2)
    small, other, large = b'{"a": 1}', b'{"a": 2}', b"x" * (100 * 1024)
    with lib.Client() as client:
        for body in (small, small, other, large, large):
            client.post(url, content=body)
    events = trace.of("http.request")
    assert [e.field("url") for e in events] == [str(httpx.URL(url))] * 5
    assert [e.field("body_sha") for e in events] == [
        hashlib.sha1(body, usedforsecurity=False).hexdigest()[:12]
        for body in (small, small, other, large, large)
    ]
    assert [e.status for e in events] == [503, 503, 200, 200, 200]
