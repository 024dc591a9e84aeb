"""A guarded test sends no reverse lookup and no datagram to a real host either.

The guard refused ``socket.connect`` to a real address and the forward lookups of a real
name, but two ways out were left: a reverse lookup (``socket.gethostbyaddr``,
``socket.getfqdn`` through it, ``socket.getnameinfo``) sends a PTR query for the address
to the resolver, and a datagram (``sock.sendto``, ``sock.sendmsg`` with an address: UDP,
as a DNS library such as dnspython, a statsd client or an SSDP probe sends) needs no
connect at all. The inner sessions here replace each of them with a recorder that sends
nothing (the resolver knows nothing, the datagram is dropped), so nothing here leaves the
machine, and a refusal is seen to come before the call.
"""

from __future__ import annotations

import pytest

RECORDERS = """
import socket

import pytest

CALLED = []

def _resolver(name):
    def lookup(*args, **kwargs):
        CALLED.append((name, args[0]))  # would have sent a PTR query
        raise socket.herror(1, "Unknown host")
    return lookup

def _sender(name):
    def send(sock, *args):
        CALLED.append((name, args[-1]))  # would have sent a datagram
        return len(args[0]) if name == "sendto" else sum(len(b) for b in args[0])
    return send

socket.gethostbyaddr = _resolver("gethostbyaddr")
socket.getnameinfo = _resolver("getnameinfo")
socket.socket.sendto = _sender("sendto")
socket.socket.sendmsg = _sender("sendmsg")

@pytest.fixture(autouse=True)
def _clear():
    CALLED.clear()
"""

CALLS = """
import asyncio
import socket

import pytest

import pytest_agentfaults as af
from conftest import CALLED

def test_gethostbyaddr(trace):
    with pytest.raises(af.NetworkBlockedError) as caught:
        socket.gethostbyaddr("192.0.2.1")
    assert CALLED == []  # refused before the query
    assert caught.value.host == "192.0.2.1"
    assert caught.value.retryable is False
    assert "@pytest.mark.allow_network" in str(caught.value)
    print(caught.value)

def test_getfqdn(faults):
    # getfqdn goes through gethostbyaddr, and swallows only an OSError: not this refusal
    with pytest.raises(af.NetworkBlockedError):
        socket.getfqdn("api.example.com")
    assert CALLED == []

def test_getnameinfo(trace):
    with pytest.raises(af.NetworkBlockedError):
        socket.getnameinfo(("2001:db8::1", 443), 0)
    assert CALLED == []

def test_sendto(trace):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(af.NetworkBlockedError):
            sock.sendto(b"query", ("192.0.2.53", 53))
        with pytest.raises(af.NetworkBlockedError):
            sock.sendto(b"query", 0, ("192.0.2.53", 53))  # the flags form
        assert sock.fileno() != -1  # a refused datagram leaves the socket open
    assert CALLED == []

def test_sendmsg(trace):
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        with pytest.raises(af.NetworkBlockedError):
            sock.sendmsg([b"ping"], [], 0, ("2001:db8::53", 53))
    assert CALLED == []

def test_asyncio_datagram(trace):
    async def main():
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
        )
        try:
            transport.sendto(b"hello", ("192.0.2.7", 9))
            await asyncio.sleep(0)
        finally:
            transport.close()

    asyncio.run(main())  # the transport reports the refusal to its protocol, not here
    assert CALLED == []

def test_loopback_and_local_pass_through(trace):
    # no query leaves for these, and no datagram leaves the machine
    for host in ("127.0.0.1", "localhost", "::1"):
        with pytest.raises(socket.herror):
            socket.gethostbyaddr(host)
    with pytest.raises(socket.herror):
        socket.getnameinfo(("127.0.0.1", 80), 0)
    with pytest.raises(socket.herror):  # numeric: the address is not looked up
        socket.getnameinfo(("192.0.2.1", 80), socket.NI_NUMERICHOST)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        assert sock.sendto(b"x", ("127.0.0.1", 9)) == 1
        assert sock.sendmsg([b"xy"]) == 2  # no address: the connected peer's (none here)
    assert [name for name, _ in CALLED] == [
        "gethostbyaddr", "gethostbyaddr", "gethostbyaddr", "getnameinfo", "getnameinfo",
        "sendto", "sendmsg",
    ]

@pytest.mark.allow_network
def test_allowed(trace):
    with pytest.raises(socket.herror):
        socket.gethostbyaddr("192.0.2.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", ("192.0.2.53", 53))
    assert CALLED == [("gethostbyaddr", "192.0.2.1"), ("sendto", ("192.0.2.53", 53))]

def test_plain_test_is_untouched():
    with pytest.raises(socket.herror):
        socket.gethostbyaddr("192.0.2.1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", ("192.0.2.53", 53))
    assert CALLED == [("gethostbyaddr", "192.0.2.1"), ("sendto", ("192.0.2.53", 53))]
"""


