"""Whether the running test may reach the network: the words and the per-test switch.

Standard library only: the plugin imports it at start-up and sets `CURRENT` for a test
that does not use the kit, and the runtime's model clients read it (see
`pytest_agentfaults.runtime.models._guard`). In a test that uses the kit, the test kit's
guard on httpx and httpx2 decides instead (`pytest_agentfaults.testing._network`), since
it also sees the test's faults, routes and mocks.
"""

from __future__ import annotations

import ipaddress
from contextvars import ContextVar
from typing import Any, Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "CURRENT",
    "HOW_TO_ALLOW",
    "SOCKET_WAY_OUT",
    "NetworkPolicy",
    "blocked_message",
    "is_loopback",
    "url_host",
]

_LOOPBACK_NAMES: Final = frozenset({"localhost", "::1", "[::1]", "0:0:0:0:0:0:0:1"})

HOW_TO_ALLOW: Final = (
    "allow the network for this test with @pytest.mark.allow_network, or for every test "
    "with `agentfaults_network = allow` in the pytest ini file"
)


def url_host(url: str) -> str:
    """The ``host[:port]`` of an absolute ``url``, without user info; ``""`` for a path.

    Plain string work, never `urllib.parse.urlsplit`: a recorded URL is redacted, and a
    password become ``[REDACTED]`` looks to urlsplit like a bad IPv6 address (ValueError).
    """
    scheme, found, rest = url.partition("://")
    if not found or not scheme:
        return ""
    for end in "/?#":
        rest = rest.partition(end)[0]
    return rest.rpartition("@")[2]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ``localhost``, ``::1``).

    By its spelling alone, with no lookup: the machine's own hostname or interface
    address is not loopback here, and is refused (the message says which rule).
    """
    host = host.lower().strip("[]")
    if host.startswith("127.") or host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    if ":" not in host:  # a name, or an IPv4 address outside 127/8: not loopback
        return False
    try:  # another spelling of ::1, or ::ffff:127.x.y.z
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


#: the way out for a client below httpx: the test's routes and http faults never see it
SOCKET_WAY_OUT: Final = (
    "http_faults routes and http faults reach httpx and httpx2 clients only: point this "
    "client at a loopback server the test starts (or llm_server)"
)


def blocked_message(
    what: str, host: str, test: str, why: str = "", *, socket_client: bool = False
) -> str:
    """The refusal: what was sent, where, by which test, ``why`` (a sentence), the ways out.

    ``socket_client``: refused at ``socket.connect`` (urllib, requests, a raw socket), where
    no route or http fault of the test can answer.
    """
    way_out = (
        SOCKET_WAY_OUT
        if socket_client
        else "Answer it in the test with a route (http_faults.post(url).respond(200, "
        "json=...)) or a fault, or point the client at a loopback server such as llm_server"
    )
    return (
        f"agentfaults: {what} was refused: tests do not reach the network, and {host} is "
        f"not a loopback address (127.0.0.0/8, ::1, localhost) (test {test}).{why} "
        f"{way_out}; or {HOW_TO_ALLOW}."
    )


class NetworkPolicy:
    """The running test, for the model clients' own check (set by the plugin).

    One per pytest session, switched per test: ``running`` is the running test (a pytest
    item), named (`test`) only when a request is refused, and ``guarded`` is True while
    this check stands aside: between tests, and once the test kit's httpx guard is on for
    the test (a kit fixture asked for late): the guard then decides, knowing the test's
    routes.
    """

    __slots__ = ("guarded", "mode", "running")

    def __init__(self, mode: str = "kit") -> None:
        self.running: Any = None
        self.guarded = True
        #: the session's ini ``agentfaults_network`` (kit, block or allow), for the plugin
        self.mode = mode

    @property
    def test(self) -> str:
        """The running test's node id (``""`` between tests)."""
        return str(getattr(self.running, "nodeid", ""))


#: The session's policy; None outside pytest. It stands aside (``guarded``) between
#: tests, in an allowed test, and in a test that uses the kit (whose guard decides).
CURRENT: ContextVar[NetworkPolicy | None] = ContextVar("agentfaults_network", default=None)
