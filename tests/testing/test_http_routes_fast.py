"""The http_faults router's cheap parts keep respx's behaviour.

Routes are answered at the client's transport (`_route_answer.Routed`) when the
http_faults router is the only respx router of the client's library; call lists build
their mock part on first use (`_light_routes.Calls`); route patterns are parsed once.
"""

from __future__ import annotations

import asyncio
import gzip
import http.server
import json
import threading
import zlib
from collections.abc import Iterator
from unittest import mock

import httpx
import httpx2
import pytest
import respx
from respx.models import CallList, Route

from pytest_agentfaults.testing._light_routes import Calls, LightRoute

API = "https://api.example.com/v1/things"
OTHER = "https://other.example.com/v1/stuff"
LIBRARIES = [httpx, httpx2]
LIBRARY_IDS = ["httpx", "httpx2"]


@pytest.fixture(params=LIBRARIES, ids=LIBRARY_IDS)
def lib(request):
    return request.param


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


# ---------------------------------------------------------------------------- answers


def test_a_route_sees_an_httpx_request_and_records_the_call(http_faults, lib):
    route = http_faults.post(API).respond(201, json={"made": 1}, headers={"x-id": "7"})
    with lib.Client() as client:
        response = client.post(API, json={"name": "a"}, headers={"x-who": "me"})
    assert response.status_code == 201
    assert response.json() == {"made": 1}
    assert response.headers["x-id"] == "7"
    assert response.request.url == API  # the client's own request, as ever
    (call,) = route.calls
    assert type(call.request) is httpx.Request
    assert call.request.content == response.request.content  # the bytes the client sent
    assert json.loads(call.request.content) == {"name": "a"}
    assert call.request.headers["x-who"] == "me"
    assert call.response.status_code == 201
    assert http_faults.calls.call_count == 1


def test_a_streamed_route_body_reaches_sync_and_async_clients(http_faults, lib):
    class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from (b"data: 1\n\n", b"data: 2\n\n")

        async def __aiter__(self):  # type: ignore[override]
            for chunk in (b"data: 1\n\n", b"data: 2\n\n"):
                yield chunk

    http_faults.get(API).mock(side_effect=lambda request: httpx.Response(200, stream=Chunks()))
    with lib.Client() as client, client.stream("GET", API) as response:
        assert list(response.iter_bytes()) == [b"data: 1\n\n", b"data: 2\n\n"]

    async def go() -> bytes:
        async with lib.AsyncClient() as client:
            return (await client.get(API)).content

    assert asyncio.run(go()) == b"data: 1\n\ndata: 2\n\n"


COMPRESSED = {"gzip": gzip.compress, "deflate": zlib.compress}


@pytest.mark.parametrize("encoding", COMPRESSED)
def test_a_compressed_route_body_is_decoded_once_as_respx_does(http_faults, lib, encoding):
    # the route's bytes are what a server sends: the client decodes them, as under respx
    body = b'{"ok": true}'
    headers = {"content-encoding": encoding, "content-type": "application/json"}
    sent = COMPRESSED[encoding](body)  # once: gzip stamps the time into its header
    route = http_faults.get(API).respond(200, content=sent, headers=headers)
    with lib.Client() as client:
        response = client.get(API)
        assert response.json() == {"ok": True}
        with client.stream("GET", API) as streamed:
            assert b"".join(streamed.iter_raw()) == sent

    async def go() -> bytes:
        async with lib.AsyncClient() as client:
            return (await client.get(API)).content

    assert asyncio.run(go()) == body
    assert route.calls.last.response.content == body


def test_a_route_side_effect_error_reaches_the_client(http_faults, lib, trace):
    http_faults.get(API).mock(side_effect=httpx.ConnectTimeout)
    with lib.Client() as client, pytest.raises(httpx.ConnectTimeout):
        client.get(API)
    (event,) = trace.of("http.request")
    assert event.error.type == "ConnectTimeout"


def test_a_pass_through_route_is_recorded_once(http_faults, lib, local_server, trace):
    route = http_faults.get(local_server).pass_through()

    async def go() -> str:
        async with lib.AsyncClient() as client:
            return (await client.get(local_server)).text

    with lib.Client() as client:
        assert client.get(local_server).text == "hello"
    assert asyncio.run(go()) == "hello"
    # the router is asked again below, by respx's mocker: it lets the request through
    # without counting it (or running a side effect) a second time
    assert route.call_count == 2
    assert http_faults.calls.call_count == 2
    assert [e.status for e in trace.of("http.request")] == [200, 200]