@pytest.fixture
def calls(pytester):
    pytester.makeconftest(RECORDERS)
    pytester.makepyfile(test_calls=CALLS)
    return pytester


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def test_a_kit_test_sends_no_reverse_lookup_or_datagram_and_fails_naming_it(calls):
    result = _run(calls, "-s")
    # each refused call is caught (or swallowed) by its test, and still fails it at teardown
    result.assert_outcomes(passed=9, errors=6)
    result.stdout.fnmatch_lines(
        [
            "*socket.gethostbyaddr('192.0.2.1') was refused*not a loopback*",
            "*ERROR at teardown of test_gethostbyaddr*",
            "*socket.gethostbyaddr('192.0.2.1') (NetworkBlockedError)*",
            "*ERROR at teardown of test_getfqdn*",
            "*socket.gethostbyaddr('api.example.com') (NetworkBlockedError)*",
            "*ERROR at teardown of test_getnameinfo*",
            "*socket.getnameinfo(('2001:db8::1', 443), 0) (NetworkBlockedError)*",
            "*ERROR at teardown of test_sendto*",
            "*socket.sendto(('192.0.2.53', 53)) (NetworkBlockedError)*",
            "*ERROR at teardown of test_sendmsg*",
            "*socket.sendmsg(('2001:db8::53', 53)) (NetworkBlockedError)*",
            "*ERROR at teardown of test_asyncio_datagram*",
            "*socket.sendto(('192.0.2.7', 9)) (NetworkBlockedError)*",
        ]
    )
    errors = result.stdout.str().partition("short test summary")[2]
    for quiet in ("test_loopback_and_local", "test_allowed", "test_plain_test_is_untouched"):
        assert quiet not in errors


TRACED = """
import socket

import pytest

import pytest_agentfaults as af

def test_it(trace):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(af.NetworkBlockedError):
            sock.sendto(b"query", ("192.0.2.53", 53))
    (event,) = trace.of("http.request")
    assert event.field("refused") is True
    assert event.field("url") == "tcp://192.0.2.53:53"
    assert event.field("client") == "socket"
    assert "socket.sendto(('192.0.2.53', 53)): refused, never sent" in event.detail
"""


def test_a_refused_datagram_is_an_event_of_the_trace(calls):
    calls.makepyfile(test_traced=TRACED)
    result = _run(calls, "test_traced.py")
    result.assert_outcomes(passed=1, errors=1)


BLOCKED = """
import socket

import pytest

def test_swallowed():
    try:
        socket.gethostbyaddr("192.0.2.1")
    except Exception:
        pass

@pytest.mark.allow_network  # unguarded: what is seen is what the guard left
def test_after_it_the_suites_own_are_back():
    from conftest import _resolver, _sender
    assert socket.gethostbyaddr.__qualname__ == _resolver("x").__qualname__
    assert socket.getnameinfo.__qualname__ == _resolver("x").__qualname__
    assert socket.socket.sendto.__qualname__ == _sender("x").__qualname__
    assert socket.socket.sendmsg.__qualname__ == _sender("x").__qualname__
"""


def test_block_mode_refuses_them_in_every_test_and_undoes_its_patch(calls):
    calls.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nagentfaults_network = block\n",
    )
    calls.makepyfile(test_blocked=BLOCKED)
    result = _run(calls, "test_blocked.py")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallowed*",
            "*socket.gethostbyaddr('192.0.2.1') (NetworkBlockedError)*",
        ]
    )
