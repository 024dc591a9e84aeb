"""No test reaches the real network unless it says so (issue 19, section 2).

The inner tests stand a fake connection pool where the network would be (httpcore2's, the
official SDKs' transport): a request the guard lets through reaches it and is counted in
``SENT``; a refused one never does. Nothing here leaves the machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai")
pytest.importorskip("anthropic")

WIRE = Path(__file__).parents[2] / "fixtures" / "wire"
CHAT = json.loads((WIRE / "openai" / "chat_text.json").read_text())
MESSAGE = json.loads((WIRE / "anthropic" / "messages_text.json").read_text())

PRELUDE = f"""
import asyncio
import json

import anthropic
import httpcore2
import httpx2
import openai
import pytest

import pytest_agentfaults as af

CHAT = json.dumps({CHAT!r}).encode()
MESSAGE = json.dumps({MESSAGE!r}).encode()
SENT = []  # what reached the connection pool: the network, had it been real
ATTEMPTS = []  # every attempt the SDK made, seen by its client's request hook


def _answer(request):
    SENT.append(request.url.host.decode())
    body = MESSAGE if b"anthropic" in request.url.host else CHAT
    return httpcore2.Response(200, headers=[(b"content-type", b"application/json")], content=body)


# named and shaped as httpcore2's own, which respx (http_faults) patches over by name
def handle_request(self, request):
    return _answer(request)


async def handle_async_request(self, request):
    return _answer(request)


@pytest.fixture(autouse=True)
def network(monkeypatch):
    monkeypatch.setattr(httpcore2.ConnectionPool, "handle_request", handle_request)
    monkeypatch.setattr(httpcore2.AsyncConnectionPool, "handle_async_request", handle_async_request)
    SENT.clear()
    ATTEMPTS.clear()


def _hook(request):
    ATTEMPTS.append(f"{{request.method}} {{request.url}}")


async def _ahook(request):
    _hook(request)


KEY = dict(api_key="sk-test-0123456789abcdef")
ASK = [{{"role": "user", "content": "hi"}}]


def openai_client():
    http = httpx2.Client(event_hooks={{"request": [_hook]}})
    return openai.OpenAI(base_url="https://api.openai.com/v1", http_client=http, **KEY)


def async_openai_client():
    http = httpx2.AsyncClient(event_hooks={{"request": [_ahook]}})
    return openai.AsyncOpenAI(base_url="https://api.openai.com/v1", http_client=http, **KEY)


def anthropic_client():
    return anthropic.Anthropic(http_client=httpx2.Client(event_hooks={{"request": [_hook]}}), **KEY)


def async_anthropic_client():
    http = httpx2.AsyncClient(event_hooks={{"request": [_ahook]}})
    return anthropic.AsyncAnthropic(http_client=http, **KEY)


def ask_openai(client):
    return client.chat.completions.create(model="gpt-4o", messages=ASK)


def ask_anthropic(client):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=ASK)
"""


def ini(pytester: pytest.Pytester, line: str) -> None:
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        f"asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n{line}\n",
    )


def run(pytester: pytest.Pytester, body: str, line: str = "") -> pytest.RunResult:
    if line:
        ini(pytester, line)
    pytester.makepyfile(test_net=PRELUDE + body)
    return pytester.runpytest("-p", "no:randomly")


# ---------------------------------------------------------------------------- the SDKs


def test_an_unrouted_openai_request_is_refused_at_once_and_fails_the_test(pytester):
    result = run(
        pytester,
        """
def test_sync(trace):
    with pytest.raises(openai.PermissionDeniedError, match="tests do not reach the network"):
        ask_openai(openai_client())
    assert ATTEMPTS == ["POST https://api.openai.com/v1/chat/completions"]  # not retried
    assert SENT == []

def test_async(trace):
    async def main():
        async with async_openai_client() as client:
            with pytest.raises(openai.PermissionDeniedError, match="allow_network"):
                await ask_openai(client)
    asyncio.run(main())
    assert len(ATTEMPTS) == 1
    assert SENT == []
""",
    )
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_async*",
            "*test_net.py::test_async sent requests to real hosts*",
            "*  POST https://api.openai.com/v1/chat/completions*",
            "*@pytest.mark.allow_network*",
        ]
    )


def test_anthropic_does_not_retry_the_refusal(pytester):
    result = run(
        pytester,
        """
def test_sync(faults):
    with pytest.raises(anthropic.PermissionDeniedError) as caught:
        ask_anthropic(anthropic_client())
    assert "Connection error" not in str(caught.value)
    assert ATTEMPTS == ["POST https://api.anthropic.com/v1/messages"]
    assert SENT == []

def test_async(faults):
    async def main():
        async with async_anthropic_client() as client:
            with pytest.raises(anthropic.PermissionDeniedError):
                await ask_anthropic(client)
    asyncio.run(main())
    assert ATTEMPTS == ["POST https://api.anthropic.com/v1/messages"]
    assert SENT == []
