"""A guarded test's name lookups of real hosts are refused too, before a query goes out.

The socket guard refused ``socket.connect`` to a real address, but the name had been looked
up first: ``urllib.request.urlopen("http://api.example.com")`` in a kit test sent a DNS
query for ``api.example.com`` before the connect was refused. A query is traffic, and it
names the host the app wanted. The inner sessions here replace ``socket.getaddrinfo``,
``gethostbyname`` and ``gethostbyname_ex`` with recorders that answer as a resolver that
knows nothing (`socket.gaierror`), so nothing here leaves the machine, and a refusal is seen
to come before any lookup.
"""

from __future__ import annotations

import pytest

RECORDING_RESOLVER = """
import socket

import pytest

LOOKED_UP = []

def _recorded(name):
    def lookup(host, *args, **kwargs):
        LOOKED_UP.append((name, host))  # would have sent a DNS query for a name
        raise socket.gaierror(socket.EAI_NONAME, "unknown")
    return lookup

socket.getaddrinfo = _recorded("getaddrinfo")
socket.gethostbyname = _recorded("gethostbyname")
socket.gethostbyname_ex = _recorded("gethostbyname_ex")

@pytest.fixture(autouse=True)
def _clear():
    LOOKED_UP.clear()
"""

LOOKUPS = """
import asyncio
import socket
import urllib.error
import urllib.request

import pytest

import pytest_agentfaults as af
from conftest import LOOKED_UP

def test_getaddrinfo(trace):
    with pytest.raises(af.NetworkBlockedError) as caught:
        socket.getaddrinfo("api.example.com", 443)
    assert LOOKED_UP == []  # refused before the query
    with pytest.raises(af.NetworkBlockedError):
        socket.getaddrinfo(b"\\xffapi.example.com", 443)  # bytes that are no text: a name too
    assert LOOKED_UP == []
    assert caught.value.host == "api.example.com"
    assert caught.value.retryable is False
    assert "@pytest.mark.allow_network" in str(caught.value)
    print(caught.value)

def test_gethostbyname(faults):
    for lookup in (socket.gethostbyname, socket.gethostbyname_ex):
        with pytest.raises(af.NetworkBlockedError):
            lookup("api.example.com")
    assert LOOKED_UP == []

def test_urllib(trace):
    # urllib connects through socket.create_connection, which looks the name up first
    with pytest.raises(af.NetworkBlockedError):
        urllib.request.urlopen("http://api.example.com/data", timeout=1)
    assert LOOKED_UP == []

def test_asyncio_lookup(trace):
    async def main():
        # the loop looks names up in a worker thread: refused there too
        return await asyncio.get_running_loop().getaddrinfo("api.example.com", 443)

    with pytest.raises(af.NetworkBlockedError):
        asyncio.run(main())
    assert LOOKED_UP == []

def test_loopback_names_and_addresses_are_looked_up(trace):
    # no query leaves for these: a loopback name, or an address (the connect decides)
    for host in ("localhost", "LOCALHOST.", "app.localhost", "127.0.0.1", "::1",
                 "192.0.2.1", "[2001:db8::1]", "fe80::1%lo", None, "", b"localhost",
                 443):  # not a host at all: the resolver's to refuse, as ever
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo(host, 80)
    assert len(LOOKED_UP) == 12

@pytest.mark.allow_network
def test_allowed(trace):
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("api.example.com", 443)
    assert LOOKED_UP == [("getaddrinfo", "api.example.com")]

def test_plain_test_is_untouched():
    with pytest.raises(socket.gaierror):
        socket.gethostbyname("api.example.com")
    assert LOOKED_UP == [("gethostbyname", "api.example.com")]
"""


@pytest.fixture
def lookups(pytester):
    pytester.makeconftest(RECORDING_RESOLVER)
    pytester.makepyfile(test_lookups=LOOKUPS)
    return pytester


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *args)


def test_a_kit_test_looks_up_no_real_host_and_fails_naming_the_lookup(lookups):
    result = _run(lookups, "-s")
    # the four refused lookups are caught by their tests, and still fail them at teardown
    result.assert_outcomes(passed=7, errors=4)
    result.stdout.fnmatch_lines(
        [
            "*socket.getaddrinfo('api.example.com', 443) was refused*not a loopback*",
            "*ERROR at teardown of test_getaddrinfo*",
            "*socket.getaddrinfo('api.example.com', 443) (NetworkBlockedError)*",
            "*ERROR at teardown of test_gethostbyname*",
            "*socket.gethostbyname('api.example.com') (NetworkBlockedError)*",
            "*socket.gethostbyname_ex('api.example.com') (NetworkBlockedError)*",
            "*ERROR at teardown of test_urllib*",
            "*socket.getaddrinfo('api.example.com', 80) (NetworkBlockedError)*",
            "*ERROR at teardown of test_asyncio_lookup*",
        ]
    )
    errors = result.stdout.str().partition("short test summary")[2]
    for quiet in ("test_loopback_names", "test_allowed", "test_plain_test_is_untouched"):
        assert quiet not in errors


TRACED = """
import socket

import pytest

import pytest_agentfaults as af
from conftest import LOOKED_UP

def test_it(trace):
    with pytest.raises(af.NetworkBlockedError):
        socket.getaddrinfo("api.example.com", 443)
    (event,) = trace.of("http.request")
    assert event.field("refused") is True
    assert event.field("url") == "tcp://api.example.com:443"
    assert event.field("client") == "socket"
    assert event.error.type == "NetworkBlockedError"
    assert "socket.getaddrinfo('api.example.com', 443): refused, never sent" in event.detail
    assert trace.verdict().codes == []  # never sent: nothing to judge
"""


def test_a_refused_lookup_is_an_event_of_the_trace(lookups):
    lookups.makepyfile(test_traced=TRACED)
    result = _run(lookups, "test_traced.py")
    result.assert_outcomes(passed=1, errors=1)


BLOCKED = """
import socket

import pytest

def test_swallowed():
    try:
        socket.getaddrinfo("api.example.com", 443)
    except Exception:
        pass

@pytest.mark.allow_network  # unguarded: the resolver seen is what the guard left
def test_after_it_the_resolver_is_the_suites_own():
    from conftest import _recorded
    assert socket.getaddrinfo.__qualname__ == _recorded("x").__qualname__
    assert socket.gethostbyname.__qualname__ == _recorded("x").__qualname__
"""


def test_block_mode_refuses_the_lookups_of_every_test_and_undoes_its_patch(lookups):
    lookups.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        "asyncio_default_fixture_loop_scope = function\nagentfaults_network = block\n",
    )
    lookups.makepyfile(test_blocked=BLOCKED)
    result = _run(lookups, "test_blocked.py")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_swallowed*",
            "*socket.getaddrinfo('api.example.com', 443) (NetworkBlockedError)*",
        ]
    )
