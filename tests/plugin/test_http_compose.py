"""HTTP faults compose with the mocks a test already has: pytest-httpx, respx, MockTransport.

The fault fires first; the request it lets through goes on to whatever the user's mock
installed, in either fixture order, for httpx and httpx2 clients, sync and async. Every
inner session ends with a test that proves nothing was left patched.
"""

from __future__ import annotations

import pytest

# Loaded in the outer session (see test_http_plugin.py: httpx2 caches httpcore2's classes).
pytest.importorskip("httpcore2")
pytest.importorskip("httpx2")
pytest.importorskip("pytest_httpx")
# vcrpy, loaded here too: an inner session importing yaml afresh breaks PyYAML's C loader
import vcr  # noqa: F401

HEAD = """
import asyncio

import httpcore
import httpcore2
import httpx
import httpx2
import pytest
import respx
from respx.mocks import HTTPCoreMocker, Mocker

API = "https://api.example.com/v1/things"

# captured at collection, before any test of this session patches anything
PATCHABLE = [
    (httpx.Client, "_send_single_request"),
    (httpx.AsyncClient, "_send_single_request"),
    (httpx.Client, "_transport_for_url"),
    (httpx.AsyncClient, "_transport_for_url"),
    (httpx.HTTPTransport, "handle_request"),
    (httpx.AsyncHTTPTransport, "handle_async_request"),
    (httpx2.Client, "_send_single_request"),
    (httpx2.AsyncClient, "_send_single_request"),
    (httpx2.HTTPTransport, "handle_request"),
    (httpx2.AsyncHTTPTransport, "handle_async_request"),
    (httpcore.ConnectionPool, "handle_request"),
    (httpcore.AsyncConnectionPool, "handle_async_request"),
    (httpcore2.ConnectionPool, "handle_request"),
    (httpcore2.AsyncConnectionPool, "handle_async_request"),
]
ORIGINALS = [owner.__dict__[name] for owner, name in PATCHABLE]


def statuses(lib, transport=None, n=3):
    kw = {} if transport is None else {"transport": transport}
    with lib.Client(**kw) as client:
        return [client.get(API).status_code for _ in range(n)]


def astatuses(lib, transport=None, n=3):
    kw = {} if transport is None else {"transport": transport}

    async def go():
        async with lib.AsyncClient(**kw) as client:
            return [(await client.get(API)).status_code for _ in range(n)]

    return asyncio.run(go())


def assert_two_faults_fired(faults, trace):
    assert [f.target for f in faults.fired] == ["http", "http"]
    assert [e.status for e in trace.of("http.fault")] == [503, 503]
"""

TAIL = """

def test_zz_a_later_test_sees_plain_behaviour():
    now = [owner.__dict__[name] for owner, name in PATCHABLE]
    left = [f"{o.__module__}.{o.__name__}.{n}" for (o, n), a, b in zip(PATCHABLE, now, ORIGINALS)
            if a is not b]
    assert left == []
    assert all(not mocker.routers for mocker in Mocker.registry.values())
    for lib in (httpx, httpx2):
        plain = lib.MockTransport(lambda request: lib.Response(204))
        assert statuses(lib, plain, n=1) == [204]
"""

MARKER = "@pytest.mark.inject_fault(http=503, times=2)\n"
FLUENT = "    faults.http(url=API).status(503).times(2)\n"


def _cases(fixture: str, body: str, kit: str = "faults, trace") -> str:
    """One inner test per fixture order x marker/fluent x sync/async client.

    A mock that is no fixture (``respx.mock(...)``, a MockTransport) pairs with
    ``monkeypatch``: the order then moves the kit's fixtures before and after another.
    """
    out = []
    for order, args in (("mock_first", f"{fixture}, {kit}"), ("faults_first", f"{kit}, {fixture}")):
        for style in ("marker", "fluent"):
            for mode, call in (("sync", "statuses"), ("async", "astatuses")):
                decorator = MARKER if style == "marker" else ""
                declare = FLUENT if style == "fluent" else ""
                out.append(
                    f"\n\n{decorator}def test_{order}_{style}_{mode}({args}):\n{declare}"
                    + body.replace("CALL", call)
                )
    return "".join(out)