""",
    )
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines(["*  POST https://api.anthropic.com/v1/messages*"])


def test_an_sdk_request_no_http_faults_route_matches_is_refused_once(pytester):
    result = run(
        pytester,
        """
def test_it(http_faults, trace):
    http_faults.post("https://api.openai.com/v1/embeddings").respond(200, json={})
    with pytest.raises(anthropic.PermissionDeniedError):
        ask_anthropic(anthropic_client())
    assert [e.status for e in trace.of("http.request")] == [403]
    http_faults.assert_all_called = False
""",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*POST https://api.anthropic.com/v1/messages*"])


@pytest.mark.allow_network  # the outer test's own guard must not see the inner requests
def test_allow_network_lets_the_sdks_through(pytester):
    result = run(
        pytester,
        """
@pytest.mark.allow_network
def test_sync(trace):
    assert ask_openai(openai_client()).choices[0].message.content
    assert ask_anthropic(anthropic_client()).content[0].text
    assert SENT == ["api.openai.com", "api.anthropic.com"]

@pytest.mark.allow_network
def test_async(trace):
    async def main():
        await ask_openai(async_openai_client())
        await ask_anthropic(async_anthropic_client())
    asyncio.run(main())
    assert SENT == ["api.openai.com", "api.anthropic.com"]
""",
    )
    result.assert_outcomes(passed=2)


@pytest.mark.allow_network
def test_ini_allow_lets_every_test_through(pytester):
    result = run(
        pytester,
        """
def test_it(trace):
    assert ask_openai(openai_client()).choices
    assert SENT == ["api.openai.com"]
""",
        line="agentfaults_network = allow",
    )
    result.assert_outcomes(passed=1)


# ---------------------------------------------------------------------------- plain httpx


def test_plain_httpx_gets_network_blocked_error_naming_host_test_and_way_out(pytester):
    result = run(
        pytester,
        """
import httpx

def test_sync(faults):
    with pytest.raises(af.NetworkBlockedError) as caught:
        httpx.get("https://example.com/data")
    assert caught.value.host == "example.com"
    assert caught.value.test.endswith("test_net.py::test_sync")
    assert "@pytest.mark.allow_network" in str(caught.value)
    assert "agentfaults_network = allow" in str(caught.value)

def test_loopback_is_allowed(faults):
    with pytest.raises(httpx.ConnectError):  # nothing listens there: it went out, refused
        httpx.get("http://127.0.0.1:9/")
""",
    )
    # caught in the test, the refusal still fails it at teardown (a fallback may hide it)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_sync*"])


def test_a_bad_ini_value_is_a_usage_error(pytester):
    result = run(pytester, "def test_it(): pass\n", line="agentfaults_network = sometimes")
    result.stderr.fnmatch_lines(["*agentfaults_network = 'sometimes': use kit*block*allow*"])


# ---------------------------------------------------------------------------- our model clients


def test_our_model_client_refuses_the_real_host_and_is_not_retried(pytester):
    result = run(
        pytester,
        """
def test_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    agent = af.Agent("bot", model="openai:gpt-4o")
    with pytest.raises(af.NetworkBlockedError, match="api.openai.com"):
        agent.run("hi")
""",
    )
    result.assert_outcomes(passed=1)


# A subprocess, where the kit is not loaded until the test body imports it: the test does
# not use the kit, and only the model client's own check stands between it and the host.
NO_KIT = """
import socket
import sys
import time

import pytest

def test_our_model_client_is_refused_without_the_kit(monkeypatch):
    assert type(time.sleep).__name__ == "builtin_function_or_method"  # not a kit test: real time
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    import pytest_agentfaults as af

    model = af.OpenAIModel("gpt-4o")
    assert "api.openai.com" in model.base_url
    request = af.ModelRequest(messages=[af.Message(role="user", content="hi")])
    with pytest.raises(af.NetworkBlockedError, match="api.openai.com.*test_our_model_client"):
        model.request(request)
    assert SENT == []
"""

REFUSING_CONNECT = """
import socket

import pytest

SENT = []

def _never(sock, address):
    SENT.append(address)  # would have sent a SYN
    raise ConnectionRefusedError(address)

socket.socket.connect = _never
socket.socket.connect_ex = _never

@pytest.fixture(autouse=True)
def sent():
    return SENT
"""


def test_without_the_kit_our_model_client_still_refuses(pytester):
    pytester.makeconftest(REFUSING_CONNECT)
    pytester.makepyfile(test_no_kit="from conftest import SENT\n" + NO_KIT)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


BLOCKED_SOCKET = """
import socket
import sys
import time

import pytest

from conftest import SENT

def test_connect_to_a_real_address_is_refused_before_sending():
    assert type(time.sleep).__name__ == "builtin_function_or_method"  # not a kit test: real time
    from pytest_agentfaults.errors import NetworkBlockedError

    with socket.socket() as sock, pytest.raises(NetworkBlockedError) as caught:
        sock.connect(("10.255.255.1", 80))
    assert SENT == []
    assert caught.value.host == "10.255.255.1"
    assert "test_connect_to_a_real_address_is_refused_before_sending" in str(caught.value)
    assert "agentfaults_network = allow" in str(caught.value)

