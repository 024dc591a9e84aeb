"""The plugin's side of the real-network guard: which tests get it, and its teardown check.

Light, like ``plugin.py``: the standard library and pytest only. Per test, at setup:

- ``@pytest.mark.allow_network``, or ini ``agentfaults_network = allow``: nothing;
- a test that uses the kit, or any test under ``agentfaults_network = block``: the test
  kit's `NetworkGuard` on httpx and httpx2 (and, for ``block``, on ``socket.connect``);
- any other test: `CURRENT` names it, so our own model clients refuse real hosts.
"""

from __future__ import annotations

from contextvars import Token
from typing import Any

import pytest

from pytest_agentfaults._network_policy import CURRENT, NetworkPolicy

__all__ = [
    "ALLOW_NETWORK",
    "MODE",
    "check_network",
    "network_mode",
    "start_network",
    "start_network_late",
    "stop_network",
]

MODES = ("kit", "block", "allow")
ALLOW_NETWORK = (
    "allow_network: let this test reach real, non-loopback hosts (pytest-agentfaults "
    "refuses them by default in tests that use the kit, and in every test with ini "
    "agentfaults_network = block)."
)
MODE = pytest.StashKey[str]()
_GUARD = pytest.StashKey[Any]()
_TOKEN = pytest.StashKey[Token[NetworkPolicy | None]]()


def network_mode(config: pytest.Config) -> str:
    """The ini ``agentfaults_network`` value, checked: ``kit`` (the default), block, allow."""
    mode = str(config.getini("agentfaults_network")).strip().lower() or "kit"
    if mode not in MODES:
        raise pytest.UsageError(
            f"agentfaults_network = {mode!r}: use kit (the default: refuse real hosts in "
            "tests that use the kit, and in our model clients everywhere), block (refuse "
            "them in every test, down to socket.connect) or allow"
        )
    return mode


def _allowed(item: pytest.Item) -> bool:
    mode = item.config.stash.get(MODE, "kit")
    return mode == "allow" or item.get_closest_marker("allow_network") is not None


def start_network(item: pytest.Item, uses_kit: bool) -> None:
    """Switch the guard that fits ``item`` on (see the module docs)."""
    __tracebackhide__ = True
    if _allowed(item):
        return
    block = item.config.stash.get(MODE, "kit") == "block"
    if uses_kit or block:
        _start_guard(item, sockets=block)
    else:
        item.stash[_TOKEN] = CURRENT.set(NetworkPolicy(item.nodeid))


def start_network_late(item: pytest.Item) -> None:
    """A kit fixture asked for in the test body: the kit's guard takes over."""
    if _allowed(item) or _GUARD in item.stash:
        return
    policy = CURRENT.get()
    if policy is not None:
        policy.guarded = True
    _start_guard(item, sockets=False)


def _start_guard(item: pytest.Item, sockets: bool) -> None:
    from pytest_agentfaults.testing._network import NetworkGuard  # noqa: PLC0415 - lazy

    guard = NetworkGuard(item.nodeid, sockets=sockets)
    guard.start()
    item.stash[_GUARD] = guard


def stop_network(item: pytest.Item) -> list[Exception]:
    """Undo `start_network`; returns what failed (safe to call twice)."""
    errors: list[Exception] = []
    guard = item.stash.get(_GUARD, None)
    if guard is not None:
        try:
            guard.stop()
        except Exception as error:
            errors.append(error)
    token = item.stash.get(_TOKEN, None)
    if token is not None:
        del item.stash[_TOKEN]
        try:
            CURRENT.reset(token)
        except ValueError:  # set in another context (a plugin ran setup elsewhere)
            CURRENT.set(None)
    return errors


def check_network(item: pytest.Item, passed: bool) -> None:
    """Drop the test's guard; if the test passed, fail it over the SDK requests it refused.

    (See `NetworkGuard.check`.) A failed test's own error already names the request.
    """
    __tracebackhide__ = True
    guard = item.stash.get(_GUARD, None)
    if guard is not None:
        del item.stash[_GUARD]  # items live all session: keep no test's guard alive
        if passed:
            guard.check()