def test_the_tests_own_respx_router_still_answers_beside_http_faults(
    http_faults, lib, refusals_expected
):
    ours = http_faults.get(API).respond(200, text="ours")
    using = "httpcore" if lib is httpx else "httpcore2"
    with respx.mock(using=using, assert_all_called=True) as theirs:
        their_route = theirs.get(OTHER).respond(200, text="theirs")
        with lib.Client() as client:
            assert client.get(OTHER).text == "theirs"
            assert client.get(API).text == "ours"
    assert (ours.call_count, their_route.call_count) == (1, 1)


# ---------------------------------------------------------------------------- call lists


def test_call_lists_are_respx_call_lists_and_mocks(http_faults):
    route = http_faults.get(API).respond(204)
    assert isinstance(route, Route)
    assert isinstance(route, LightRoute)
    assert isinstance(route.calls, CallList)
    assert isinstance(route.calls, mock.NonCallableMock)
    assert isinstance(http_faults.calls, CallList)
    assert not isinstance(route.calls, dict)
    with pytest.raises(AssertionError, match="to have been called once"):
        route.calls.assert_called_once()
    httpx.get(API)
    route.calls.assert_called_once()
    assert route.calls.last.response.status_code == 204


def test_a_call_list_becomes_a_mock_of_its_own_class():
    first, second = Calls(name="first"), Calls(name="second")
    first.note = "set"  # setting an attribute builds the mock part, as a mock's would
    assert first.note == "set"
    assert type(first) is not Calls  # a class per instance, as unittest.mock makes
    assert type(second) is Calls  # the other one never paid for it
    assert "first" in repr(first._mock_name)
    with pytest.raises(AttributeError):
        second.__something_magic__  # noqa: B018 # a mock without a spec has no magics
    assert type(second) is Calls
    del first.note
    with pytest.raises(AssertionError, match="Expected 'second' to have been called"):
        second.assert_called()


def test_route_patterns_are_parsed_once_and_still_match():
    first = LightRoute(method="GET", url=API)
    second = LightRoute(method="GET", url=API)
    assert first.pattern is second.pattern
    assert first == second
    other = LightRoute(method="GET", url=API, params={"page": "2"})  # unhashable: parsed
    assert other.pattern.match(httpx.Request("GET", API + "?page=2"))
    assert not other.pattern.match(httpx.Request("GET", API))
    assert first.pattern.match(httpx.Request("GET", API))


def test_route_snapshots_roll_back_calls_and_side_effects():
    route = LightRoute(method="GET", url=API)
    route.side_effect = [httpx.Response(201), httpx.Response(202)]
    route.snapshot()
    request = httpx.Request("GET", API)
    assert route.match(request).status_code == 201
    route.calls.record(request, None)
    route.rollback()
    assert route.calls == []
    assert isinstance(route.calls, Calls)
    assert route.match(request).status_code == 201  # the side effects start over


# ---------------------------------------------------------------------------- patching


def test_routes_patch_the_pool_only_once_a_request_goes_below(http_faults, lib):
    from respx.mocks import HTTPCoreMocker

    from pytest_agentfaults.testing._clients import HTTPCore2Mocker

    mocker = HTTPCoreMocker if lib is httpx else HTTPCore2Mocker
    seen: list[str] = []

    class Logged(lib.HTTPTransport):  # a transport of the user's: routes answer below it
        def handle_request(self, request):
            seen.append(request.url.path)
            return super().handle_request(request)

    http_faults.get(API).respond(200, text="routed")
    http_faults.get(OTHER).respond(200, text="below")
    with lib.Client() as client:
        assert client.get(API).text == "routed"
    assert mocker._patches == []  # answered at the client's transport: nothing patched
    with lib.Client(transport=Logged()) as client:
        assert client.get(OTHER).text == "below"
    assert seen == ["/v1/stuff"]
    assert mocker._patches != []  # patched on demand, undone with the router


def test_the_router_sets_what_respx_router_init_sets():
    """HttpFaultRouter builds its state itself (cheap call lists): a respx upgrade that adds
    an attribute to ``Router.__init__`` must show up here, not as an AttributeError later."""
    from pytest_agentfaults.testing.http import HttpFaultRouter

    ours = HttpFaultRouter()
    theirs = respx.Router(assert_all_called=False, assert_all_mocked=True)
    assert set(vars(theirs)) <= set(vars(ours))
    for name in vars(theirs):
        mine, respx_value = getattr(ours, name), getattr(theirs, name)
        assert type(mine) is type(respx_value) or isinstance(mine, type(respx_value)), name
    assert ours._assert_all_mocked is True
    assert len(ours._snapshots) == len(theirs._snapshots) == 1


