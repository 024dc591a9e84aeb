"""Messages of the HTTP faults that point a new user to the fix (pytester, official SDKs)."""

from __future__ import annotations

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing._marker import parse_marker

pytest.importorskip("httpx2")
pytest.importorskip("openai")

OPENAI = """
import httpx
import openai
import pytest
from pytest_agentfaults.testing import say

ASK = dict(model="m", messages=[{"role": "user", "content": "hi"}])
"""


# ------------------------------------------------------------ a kind of the other keyword


@pytest.mark.parametrize(
    ("marker", "hint"),
    [
        (
            {"http": "rate_limit"},
            "for a 429 use http=429 (retry_after=...) or http='quota'; "
            "'rate_limit' is an llm= kind",
        ),
        ({"http": "server_error"}, "for a 5xx use http=503; 'server_error' is an llm= kind"),
        (
            {"http": "connection"},
            "for a dropped connection use http='connect_error' or http='reset'; "
            "'connection' is an llm= kind",
        ),
        (
            {"http": "truncated"},
            "for a cut stream use http='truncated_stream'; 'truncated' is an llm= kind",
        ),
        ({"http": "empty"}, "'empty' is an llm= kind: write llm='empty'"),
        ({"llm": "quota"}, "'quota' is an http= kind: write http='quota'"),
        (
            {"llm": "truncated_stream"},
            "for a cut answer use llm='truncated'; 'truncated_stream' is an http= kind",
        ),
        (
            {"llm": "connect_error"},
            "for a dropped connection use llm='connection'; 'connect_error' is an http= kind",
        ),
        (
            {"llm": 503},
            "for an HTTP status use llm='server_error', status=503 or http=503",
        ),
    ],
)
def test_a_kind_of_the_other_keyword_names_that_keyword(marker, hint):
    with pytest.raises(UsageError) as raised:
        parse_marker((), marker)
    text = str(raised.value)
    key, value = next(iter(marker.items()))
    assert text.startswith(f"@pytest.mark.inject_fault({key}={value!r}): {key}= must be")
    assert text.endswith(f"got {value!r}; {hint}"), text


def test_an_unknown_kind_of_neither_keyword_gets_no_hint():
    with pytest.raises(UsageError) as raised:
        parse_marker((), {"http": "flaky"})
    assert str(raised.value).endswith("got 'flaky'")


# ------------------------------------------------------------ a url= that matched nothing


def test_an_unfired_http_fault_names_the_requests_the_test_made(suite):
    result = suite(
        OPENAI
        + """
@pytest.mark.inject_fault(http=503, url="https://api.openai.com/v1/chat/completion")
def test_misspelt(http_faults, openai_client):
    http_faults.script("openai", [say("one")])
    openai_client.chat.completions.create(**ASK)
    http_faults.get("https://api.example.test/x").respond(200)
    httpx.get("https://api.example.test/x?key=AIzaSyA1234567890abcdefghijklmnopqrstuv")
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*what happened: no HTTP request matched "
            "https://api.openai.com/v1/chat/completion; requests made: "
            "POST https://api.openai.com/v1/chat/completions, GET https://api.example.test/x?key=*",
        ]
    )
    assert "AIzaSyA1234567890" not in result.stdout.str()


def test_an_unfired_llm_server_fault_names_the_requests_by_the_server_s_stable_origin(suite):
    result = suite(
        OPENAI
        + """
@pytest.mark.inject_fault(http=503, url="/v1/message")
def test_misspelt(llm_server):
    llm_server.script([say("one")])
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client:
        client.chat.completions.create(**ASK)
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*what happened: no HTTP request matched /v1/message; requests made: "
            "POST http://llm_server/v1/chat/completions",
        ]
    )