def _run(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    pytester.makepyfile(test_compose=HEAD + source + TAIL)
    return pytester.runpytest("-p", "no:randomly")


PYTEST_HTTPX_BODY = """\
    httpx_mock.add_response(url=API, json={"ok": True})
    assert CALL(httpx) == [503, 503, 200]
    assert_two_faults_fired(faults, trace)
    assert len(httpx_mock.get_requests()) == 1  # the third request reached the mock
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]
"""


def test_faults_fire_then_pytest_httpx_answers_in_both_fixture_orders(pytester):
    result = _run(pytester, _cases("httpx_mock", PYTEST_HTTPX_BODY))
    result.assert_outcomes(passed=9)


RESPX_BODY = """\
    route = respx_mock.get(API).respond(200, json={"ok": True})
    assert CALL(httpx) == [503, 503, 200]
    assert_two_faults_fired(faults, trace)
    assert route.call_count == 1
"""


def test_faults_fire_then_respx_answers_in_both_fixture_orders(pytester):
    result = _run(pytester, _cases("respx_mock", RESPX_BODY))
    result.assert_outcomes(passed=9)


RESPX_USING_BODY = """\
    with respx.mock(using=USING) as router:
        route = router.get(API).respond(200, json={"ok": True})
        assert CALL(LIB) == [503, 503, 200]
    assert_two_faults_fired(faults, trace)
    assert route.call_count == 1
"""


@pytest.mark.parametrize(
    ("using", "lib"), [("httpx", "httpx"), ("httpcore", "httpx"), ("httpcore2", "httpx2")]
)
def test_faults_fire_then_a_respx_router_answers_whatever_it_patches(pytester, using, lib):
    # respx's "httpx" mocker patches Client._transport_for_url; "httpcore"/"httpcore2" the pool
    body = RESPX_USING_BODY.replace("USING", repr(using)).replace("LIB", lib)
    result = _run(pytester, _cases("monkeypatch", body))
    result.assert_outcomes(passed=9)


SDK_BODY = """\
    virtual_clock.patch_sleep()
    with respx.mock(using="httpcore2") as router:
        route = router.post(URL).respond(200, json=CHAT)
        assert CALL_chat() == "hi"
    assert_two_faults_fired(faults, trace)
    assert [e.field("retry_count") for e in trace.of("http.request")] == [0, 1, 2]
    assert route.call_count == 1
"""

SDK_HEAD = """
import openai

URL = "https://api.openai.com/v1/chat/completions"
CHAT = {
    "id": "c", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hi"}}],
}
KEY = "sk-test-0123456789abcdef"


def statuses_chat():
    with openai.OpenAI(api_key=KEY) as client:
        return client.chat.completions.create(model="m", messages=[]).choices[0].message.content


def astatuses_chat():
    async def go():
        async with openai.AsyncOpenAI(api_key=KEY) as client:
            reply = await client.chat.completions.create(model="m", messages=[])
            return reply.choices[0].message.content

    return asyncio.run(go())
"""


def test_an_sdk_retries_the_faults_then_its_own_respx_router_answers(pytester):
    # the official SDKs send through httpx2: respx mocks it with using="httpcore2"
    cases = _cases("respx_mock", SDK_BODY, kit="faults, trace, virtual_clock")
    result = _run(pytester, SDK_HEAD + cases.replace("url=API", "url=URL"))
    result.assert_outcomes(passed=9)


MOCK_TRANSPORT_BODY = """\
    seen = []

    def answer(request):
        seen.append(request)
        return LIB.Response(200, json={"ok": True})

    assert CALL(LIB, LIB.MockTransport(answer)) == [503, 503, 200]
    assert len(seen) == 1  # the third request reached the user's transport
    assert_two_faults_fired(faults, trace)
"""


@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
def test_faults_fire_then_a_mock_transport_answers(pytester, lib):
    result = _run(pytester, _cases("monkeypatch", MOCK_TRANSPORT_BODY.replace("LIB", lib)))
    result.assert_outcomes(passed=9)


# ----------------------------------------------------------------------------- item 6

UNUSED = """
import httpx
import pytest

API = "https://api.example.com/v1/things"
"""


def test_a_route_never_requested_fails_at_teardown_naming_it(pytester):
    pytester.makepyfile(
        test_unused=HEAD
        + """
def test_it(http_faults):
    http_faults.get(API).respond(200)
    http_faults.post(API + "?api_key=sk-abcdefghijklmnop1234").respond(201)
    assert httpx.get(API).status_code == 200
"""
        + TAIL
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)  # the later test finds nothing left behind
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_it*",
            "agentfaults: 1 http_faults route(s) registered but never requested:",
            "*  POST https://api.example.com/v1/things?api_key=[[]REDACTED[]]",
            "*http_faults.assert_all_called = False*",
        ]
    )
    result.stdout.no_fnmatch_line("  GET https://api.example.com/v1/things")  # not listed
    result.stdout.no_fnmatch_line("*sk-abcdefghijklmnop1234*")