def test_a_sync_only_route_stream_reaches_an_async_client(http_faults, lib):
    class SyncOnly(httpx.SyncByteStream):  # no aclose, no __aiter__
        def __iter__(self) -> Iterator[bytes]:
            yield from (b"one ", b"two")

    http_faults.get(API).mock(side_effect=lambda request: httpx.Response(200, stream=SyncOnly()))

    async def go() -> bytes:
        async with lib.AsyncClient() as client, client.stream("GET", API) as response:
            return b"".join([chunk async for chunk in response.aiter_bytes()])

    assert asyncio.run(go()) == b"one two"


def test_a_route_stream_without_close_is_closed_quietly(http_faults, lib):
    class Bare:  # an iterable of bytes, nothing more
        def __iter__(self) -> Iterator[bytes]:
            yield b"bare"

    http_faults.get(API).mock(side_effect=lambda request: httpx.Response(200, stream=Bare()))  # type: ignore[arg-type]
    with lib.Client() as client:
        assert client.get(API).content == b"bare"


def test_a_call_list_is_a_full_mock_once_built():
    calls = Calls(name="built")
    calls.assert_not_called()  # a passing check reads only the list: nothing built
    assert type(calls) is Calls
    child = calls.some_child  # a mock makes children on demand: the mock part is built
    assert isinstance(child, mock.Mock)
    assert type(calls) is not Calls
    assert isinstance(calls, mock.NonCallableMock)
    assert calls.__class__ is type(calls)  # the mock's __class__: no spec, its own class
    fresh = Calls(name="fresh")
    del fresh.missing  # builds the mock part first, then answers as a mock does
    assert type(fresh) is not Calls
    with pytest.raises(AttributeError):
        fresh.missing  # noqa: B018 # deleted from the mock: gone for good


# ---------------------------------------------------------------------------- respx's semantics
# What a route sees and raises is what it sees and raises under plain respx, whose mocker
# answers below the connection pool: these pin the differences answering at the
# transport once had.


def _pool_errors(lib):
    return pytest.importorskip("httpcore" if lib is httpx else "httpcore2")


def test_a_pool_error_a_route_raises_becomes_the_clients_own(http_faults, lib):
    pool = _pool_errors(lib)
    http_faults.get(API).mock(side_effect=pool.ConnectError("refused"))
    with lib.Client() as client, pytest.raises(lib.ConnectError) as raised:
        client.get(API)
    assert raised.value.request.url == API

    http_faults.get(OTHER).mock(side_effect=pool.ReadTimeout("slow"))

    async def go() -> None:
        async with lib.AsyncClient() as client:
            await client.get(OTHER)

    with pytest.raises(lib.ReadTimeout):
        asyncio.run(go())


def test_a_pool_error_in_a_route_body_becomes_the_clients_own(http_faults, lib):
    pool = _pool_errors(lib)

    def body() -> Iterator[bytes]:
        yield b"first"
        raise pool.ReadError("connection reset")

    http_faults.get(API).mock(side_effect=lambda request: httpx.Response(200, content=body()))
    with (
        lib.Client() as client,
        client.stream("GET", API) as response,
        pytest.raises(lib.ReadError),
    ):
        list(response.iter_bytes())


def test_the_sdk_retries_a_pool_timeout_and_reports_a_cut_stream(http_faults):
    openai = pytest.importorskip("openai")
    pool = _pool_errors(httpx2)
    url = "https://api.openai.com/v1/chat/completions"
    chat = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
        ],
    }
    route = http_faults.post(url).mock(
        side_effect=[pool.ReadTimeout("timed out"), httpx.Response(200, json=chat)]
    )
    messages = [{"role": "user", "content": "x"}]
    with openai.OpenAI(api_key="k", max_retries=1) as client:
        answer = client.chat.completions.create(model="m", messages=messages)
        assert answer.choices[0].message.content == "hi"
        assert route.call_count == 2

        def cut() -> Iterator[bytes]:
            yield b'data: {"id": "c1", "object": "chat.completion.chunk", "created": 1, '
            yield b'"model": "m", "choices": []}\n\n'
            raise pool.RemoteProtocolError("peer closed connection")

        route.side_effect = lambda request: httpx.Response(
            200, content=cut(), headers={"content-type": "text/event-stream"}
        )
        stream = client.with_options(max_retries=0).chat.completions.create(
            model="m", messages=messages, stream=True
        )
        with pytest.raises(openai.APIConnectionError):
            list(stream)