def test_the_requests_named_are_a_few_distinct_ones(suite):
    result = suite(
        OPENAI
        + """
@pytest.mark.inject_fault(http=503, url="https://api.example.test/none")
def test_many(http_faults):
    http_faults.get(url__startswith="https://api.example.test/").respond(200)
    for number in [1, 1, 2, 3, 4, 5]:
        httpx.get(f"https://api.example.test/{number}")
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*requests made: GET https://api.example.test/1, GET https://api.example.test/2, "
            "GET https://api.example.test/3 and 2 more",
        ]
    )


def test_past_the_requests_kept_the_message_says_more_without_a_count(suite):
    result = suite(
        OPENAI
        + """
@pytest.mark.inject_fault(http=503, url="https://api.example.test/none")
def test_many(http_faults):
    http_faults.get(url__startswith="https://api.example.test/").respond(200)
    for number in range(30):
        httpx.get(f"https://api.example.test/{number}")
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*GET https://api.example.test/2 and more"])


# ------------------------------------------------------------ httpx mocks do not see httpx2

MOCKED = """
import httpx2
import openai
import pytest
import respx

URL = "https://api.openai.com/v1/chat/completions"
CHAT = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "mocked"},
                     "finish_reason": "stop"}]}
ASK = dict(model="m", messages=[{"role": "user", "content": "x"}])
"""


def test_a_refused_sdk_request_says_the_httpx_mocks_of_the_test_do_not_see_it(suite):
    pytest.importorskip("pytest_httpx")
    result = suite(
        MOCKED
        + """
@pytest.mark.httpx_mock(assert_all_responses_were_requested=False)
def test_both_fixtures(respx_mock, httpx_mock, openai_client):
    respx_mock.post(URL).respond(200, json=CHAT)
    httpx_mock.add_response(url=URL, json=CHAT)
    openai_client.chat.completions.create(**ASK)

def test_a_respx_router_of_its_own(openai_client):
    with respx.mock(assert_all_called=False) as router:
        router.post(URL).respond(200, json=CHAT)
        openai_client.chat.completions.create(**ASK)

def test_a_plain_httpx2_client(respx_mock, trace):
    respx_mock.post(URL).respond(200, json=CHAT)
    httpx2.post(URL, json={})

def test_no_mock(openai_client):
    openai_client.chat.completions.create(**ASK)
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=4)
    skipped = "httpx, not httpx2, which sent this request (as the official SDKs do)"
    # the reason first, right after what was refused; then the usual ways out
    result.stdout.fnmatch_lines(
        [
            f"*PermissionDeniedError*(test test_suite.py::test_both_fixtures). respx_mock and "
            f"httpx_mock mock {skipped}: their routes do not see it; http_faults routes see "
            "both. Answer it in the test*",
            f"*PermissionDeniedError*(test test_suite.py::test_a_respx_router_of_its_own). "
            f"respx.mock mocks {skipped}: its routes do not see it; *",
            f"*UnmatchedRequestError*(test test_suite.py::test_a_plain_httpx2_client). "
            f"respx_mock mocks {skipped}: its routes*",
            "*PermissionDeniedError*(test test_suite.py::test_no_mock). Answer it in the test*",
        ]
    )


def test_the_teardown_check_of_a_swallowed_refusal_says_it_too(suite):
    result = suite(
        MOCKED
        + """
def test_swallowed(respx_mock, openai_client):
    respx_mock.post(URL).respond(200, json=CHAT)
    with pytest.raises(openai.PermissionDeniedError):
        openai_client.chat.completions.create(**ASK)
"""
    ).runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*sent requests to real hosts*", "*respx_mock mocks httpx, not httpx2*"]
    )


# ------------------------------------------------------------ a url= with no scheme


def test_a_marker_url_without_a_scheme_is_refused_at_setup():
    with pytest.raises(UsageError) as raised:
        parse_marker((), {"http": 503, "url": "api.openai.com/v1/chat/completions"})
    assert str(raised.value) == (
        "@pytest.mark.inject_fault(http=503, url='api.openai.com/v1/chat/completions'): "
        "url='api.openai.com/v1/chat/completions' has no scheme, so it matches no request; "
        "write the whole URL ('https://api.openai.com/v1/chat/completions'), "
        "or a path starting with '/' to match it on any host"
    )


def test_a_fluent_url_without_a_scheme_is_refused_at_the_call(suite):
    result = suite("""
def test_fluent(faults):
    faults.http(url="api.example.test/x?key=sk-proj-abcdefghijklmnopqrstuvwx").status(503)
""").runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *UsageError: faults.http(url=*): url=* has no scheme, so it matches no request; *"]
    )
    assert "abcdefghijklmnopqrstuvwx" not in result.stdout.str()


def test_a_refused_request_names_the_http_fault_that_did_not_match_it(suite):
    result = suite(
        OPENAI
        + """
@pytest.mark.inject_fault(http=503, url="https://api.openai.com/v1/embeddings")
@pytest.mark.inject_fault(http=503, url="https://api.openai.com/v1/chat/completions", method="GET")
def test_refused(http_faults):
    with openai.OpenAI(api_key="sk-test", max_retries=0) as client:
        client.chat.completions.create(**ASK)
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert (
        "This test's http faults did not match it: "
        "@pytest.mark.inject_fault(http=503, url='https://api.openai.com/v1/embeddings') "
        "(its url= is not this URL, nor a prefix of it ending at '/'); "
        "@pytest.mark.inject_fault(http=503, url='https://api.openai.com/v1/chat/completions', "
        "method='GET') (its method= is GET, the request's POST)."
    ) in out


def test_a_refused_request_names_the_http_faults_routes_it_matched_none_of(suite):
    # a route with a typo, or a script on the wrong provider's endpoint: the refusal
    # said only "answer it with a route", which the test believes it did
    result = suite(
        OPENAI
        + """
def test_refused(http_faults):
    http_faults.post("https://api.openai.com/v1/chat/completion").respond(200, json={})
    http_faults.script("openai-responses", [say("x")])
    with openai.OpenAI(api_key="sk-test", max_retries=0) as client:
        client.chat.completions.create(**ASK)
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert (
        "No http_faults route of this test matched it: "
        "POST https://api.openai.com/v1/chat/completion; "
        "POST https://api.openai.com/v1/responses (http_faults.script('openai-responses', ...))."
    ) in out


def test_a_fault_only_other_threads_could_have_taken_says_why_and_how(pytester):
    pytester.makepyfile(
        """
        import threading

        import httpx
        import pytest

        @pytest.mark.inject_fault(http=503)
        def test_heartbeat_only():
            def beat():
                transport = httpx.MockTransport(lambda request: httpx.Response(200))
                with httpx.Client(transport=transport) as client:
                    assert client.get("https://telemetry.example.com/beat").status_code == 200

            worker = threading.Thread(target=beat)
            worker.start()
            worker.join()
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fault on http (any request) never fired: @pytest.mark.inject_fault(http=503)*",
            "*what happened: the test made no HTTP request in its own context; 1 request came"
            " from a thread that does not carry it*",
            "*fix: give url= the endpoint (a fault with url= reaches every thread), or run the"
            " code in a copy of the test's context*",
        ]
    )