def test_assert_all_called_false_lets_routes_go_unused(pytester):
    pytester.makepyfile(
        test_unused=UNUSED
        + """
def test_opted_out(http_faults):
    assert http_faults.assert_all_called == True
    http_faults.assert_all_called = False
    assert not http_faults.assert_all_called
    http_faults.post(API).respond(201)


def test_a_bad_value_is_a_usage_error(http_faults):
    from pytest_agentfaults.errors import UsageError

    with pytest.raises(UsageError, match="assert_all_called = 'no'.*True.*False"):
        http_faults.assert_all_called = "no"


def test_called_as_in_respx_it_checks_at_once(http_faults):
    route = http_faults.get(API).respond(200)
    with pytest.raises(AssertionError, match="GET https://api.example.com/v1/things"):
        http_faults.assert_all_called()
    httpx.get(API)
    http_faults.assert_all_called()
    assert route.call_count == 1
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_a_failed_test_shows_its_own_failure_not_the_unused_routes(pytester):
    pytester.makepyfile(
        test_unused=UNUSED
        + """
def test_it(http_faults):
    http_faults.post(API).respond(201)
    assert 1 + 1 == 3, "the test's own failure"
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E * the test's own failure"])
    result.stdout.no_fnmatch_line("*never requested*")


def test_a_route_shadowed_by_the_tests_own_mock_is_reported_unused(pytester):
    pytester.makepyfile(
        test_unused=UNUSED
        + """
def test_it(http_faults, httpx_mock):
    http_faults.get(API).respond(200)
    httpx_mock.add_response(url=API, status_code=204)
    assert httpx.get(API).status_code == 204  # pytest-httpx answers at the transport
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*  GET https://api.example.com/v1/things",
            "*    GET https://api.example.com/v1/things went to the client's own transport"
            " (HTTPTransport as patched by pytest_httpx), which answers before any http_faults"
            " route: register the answer there, or drop that mock",
        ]
    )


# ----------------------------------------------------------------------------- llm_server

SERVER = """
import httpx
import pytest
from pytest_agentfaults.testing import say

API = "https://api.example.com/v1/things"
"""


def test_llm_server_with_an_httpx_mock_that_swallows_loopback_fails_at_setup(pytester):
    pytester.makepyfile(
        test_server=SERVER
        + """
def test_it(llm_server, httpx_mock):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_it*",
            "*UsageError: test_it uses llm_server and pytest-httpx's httpx_mock: "
            "httpx_mock answers the httpx requests to llm_server (http://127.0.0.1:*) *"
            "@pytest.mark.httpx_mock(should_mock=lambda request: request.url.host != "
            '"127.0.0.1")*',
        ]
    )


def test_llm_server_and_an_httpx_mock_that_lets_loopback_through_compose(pytester):
    # the server serves the faults for its requests, pytest-httpx answers the others: a
    # request to the server counts once (at=2 hits the second one, not the first)
    pytester.makepyfile(
        test_server=SERVER
        + """
@pytest.mark.httpx_mock(should_mock=lambda request: request.url.host != "127.0.0.1")
@pytest.mark.inject_fault(http=503, at=2)
def test_it(llm_server, httpx_mock, faults):
    llm_server.script([say("one"), say("two")])
    httpx_mock.add_response(url=API, status_code=204)
    url = llm_server.base_url("openai") + "/chat/completions"
    with httpx.Client() as client:
        first = client.post(url, json={"model": "m", "messages": []})
        second = client.post(url, json={"model": "m", "messages": []})
        third = client.post(url, json={"model": "m", "messages": []})
        assert client.get(API).status_code == 204
    assert [first.status_code, second.status_code, third.status_code] == [200, 503, 200]
    assert [r.fault for r in llm_server.requests] == [None, "503", None]
    assert len(faults.fired) == 1
    assert len(httpx_mock.get_requests()) == 1
"""
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)


CASSETTE = """\
interactions:
- request:
    body: null
    headers: {}
    method: GET
    uri: https://api.example.com/v1/things
  response:
    body:
      string: '{"ok": true}'
    headers:
      Content-Type:
      - application/json
    status:
      code: 200
      message: OK
version: 1
"""

VCR_FIXTURE = """

@pytest.fixture
def cassette():
    import vcr

    with vcr.use_cassette("cassette.yaml", record_mode="none", allow_playback_repeats=True) as tape:
        yield tape
"""

VCR_BODY = """\
    assert CALL(LIB) == [503, 503, 200]
    assert_two_faults_fired(faults, trace)
    assert cassette.play_count == 1  # the third request was played from the cassette
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200]
"""


@pytest.mark.parametrize("lib", ["httpx", "httpx2"])
def test_faults_fire_then_a_vcr_cassette_answers_in_both_fixture_orders(pytester, lib):
    """vcrpy (pytest-recording's engine) patches the transports with functools.wraps."""
    pytester.makefile(".yaml", cassette=CASSETTE)
    body = VCR_BODY.replace("LIB", lib)
    result = _run(pytester, VCR_FIXTURE + _cases("cassette", body))
    result.assert_outcomes(passed=9)


def test_a_kit_test_plays_a_cassette_with_no_fault(pytester):
    pytester.makefile(".yaml", cassette=CASSETTE)
    source = (
        VCR_FIXTURE
        + """

def test_plays(cassette, trace):
    assert statuses(httpx, n=2) == [200, 200]
    assert statuses(httpx2, n=1) == [200]
    assert cassette.play_count == 3
"""
    )
    _run(pytester, source).assert_outcomes(passed=2)
