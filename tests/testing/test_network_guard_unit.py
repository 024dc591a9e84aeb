"""The network guard's parts: the error, loopback, and an answer the SDKs treat as final."""

from __future__ import annotations

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults._network_policy import is_loopback, url_host
from pytest_agentfaults.errors import NEVER_RECOVERED, classify, is_ambiguous
from pytest_agentfaults.testing._network import NetworkGuard, UnmatchedRequestError


def test_the_error_is_never_retried_and_never_recovered():
    error = af.NetworkBlockedError("refused", host="api.openai.com", test="t.py::test")
    assert isinstance(error, NEVER_RECOVERED)
    assert classify(error).retryable is False
    assert is_ambiguous(error) is False  # refused before anything was sent
    assert issubclass(UnmatchedRequestError, af.NetworkBlockedError)
    assert issubclass(UnmatchedRequestError, AssertionError)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("api.localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("10.255.255.1", False),
        ("api.openai.com", False),
        ("localhost.example.com", False),
    ],
)
def test_loopback(host, local):
    assert is_loopback(host) is local


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://api.example.com/v1/x?key=1#top", "api.example.com"),
        ("https://bob:[REDACTED]@api.example.com:8443/v1", "api.example.com:8443"),
        ("http://[::1]:8080/v1", "[::1]:8080"),
        ("HTTP://API.example.com", "API.example.com"),
        ("https://x.test?q=a@b", "x.test"),
        ("/v1/chat/completions", ""),
        ("", ""),
    ],
)
def test_the_host_of_a_url_as_rows_and_cells_name_it(url, host):
    assert url_host(url) == host


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_the_answer_an_sdk_gets_is_final_by_its_own_rules(sdk):
    module = pytest.importorskip(sdk)
    import httpx2

    guard = NetworkGuard("t.py::test")
    request = httpx2.Request(
        "POST", "https://api.example.com/v1/x", headers={"x-stainless-retry-count": "0"}
    )
    response = guard.refuse(httpx2, request).response
    assert response.status_code == 403
    client = module.OpenAI(api_key="k") if sdk == "openai" else module.Anthropic(api_key="k")
    with client:
        assert client._should_retry(response) is False
    assert guard.answered == [
        "POST https://api.example.com/v1/x (a 403 with x-should-retry: false, which no SDK retries)"
    ]
    with pytest.raises(AssertionError, match=r"t\.py::test sent requests to real hosts"):
        guard.check()


def test_a_plain_client_gets_the_error_and_is_noted_for_the_teardown_check():
    guard = NetworkGuard("t.py::test")
    refusal = guard.refuse(
        httpx, httpx.Request("GET", "https://example.com/?api_key=sk-abcdefghijklmnop")
    )
    assert isinstance(refusal.error, UnmatchedRequestError)
    assert "sk-abcdefghijklmnop" not in str(refusal.error)
    # the code under test may swallow the error: the teardown check still names it
    assert guard.answered == ["GET https://example.com/?api_key=[REDACTED] (UnmatchedRequestError)"]
    with pytest.raises(AssertionError, match=r"GET https://example\.com/\?api_key=\[REDACTED\]"):
        guard.check()


def test_the_socket_guard_leaves_what_another_undo_put_back():
    import socket

    from pytest_agentfaults.testing import _network

    before = socket.socket.connect
    assert "connect" not in vars(socket.socket)  # inherited from _socket.socket

    def someone_elses(sock, address):  # pragma: no cover - never called
        raise AssertionError

    socket.socket.connect = someone_elses  # patched before the guard
    guard = _network.NetworkGuard.__new__(_network.NetworkGuard)
    _network._patch_sockets(guard)
    try:
        del socket.socket.connect  # ... and undone before it, as a test's monkeypatch would
    finally:
        _network._unpatch_sockets()
    assert socket.socket.connect is before  # not revived by the guard's undo
    assert "connect" not in vars(socket.socket)
    for name in ("connect_ex", "sendto", "sendmsg"):
        assert name not in vars(socket.socket)


def test_the_refusal_says_the_rule_it_checked_not_whose_machine_it_is():
    # the machine's own hostname or interface address may be this machine: the kit checks
    # only that the host is not a loopback address, and says so
    import socket

    from pytest_agentfaults._network_policy import blocked_message

    own = socket.gethostname()
    message = blocked_message(f"GET http://{own}:8000/", own, "t.py::test")
    assert "not this machine" not in message
    assert f"{own} is not a loopback address (127.0.0.0/8, ::1, localhost)" in message


def test_the_teardown_check_says_how_to_test_an_unreachable_host_on_purpose():
    # An app that swallows the refusal (its offline fallback) fails the test at teardown;
    # the message says how to test that path for real: inject the failure.
    guard = NetworkGuard("t.py::test")
    guard.refuse(httpx, httpx.Request("GET", "https://api.example.com/v1/x?k=1"))
    guard.refuse(httpx, httpx.Request("GET", "https://other.example.com/"))
    with pytest.raises(AssertionError) as raised:
        guard.check()
    assert (
        "To test what the app does when a host cannot be reached, inject that failure: "
        "@pytest.mark.inject_fault(http='connect_error', url='https://api.example.com')."
    ) in str(raised.value)