def test_loopback_stays_open():
    with socket.socket() as sock:
        with pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", 9))
    assert SENT == [("127.0.0.1", 9)]  # let through to the (refusing) real connect

@pytest.mark.allow_network
def test_allow_network_opts_out():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("10.255.255.1", 80))
    assert SENT[-1] == ("10.255.255.1", 80)
"""


def test_ini_block_guards_socket_connect_in_tests_without_the_kit(pytester):
    pytester.makeconftest(REFUSING_CONNECT)
    ini(pytester, "agentfaults_network = block")
    pytester.makepyfile(test_block=BLOCKED_SOCKET)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    # the refused test caught the refusal: it still fails at teardown, as a kit test would
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_connect_to_a_real_address_is_refused_before_sending*"]
    )


def test_ini_block_guards_httpx_in_tests_without_the_kit(pytester):
    ini(pytester, "agentfaults_network = block")
    pytester.makepyfile(
        test_block="""
import sys
import time
import httpx
import pytest

def test_it():
    assert type(time.sleep).__name__ == "builtin_function_or_method"  # not a kit test: real time
    with pytest.raises(AssertionError, match="GET https://example.com/ was refused"):
        httpx.get("https://example.com/")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)  # caught, and failed at teardown naming it
    result.stdout.fnmatch_lines(["*GET https://example.com/ (UnmatchedRequestError)*"])


PYDANTIC_AI = """
import pytest

pydantic_ai = pytest.importorskip("pydantic_ai")

def test_asyncio_run(trace, monkeypatch):  # not run_sync: it leaves its event loop open
    import asyncio

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with pytest.raises(Exception, match="403"):
        asyncio.run(pydantic_ai.Agent("openai:gpt-4o").run("hi"))

@pytest.mark.asyncio
async def test_async(trace, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with pytest.raises(Exception, match="403"):
        await pydantic_ai.Agent("openai:gpt-4o").run("hi")
"""


def test_pydantic_ai_through_the_openai_sdk_is_refused_once(pytester):
    pytest.importorskip("pydantic_ai")
    pytester.makepyfile(test_pai=PYDANTIC_AI)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=2)
    # Count in the error sections only: under CI=true pytest repeats each message,
    # untruncated, in the short summary, and that must not count as a retry.
    summary = next(i for i, line in enumerate(result.outlines) if "short test summary" in line)
    refused = [
        line
        for line in result.outlines[:summary]
        if line.strip().startswith("POST https://api.openai.com")
    ]
    assert len(refused) == 2  # one request per test: not retried


UNRELATED_AFTER_KIT = {
    "test_1_kit": """
import pytest_agentfaults as af

def test_kit(trace):  # loads the runtime: later tests must not inherit the kit's guard
    af.Agent("bot", model=af.ScriptedModel([af.say("hi")])).run("go")
""",
    "test_2_unrelated": """
import httpcore
import httpx

def test_unrelated(monkeypatch):
    # where the network would be (below httpx's transport): what the kit lets through
    monkeypatch.setattr(httpcore.ConnectionPool, "handle_request", lambda self, r: httpcore.Response(200))
    assert httpx.get("https://example.com/").status_code == 200
""",
    "test_3_same_module": """
import httpcore
import httpx
import pytest_agentfaults as af

def test_imports_the_kit_but_uses_none_of_it(monkeypatch):
    monkeypatch.setattr(httpcore.ConnectionPool, "handle_request", lambda self, r: httpcore.Response(200))
    assert httpx.get("https://example.com/").status_code == 200
""",
}


def test_a_test_that_does_not_use_the_kit_keeps_its_network_after_a_kit_test(pytester):
    # Do no harm: once a kit test has loaded the runtime, an unrelated test's httpx
    # requests must go where they went without the plugin, whatever ran before it.
    pytester.makepyfile(**UNRELATED_AFTER_KIT)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_ini_block_answers_an_sdk_without_the_kit_with_the_final_403(pytester):
    pytest.importorskip("anthropic")
    ini(pytester, "agentfaults_network = block")
    pytester.makepyfile(
        test_block="""
import anthropic
import httpx2
import pytest

def test_it(monkeypatch):
    sent = []
    real = httpx2.Client.send
    monkeypatch.setattr(httpx2.Client, "send", lambda c, r, **kw: sent.append(r) or real(c, r, **kw))
    with anthropic.Anthropic(api_key="sk-ant-test-0123456789") as client:
        with pytest.raises(anthropic.PermissionDeniedError, match="allow_network"):
            client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
    assert len(sent) == 1  # not retried
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    # not a kit test, and still failed at teardown naming the request, as ci.md says
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*POST https://api.anthropic.com/v1/messages (a 403*"])