@pytest.mark.parametrize(
    ("sent", "seen"),
    [
        ("https://api.example.com/items#top", "https://api.example.com/items"),
        ("https://api.example.com", "https://api.example.com/"),
        ("https://bob:hunter2@api.example.com/items", "https://api.example.com/items"),
    ],
)
def test_a_route_sees_the_url_as_sent_on_the_wire(http_faults, lib, sent, seen):
    route = http_faults.route(url__regex=r"^https://api\.example\.com/(items)?$").respond(200)
    with lib.Client() as client:
        assert client.get(sent).status_code == 200
    request = route.calls.last.request
    assert str(request.url) == seen
    if "bob" in sent:  # the client sent the user info as basic auth
        assert request.headers["authorization"].startswith("Basic ")


def test_a_route_gets_a_copy_of_the_request_and_leaves_an_upload_unread(http_faults, lib):
    def touch(request: httpx.Request) -> httpx.Response:
        request.headers["x-touched"] = "1"
        return httpx.Response(200)

    route = http_faults.post(API).mock(side_effect=touch)
    with lib.Client() as client:
        response = client.post(API, content=iter([b"a", b"b"]))
    assert route.calls.last.request is not response.request
    assert route.calls.last.request.content == b"ab"
    assert "x-touched" not in response.request.headers
    with pytest.raises(lib.RequestNotRead):
        _ = response.request.content


def test_a_redirect_cannot_replay_a_one_shot_upload(http_faults, lib):
    http_faults.post(API).respond(307, headers={"location": "/v1/other"})
    http_faults.post("https://api.example.com/v1/other").respond(200)

    def body() -> Iterator[bytes]:
        yield b"x"

    with lib.Client(follow_redirects=True) as client, pytest.raises(lib.StreamConsumed):
        client.post(API, content=body())
    http_faults.assert_all_called = False  # the redirect's target is never reached


def test_a_routed_answer_sets_the_clients_cookies_and_uses_its_default_encoding(http_faults, lib):
    # the client's own _send_single_request finishes the answer: its cookie jar and its
    # default encoding, read through the layer's one-request view of the client
    http_faults.get(API).respond(
        200, content="caf\xe9".encode("latin-1"), headers={"set-cookie": "seen=yes; Path=/"}
    )
    with lib.Client(default_encoding="latin-1") as client:
        response = client.get(API)
        assert client.cookies.get("seen") == "yes"
    assert response.text == "caf\xe9"


def test_an_unmatched_routed_request_is_refused_and_not_recorded(
    http_faults, lib, trace, refusals_expected
):
    http_faults.assert_all_called = False
    route = http_faults.get(API).respond(204)
    with lib.Client() as client, pytest.raises(AssertionError, match="GET " + OTHER):
        client.get(OTHER)
    assert route.call_count == 0
    assert len(http_faults.calls) == 0  # as respx: a request no route matched is no call
    (event,) = trace.of("http.request")
    assert event.error.type == "UnmatchedRequestError"


def test_a_route_sees_a_bytes_body_and_the_client_every_header_it_answers(http_faults, lib):
    route = http_faults.post(API).respond(
        200, content=b"ok", headers=[("x-a", "1"), ("X-B", "2"), ("x-a", "3")]
    )
    with lib.Client() as client:
        response = client.post(API, content=b'{"q": 1}')
    seen = route.calls.last.request
    assert isinstance(seen, httpx.Request)
    assert seen.content == b'{"q": 1}'
    assert isinstance(seen.stream, httpx.ByteStream)
    assert b"".join(seen.stream) == b'{"q": 1}'
    assert response.headers.get_list("x-a") == ["1", "3"]
    assert [name for name, _ in response.headers.raw][:3] == [b"x-a", b"X-B", b"x-a"]
    assert response.content == b"ok"


def test_a_route_sees_the_body_a_request_hook_put_in_place(http_faults, lib):
    # the bytes on the wire are the stream's, whatever the request read before
    route = http_faults.post(API).respond(200)

    def sign(request):
        request.stream = lib.ByteStream(b"signed:" + request.content)

    with lib.Client(event_hooks={"request": [sign]}) as client:
        client.post(API, content=b"body")
    assert route.calls.last.request.content == b"signed:body"
