"""The cheap ways of the SDK fault test's hot path give what the plain ways gave.

A route's response built only when needed (`_light_routes._Pending`), and built again
from its first build (`_Built`); URL-only patterns matched once per URL; a fault's label,
options and description worked out once per settings; the matching faults of a request
looked up once per plan; the retry fields read straight from the headers.
"""

from __future__ import annotations

import gzip

import httpx
import httpx2
import pytest
import respx
from respx.models import MockResponse

from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing._http_fields import response_fields, response_header_fields
from pytest_agentfaults.testing._light_routes import LightRoute
from pytest_agentfaults.testing.faults import FaultPlan

API = "https://api.example.com/v1/things"

RESPONDS = [
    {"content": b'{"ok": true}', "headers": {"content-type": "application/json"}},
    {"content": "plain str body"},
    {"text": "some text", "headers": [("x-one", "1"), ("x-one", "2")]},
    {"html": "<p>hi</p>", "content_type": "text/x-custom"},
    {"content": gzip.compress(b"squeezed", mtime=0), "headers": {"content-encoding": "gzip"}},
    {},
]


def _state(response: httpx.Response) -> dict[str, object]:
    """What a test can read of a response, read without reading it again."""
    return {
        "class": type(response),
        "status": response.status_code,
        "headers": response.headers.multi_items(),
        "content": response.content,
        "closed": response.is_closed,
        "consumed": response.is_stream_consumed,
        "downloaded": response.num_bytes_downloaded,
        "request": response._request,
        "extensions": response.extensions,
        "sent": b"".join(response.stream),  # type: ignore[arg-type]
    }


@pytest.mark.parametrize("arguments", RESPONDS)
def test_a_pending_answer_is_the_response_respx_would_answer(arguments):
    ours, theirs = LightRoute(method="GET", url=API), respx.Route(method="GET", url=API)
    ours.respond(201, **arguments)
    theirs.respond(201, **arguments)
    for _ in range(2):  # built by respx's steps, then again from that first build
        request = httpx.Request("GET", API)
        answer = theirs.match(request)
        answer.read()  # what respx's router does next; ours comes read
        assert _state(ours.match(request)) == _state(answer)
    assert type(ours.return_value) is MockResponse
    assert _state(ours.return_value) == _state(theirs.return_value)


def test_a_pending_answer_keeps_the_arguments_as_given():
    headers = {"x-id": "1"}
    route = LightRoute(method="GET", url=API).respond(200, text="a", headers=headers)
    headers["x-id"] = "2"  # changed after respond: respx had built its response already
    assert route.match(httpx.Request("GET", API)).headers["x-id"] == "1"


@pytest.mark.parametrize(
    "arguments",
    [
        {"content": {"not": "bytes"}},
        {"headers": {"x-bad": "caf\u00e9"}},
        {"headers": {"x-bad": 1}},
    ],
)
def test_arguments_respx_refuses_are_refused_at_respond(arguments):
    # httpx < 0.28 refuses an int header with an AttributeError
    with pytest.raises((TypeError, UnicodeEncodeError, AttributeError)):
        LightRoute(method="GET", url=API).respond(200, **arguments)


def test_json_and_cookies_are_built_by_respx_at_once():
    body = {"n": 1}
    route = LightRoute(method="GET", url=API).respond(200, json=body, cookies={"a": "b"})
    body["n"] = 2
    answer = route.match(httpx.Request("GET", API))
    answer.read()
    assert answer.json() == {"n": 1}
    assert "set-cookie" in answer.headers


def test_a_side_effect_or_pass_through_set_later_wins_over_a_pending_answer():
    route = LightRoute(method="GET", url=API).respond(200, text="pending")
    route.side_effect = lambda request: httpx.Response(202)
    assert route.match(httpx.Request("GET", API)).status_code == 202
    route.side_effect = None
    assert route.match(httpx.Request("GET", API)).text == "pending"
    route.pass_through()
    request = httpx.Request("GET", API)
    assert route.match(request) is request


