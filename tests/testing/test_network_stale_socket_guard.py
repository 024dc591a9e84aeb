"""A socket guard's wrapper decides only while its own patch is the one on."""

from __future__ import annotations

import socket

import pytest

from pytest_agentfaults.errors import NetworkBlockedError
from pytest_agentfaults.testing import _network


@pytest.fixture
def sent(monkeypatch):
    """A fake network under the guard: connect records the address and refuses."""
    addresses: list[object] = []

    def never(sock, address):
        addresses.append(address)
        raise ConnectionRefusedError(address)

    monkeypatch.setattr(socket.socket, "connect", never)
    monkeypatch.setattr(socket.socket, "connect_ex", never)
    return addresses


def _guarded(test: str) -> tuple[_network.NetworkGuard, object, object]:
    guard = _network.NetworkGuard(test, sockets=True)
    guard.start()
    return guard, socket.socket.connect, socket.socket.connect_ex


def test_a_wrapper_kept_past_its_guard_calls_straight_through(sent):
    guard, stale_connect, stale_connect_ex = _guarded("t.py::test_a")
    with socket.socket() as sock, pytest.raises(NetworkBlockedError, match="test_a"):
        stale_connect(sock, ("10.255.255.1", 80))
    guard.stop()
    assert sent == []
    # as a module-scoped monkeypatch would: test_a's wrapper, put back after test_a
    socket.socket.connect = stale_connect
    socket.socket.connect_ex = stale_connect_ex
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("10.255.255.1", 80))
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect_ex(("10.255.255.2", 80))
    assert sent == [("10.255.255.1", 80), ("10.255.255.2", 80)]


def test_the_running_guard_decides_in_its_own_name_above_a_stale_one(sent):
    guard_a, stale_connect, _ = _guarded("t.py::test_a")
    guard_a.stop()
    socket.socket.connect = stale_connect
    guard_b, _, _ = _guarded("t.py::test_b")
    try:
        with socket.socket() as sock, pytest.raises(NetworkBlockedError) as refused:
            sock.connect(("10.255.255.1", 80))
        assert refused.value.test == "t.py::test_b"
        with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
            sock.connect(("127.0.0.1", 9))  # loopback: through both wrappers
    finally:
        guard_b.stop()
    assert socket.socket.connect is stale_connect  # guard_b put back what it found
    assert sent == [("127.0.0.1", 9)]
