"""A fault without ``url=`` leaves the test's own calls to the app under test alone.

A Starlette or FastAPI app is tested through ``TestClient`` or ``httpx.ASGITransport``:
httpx requests served in process, by the app itself. ``@pytest.mark.inject_fault(http=503)``
is there to fail what the app calls (the model provider), never the test's call to the
app: before, that call took the 503, the app never ran, and a test asserting "the
endpoint answers 503 when the provider is down" passed with the endpoint never called.
A fault that names the URL still reaches such a request; an SDK's request over an app
transport (a fake provider mounted in process) is the provider's, and faulted as always.
"""

from __future__ import annotations

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import pytest_agentfaults as af
from pytest_agentfaults.testing import say

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
CALLED: list[str] = []


def make_app() -> Starlette:
    """An app whose endpoint asks a model provider (FastAPI's TestClient is Starlette's)."""
    provider = openai.AsyncOpenAI(api_key="sk-test", max_retries=2)

    async def ping(request: Request) -> JSONResponse:
        CALLED.append("ping")
        return JSONResponse({"ok": True})

    async def ask(request: Request) -> JSONResponse:
        CALLED.append("ask")
        try:
            reply = await provider.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        except openai.APIStatusError as exc:
            return JSONResponse({"answer": f"provider down ({exc.status_code})"})
        return JSONResponse({"answer": reply.choices[0].message.content or ""})

    return Starlette(routes=[Route("/ping", ping), Route("/ask", ask)])


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CALLED.clear()


@pytest.mark.inject_fault(http=503, times=2)
def test_the_503s_reach_the_provider_call_not_the_test_client(
    http_faults: af.HttpFaultRouter, trace: af.Trace
) -> None:
    http_faults.script("openai", [say("Sunny.")])
    with TestClient(make_app()) as client:
        response = client.get("/ask")
    assert response.status_code == 200
    assert response.json() == {"answer": "Sunny."}
    assert CALLED == ["ask"]
    assert [e.status for e in trace.of("http.request") if "openai" in e.url] == [503, 503, 200]


@pytest.mark.inject_fault(http=503, times=3)  # the first try and the SDK's 2 retries
def test_a_provider_down_for_good_is_the_apps_to_answer(
    http_faults: af.HttpFaultRouter, trace: af.Trace
) -> None:
    with TestClient(make_app()) as client:
        response = client.get("/ask")
    assert CALLED == ["ask"]  # the endpoint ran: the 503s were the provider's
    assert response.json() == {"answer": "provider down (503)"}


@pytest.mark.asyncio
@pytest.mark.inject_fault(http=503, times=1)
async def test_the_same_through_httpx_asgi_transport(
    http_faults: af.HttpFaultRouter, trace: af.Trace
) -> None:
    http_faults.script("openai", [say("Sunny.")])
    transport = httpx.ASGITransport(app=make_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        response = await client.get("/ask")
    assert response.json() == {"answer": "Sunny."}
    assert CALLED == ["ask"]


@pytest.mark.inject_fault(http=503, url="http://testserver/ping", times=1)
def test_a_fault_that_names_the_apps_url_still_reaches_it(trace: af.Trace) -> None:
    with TestClient(make_app()) as client:
        first, second = client.get("/ping"), client.get("/ping")
    assert (first.status_code, second.status_code) == (503, 200)
    assert CALLED == ["ping"]


@pytest.mark.inject_fault(http=503, times=1)
def test_an_sdk_over_an_app_transport_is_a_fake_provider_and_is_faulted(
    trace: af.Trace,
) -> None:
    def complete(request: Request) -> JSONResponse:
        message = {"role": "assistant", "content": "ok"}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        body = {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini"}
        return JSONResponse({**body, "choices": [choice]})

    fake = Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])
    with TestClient(fake) as transport_client:
        client = openai.OpenAI(
            api_key="sk-test", base_url="http://testserver/v1", http_client=transport_client
        )
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
    assert reply.choices[0].message.content == "ok"
    assert [e.status for e in trace.of("http.request")] == [503, 200]


def test_a_fault_only_the_apps_calls_could_meet_says_so_at_teardown(pytester: pytest.Pytester):
    pytester.makepyfile(
        """
        import pytest
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route
        from starlette.testclient import TestClient

        app = Starlette(routes=[Route("/ping", lambda request: JSONResponse({"ok": True}))])

        @pytest.mark.inject_fault(http=503, times=1)
        def test_only_app_calls():
            with TestClient(app) as client:
                assert client.get("/ping").status_code == 200
        """
    )
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n"
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fault on http (any request) never fired: "
            "@pytest.mark.inject_fault(http=503, times=1)",
            "*what happened: the test made no HTTP request that this fault could take; "
            "1 request went to an app served in process (a TestClient, an ASGITransport: "
            "the app under test, not what it calls)*",
            "*fix: give url= the endpoint (a fault with url= reaches every request), or make "
            "the app call what the fault is for*",
        ]
    )