def test_a_url_pattern_is_matched_per_url_and_other_patterns_every_time(
    http_faults, lib, refusals_expected
):
    by_url = http_faults.get(API, params={"page": "1"}).respond(200, text="one")
    by_body = http_faults.post(API, json={"a": 1}).respond(201, text="a")
    with lib.Client() as client:
        for _ in range(2):
            assert client.get(API, params={"page": "1"}).text == "one"
            assert client.post(API, json={"a": 1}).status_code == 201
        with pytest.raises(AssertionError):
            client.post(API, json={"a": 2})  # the body is read afresh: no route
    assert (by_url.call_count, by_body.call_count) == (2, 2)


@pytest.fixture(params=[httpx, httpx2], ids=["httpx", "httpx2"])
def lib(request):
    return request.param


# ---------------------------------------------------------------------------- faults


def test_a_fault_changed_between_requests_is_described_and_matched_anew():
    plan = FaultPlan()
    plan.http_recorder = None
    fault = plan.http(url=API).status(503).times(10)
    with plan.active(), httpx.Client() as client:
        assert client.get(API).status_code == 503
        target = plan.faults[0]
        target.status = 429  # what the fault injects ...
        assert client.get(API).status_code == 429
        target.url = "https://elsewhere.example.com/"  # ... and what it matches
        with pytest.raises(AssertionError):  # no fault, no route: the guard's error
            client.get(API)
    trace = plan.http_recorder.trace  # type: ignore[union-attr]
    details = [e.detail for e in trace.of("http.fault")]
    assert details == [f"GET {API}: http 503 on {API}", f"GET {API}: http 429 on {API}"]
    assert fault is not None


def test_events_keep_their_fields_and_redact_the_url_and_the_client():
    trace = Trace()
    plan = FaultPlan()
    secret = "sk-live-0123456789abcdefghij"
    url = f"https://api.example.com/v1/x?key={secret}"
    plan.http(url="https://api.example.com/v1/x").status(503, retry_after=2)
    from pytest_agentfaults.runtime._recorder import Recorder
    from pytest_agentfaults.runtime.clock import VirtualClock

    plan.http_recorder = Recorder(agent="http", clock=VirtualClock(), trace=trace)
    with plan.active():
        http_faults_router = plan.http_layer().router
        http_faults_router.get(url).respond(200)
        with httpx.Client(headers={"user-agent": f"my-app-{secret}/1.0"}) as client:
            assert client.get(url).status_code == 503
            assert client.get(url).status_code == 200
    fault, first, second = trace.events
    assert fault.type == "http.fault"
    assert secret not in repr(list(trace.events))
    assert first.model_extra["retry_after"] == 2.0
    assert first.status == 503
    assert first.model_extra["fault"] == "503"
    assert second.status == 200
    assert list(first.model_extra) == ["method", "url", "client", "retry_after", "fault"]


# ---------------------------------------------------------------------------- fields


@pytest.mark.parametrize("library", [httpx, httpx2])
@pytest.mark.parametrize(
    "headers",
    [
        [("Retry-After", "3"), ("X-Should-Retry", "true")],
        [("retry-after-ms", "250"), ("retry-after", "9")],
        [("retry-after", "Wed, 21 Oct 2099 07:28:00 GMT")],
        [("x-should-retry", "false"), ("x-should-retry", "true")],
        [("content-type", "text/plain")],
    ],
)
def test_response_header_fields_read_as_response_fields(library, headers):
    response = library.Response(503, headers=headers)
    expected = response_fields(503, response.headers.multi_items())
    fields = response_header_fields(503, response.headers)
    assert fields.keys() == expected.keys()
    for name, value in expected.items():
        assert fields[name] == pytest.approx(value, abs=2)
    assert response_header_fields(200, response.headers) == {}
