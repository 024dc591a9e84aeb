"""A kit test is sealed: every client is refused a real host, and a refusal fails the test.

Findings 4 and 5 of the audit: a refusal the app's fallback swallowed left the test
green (only the SDKs' refusals failed it at teardown), and urllib, requests and raw
sockets reached real hosts by default. The inner tests replace the real
``socket.connect`` with one that records the address and refuses (`SENT`), so nothing
here leaves the machine, and a refusal is seen to come before any connect.
"""

from __future__ import annotations

import pytest

REFUSING_CONNECT = """
import socket

import pytest

SENT = []

def _never(sock, address):
    SENT.append(address)  # would have sent a SYN
    raise ConnectionRefusedError(address)

socket.socket.connect = _never
socket.socket.connect_ex = _never
"""

SEALED = """
import socket
import urllib.request

import httpcore
import httpx
import pytest

import pytest_agentfaults as af
from conftest import SENT

def fetch_or_cached(url):  # the app's fallback: any error gives the cached answer
    try:
        return httpx.get(url).text
    except Exception:
        return "cached"

def test_swallowed_httpx(trace):
    assert fetch_or_cached("http://192.0.2.1:9/data") == "cached"

def test_raw_socket(trace):
    with socket.socket() as sock, pytest.raises(af.NetworkBlockedError) as caught:
        sock.connect(("192.0.2.1", 80))
    assert SENT == []  # refused before any connect
    assert caught.value.host == "192.0.2.1"
    assert "@pytest.mark.allow_network" in str(caught.value)
    print(caught.value)  # the advice, for the test below

def test_urllib(faults):
    with pytest.raises(Exception) as caught:
        urllib.request.urlopen("http://192.0.2.1:9/data", timeout=1)
    assert SENT == []
    assert "was refused" in str(caught.value)

def test_loopback_stays_open(trace):
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", 9))
    assert SENT == [("127.0.0.1", 9)]  # let through to the (refusing) real connect

@pytest.mark.allow_network
def test_allowed(trace):
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("192.0.2.1", 80))
    assert SENT == [("192.0.2.1", 80)]

def test_plain_test_is_untouched():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("192.0.2.1", 80))
    assert SENT == [("192.0.2.1", 80)]
"""


@pytest.fixture
def sealed(pytester):
    pytester.makeconftest(
        REFUSING_CONNECT + "\n@pytest.fixture(autouse=True)\ndef _clear():\n    SENT.clear()\n"
    )
    pytester.makepyfile(test_sealed=SEALED)
    return pytester


def test_a_refusal_the_app_swallowed_fails_the_test_at_teardown_naming_it(sealed):
    result = sealed.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "test_sealed.py::test_swallowed_httpx"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_swallowed_httpx*", "*GET http://192.0.2.1:9/data*"]
    )


def test_every_client_in_a_kit_test_is_refused_a_real_host_before_it_connects(sealed):
    result = sealed.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-k", "not swallowed"
    )
    # the raw socket and urllib refusals are caught by their tests, and still fail them
    # at teardown: every refusal is a request the test did not answer
    result.assert_outcomes(passed=5, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_raw_socket*",
            "*socket.connect(('192.0.2.1', 80))*",
        ]
    )


def test_a_socket_refusal_gives_advice_that_reaches_a_socket_client(sealed):
    # http faults and http_faults routes reach httpx and httpx2 only: for urllib, requests
    # or a raw socket they are no way out, and 'https://the.host' named no host at all
    result = sealed.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "test_sealed.py::test_raw_socket", "-s"
    )
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert "the.host" not in output
    assert "http_faults.post(url)" not in output
    assert "inject_fault(http=" not in output
    result.stdout.fnmatch_lines(
        [
            "*socket.connect(('192.0.2.1', 80))*",
            "*reach httpx and httpx2 clients only*loopback server*allow_network*",
        ]
    )


BLOCK_INI = (
    "[pytest]\naddopts = -p no:hypothesispytest\nasyncio_default_fixture_loop_scope = function\n"
    "filterwarnings = error\nagentfaults_network = block\n"
)

PLAIN_SWALLOWS = """
import socket
import urllib.request

import httpx
import pytest

from conftest import SENT

def test_swallowed_httpx():
    try:
        httpx.get("http://192.0.2.1:9/data")
    except Exception:
        pass

def test_swallowed_socket():
    try:
        with socket.socket() as sock:
            sock.connect(("192.0.2.1", 80))
    except Exception:
        pass
    assert SENT == []

def test_swallowed_urllib():
    try:
        urllib.request.urlopen("http://192.0.2.1:9/data", timeout=1)
    except Exception:
        pass
    assert SENT == []

def test_loopback_only():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", 9))

@pytest.mark.xfail(reason="fails on its own", strict=True)
def test_fails_on_its_own():
    try:
        httpx.get("http://192.0.2.1:9/data")
    except Exception:
        pass
    assert False
"""


def test_block_mode_fails_a_plain_test_that_swallowed_a_refusal_at_teardown(sealed):
    # As in a kit test: under `agentfaults_network = block` a test that does not use the
    # kit, and caught the refusal, fails at teardown naming each refused request.
    sealed.makefile(".ini", pytest=BLOCK_INI)
    sealed.makepyfile(test_plain=PLAIN_SWALLOWS)
    result = sealed.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "test_plain.py"
    )
    result.assert_outcomes(passed=4, errors=3, xfailed=1)  # the teardown errors of passed tests
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallowed_httpx*",
            "*test_swallowed_httpx sent requests to real hosts*",
            "*GET http://192.0.2.1:9/data (UnmatchedRequestError)*",
            "*ERROR at teardown of test_swallowed_socket*",
            "*socket.connect(('192.0.2.1', 80)) (NetworkBlockedError)*",
            "*ERROR at teardown of test_swallowed_urllib*",
            "*socket.connect(('192.0.2.1', 9)) (NetworkBlockedError)*",
        ]
    )
    assert "test_loopback_only" not in result.stdout.str().partition("short test summary")[2]


RAW_SOCKET_TRACE = """
import socket

import pytest

import pytest_agentfaults as af
from conftest import SENT

def test_it(trace):
    with socket.socket() as sock, pytest.raises(af.NetworkBlockedError):
        sock.connect(("192.0.2.1", 80))
    assert SENT == []
    (event,) = trace.of("http.request")
    assert event.field("refused") is True
    assert event.field("url") == "tcp://192.0.2.1:80"
    assert event.field("client") == "socket"
    assert event.error.type == "NetworkBlockedError"
    assert event.error.retryable is False
    assert "socket.connect(('192.0.2.1', 80)): refused, never sent" in event.detail
    assert trace.verdict().codes == []  # never sent: nothing to judge
"""


def test_a_socket_refusal_is_an_event_of_the_trace_and_in_the_report(sealed):
    sealed.makepyfile(test_trace=RAW_SOCKET_TRACE)
    result = sealed.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "test_trace.py"
    )
    result.assert_outcomes(passed=1, errors=1)  # caught, and still failed at teardown
    result.stdout.fnmatch_lines(
        [
            "*recovery trace*",
            # the timeline's line, as for a refused httpx request
            "*http.request*NetworkBlockedError: agentfaults: socket.connect(('192.0.2.1', 80))*",
        ]
    )
