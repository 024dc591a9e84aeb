"""HTTP faults, http_faults, llm_server and the verdict, as users meet them (pytester)."""

from __future__ import annotations

import pytest

# Loaded here, in the outer session: pytester's in-process runs drop the modules they
# import, and httpx2 caches httpcore2's exception classes on first use; a fresh httpcore2
# imported by an inner run would leave that cache pointing at classes nobody raises.
pytest.importorskip("httpcore2")
pytest.importorskip("httpx2")

HTTP = """
import httpx
import pytest
from pytest_agentfaults.testing import say, call_tool, fail

API = "https://api.example.com/v1/things"
"""


def test_the_fixtures_are_listed(pytester):
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines(["http_faults*", "*respx router that sees httpx AND httpx2*"])
    result.stdout.fnmatch_lines(["llm_server*", "*127.0.0.1*"])


def test_a_marker_fault_then_a_route(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=503, times=2)
def test_it(http_faults, faults, trace):
    http_faults.get(API).respond(200, json={"ok": True})
    with httpx.Client() as client:
        statuses = [client.get(API).status_code for _ in range(3)]
    assert statuses == [503, 503, 200]
    assert [f.target for f in faults.fired] == ["http", "http"]
    assert trace.count("http.request") == 3
    assert trace.count("http.fault") == 2
"""
    ).runpytest()
    result.assert_outcomes(passed=1)
    # the same GET sent again after each 503: HTTP-level retries, counted as such
    result.stdout.fnmatch_lines(["agentfaults: 2 faults injected, 0 retries, 2 HTTP retries, *"])


def test_a_fault_declared_in_the_body_needs_no_fixture(suite):
    result = suite(
        HTTP
        + """
def test_it(faults):
    faults.http(url=API, method="GET").timeout()
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(API)
"""
    ).runpytest()
    result.assert_outcomes(passed=1)


def test_an_unmatched_request_fails_the_test_naming_it(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=503, url="https://other.test/", strict=False)
def test_it():
    httpx.post("https://api.example.com/charge?api_key=sk-abcdefghijklmnop1234")
"""
    ).runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UnmatchedRequestError*POST https://api.example.com/charge*"])
    result.stdout.no_fnmatch_line("E *sk-abcdefghijklmnop1234*")  # the source line shows it


def test_an_http_fault_that_never_fired_fails_at_teardown(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=503, url="https://never.test/")
def test_it():
    pass
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fault on http https://never.test/ never fired*"])


def test_bad_http_marker_arguments_fail_at_setup(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http="timeout", retry_after=2)
def test_it():
    pass
"""
    ).runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*retry_after= does not apply to http='timeout'; it goes with an HTTP status*"]
    )


def test_the_recovery_trace_shows_the_http_attempts(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=429, retry_after=2)
def test_it(http_faults):
    http_faults.get(API).respond(200)
    assert httpx.get(API).status_code == 200
"""
    ).runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*recovery trace*",
            "*fired 1 time: http 429 (retry_after=2) on any request*",
            "*http.fault*429*",
            "*http.request*429  GET https://api.example.com/v1/things*",
        ]
    )


def test_llm_server_serves_the_marker_faults_over_its_socket(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=503, times=2)
def test_it(llm_server, faults, trace, virtual_clock):
    llm_server.script([call_tool("fetch", url="u"), say("done")])
    with af.OpenAIModel("m", base_url=llm_server.base_url("openai"), api_key="sk-key-0123456789") as model:
        result = af.Agent("bot", model=model, tools=[fetch]).run("go")
    assert result.output == "done"
    assert [r.fault for r in llm_server.requests] == ["503", "503", None, None]
    assert [f.target for f in faults.fired] == ["http", "http"]
    assert [e.status for e in trace.of("http.request")] == [503, 503, 200, 200]
    first, second = virtual_clock.sleeps  # 0.25 s and 0.5 s, less up to 25 % jitter
    assert 0.1875 <= first <= 0.25 and 0.375 <= second <= 0.5
    trace.assert_resilient()
"""
    ).runpytest()
    result.assert_outcomes(passed=1)


def test_llm_server_is_started_once_and_reset_for_every_test(suite):
    result = suite(
        HTTP
        + """
SERVERS = set()

# Whatever order the tests run in (pytest-randomly shuffles them), each one finds the
# same server, with nothing left of the test before it.
@pytest.mark.parametrize("n", [1, 2, 3])
def test_it(llm_server, n):
    assert llm_server.requests == []
    SERVERS.add((id(llm_server), llm_server.port))
    assert len(SERVERS) == 1
    llm_server.script([say(f"answer {n}")])
    reply = httpx.post(llm_server.base_url("ollama") + "/api/chat", json={"stream": False})
    assert reply.json()["message"]["content"] == f"answer {n}"
"""
    ).runpytest()
    result.assert_outcomes(passed=3)


def test_an_exhausted_llm_server_script_fails_the_test(suite):
    result = suite(
        HTTP
        + """
def test_it(llm_server):
    httpx.post(llm_server.base_url("openai") + "/chat/completions", json={"messages": []})
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*llm_server*has no step for call 1*"])


def test_llm_server_and_http_faults_together(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=500, url="/v1/chat/completions")
def test_it(llm_server, http_faults, trace):
    http_faults.get(API).respond(200, text="tool data")
    llm_server.script([say("fine")])
    assert httpx.get(API).text == "tool data"       # routed in-process
    url = llm_server.base_url("openai") + "/chat/completions"
    with httpx.Client() as client:
        assert client.post(url, json={}).status_code == 500   # served by the server
        assert client.post(url, json={}).status_code == 200
    assert [e.status for e in trace.of("http.request")] == [200, 500, 200]
"""
    ).runpytest()
    result.assert_outcomes(passed=1)


def test_assert_resilient_reports_the_findings(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=503, times=3)
def test_it(http_faults, trace):
    http_faults.get(API).respond(200)
    with httpx.Client() as client:
        while client.get(API).status_code != 200:
            pass
    trace.assert_resilient()
"""
    ).runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NotResilientError: resilience verdict: 1 finding*",
            "*no_backoff: GET https://api.example.com/v1/things by plain httpx: retried 0.000s after*",
            "*advice: wait before retrying*",
        ]
    )


@pytest.mark.allow_network  # this test's own network guard would patch httpx too
def test_a_test_without_http_faults_or_the_network_guard_leaves_httpx_alone(suite):
    result = suite(
        HTTP
        + """
@pytest.mark.allow_network
def test_it(faults):
    assert httpx.Client._send_single_request.__module__ == "httpx._client"
    assert httpx.HTTPTransport.handle_request.__module__ == "httpx._transports.default"
"""
    ).runpytest()
    result.assert_outcomes(passed=1)


def test_the_trace_file_holds_the_http_events(suite, tmp_path):
    result = suite(
        HTTP
        + """
@pytest.mark.inject_fault(http=502)
def test_it(http_faults):
    httpx.get(API, headers={"authorization": "Bearer sk-secret-0123456789abcdef"})
"""
    ).runpytest(f"--agentfaults-trace-dir={tmp_path}")
    result.assert_outcomes(passed=1)
    (written,) = tmp_path.iterdir()
    text = written.read_text()
    assert '"type": "http.request"' in text
    assert '"target": "http"' in text
    assert "sk-secret" not in text
