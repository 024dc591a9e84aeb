"""The plugin's side of the real-network guard: which tests get it, and its teardown check.

Light, like ``plugin.py``: the standard library and pytest only. Per test, at setup:

- ``@pytest.mark.allow_network``, or ini ``agentfaults_network = allow``: nothing;
- a test that uses the kit, or any test under ``agentfaults_network = block``: the test
  kit's `NetworkGuard` on httpx, httpx2 and ``socket.connect`` (the test is sealed);
- any other test: `CURRENT` holds it (named only if refused), so our own model clients
  refuse real hosts.

`CURRENT` is set once a session (`start_session`) to a policy that stands aside between
tests; a test switches it on and off by attribute writes, not a ContextVar token or a stash.
"""

from __future__ import annotations

import sys
from contextvars import Token
from typing import Any

import pytest

from pytest_agentfaults._network_policy import CURRENT, NetworkPolicy
from pytest_agentfaults._plugin_state import SESSION

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "ALLOW_NETWORK",
    "GUARD",
    "MODE",
    "check_network",
    "network_mode",
    "note_call",
    "start_network",
    "start_network_late",
    "start_session",
    "stop_network",
    "stop_session",
]

MODES = ("kit", "block", "allow")
ALLOW_NETWORK = (
    "allow_network: let this test reach real, non-loopback hosts (pytest-agentfaults "
    "refuses them by default in tests that use the kit, and in every test with ini "
    "agentfaults_network = block)."
)
MODE = pytest.StashKey[str]()
GUARD = pytest.StashKey[Any]()
_POLICY = pytest.StashKey[NetworkPolicy]()  # the session's (config.stash)
_TOKEN = pytest.StashKey[Token[NetworkPolicy | None]]()  # ... and how to undo it
#: a guarded test with no kit state passed its call (`note_call`): its teardown checks
PASSED = pytest.StashKey[bool]()


def network_mode(config: pytest.Config) -> str:
    """The ini ``agentfaults_network`` value, checked: ``kit`` (the default), block, allow."""
    mode = str(config.getini("agentfaults_network")).strip().lower() or "kit"
    if mode not in MODES:
        raise pytest.UsageError(
            f"agentfaults_network = {mode!r}: use kit (the default: refuse real hosts in "
            "tests that use the kit, down to socket.connect, and in our model clients "
            "everywhere), block (refuse them in every test) or allow"
        )
    return mode


def _allowed(item: pytest.Item) -> bool:
    mode = item.config.stash.get(MODE, "kit")
    return mode == "allow" or item.get_closest_marker("allow_network") is not None


def start_network(item: pytest.Item, uses_kit: bool, *, allowed: bool | None = None) -> None:
    """Switch the guard that fits ``item`` on (see the module docs).

    ``allowed``: whether ``item`` has the ``allow_network`` marker, when the caller knows.
    """
    __tracebackhide__ = True
    policy = CURRENT.get()  # None: a session that never started (a plugin's own run)
    mode = policy.mode if policy is not None else item.config.stash[MODE]
    if mode == "allow" or (_allowed(item) if allowed is None else allowed):
        return
    if uses_kit or mode == "block":
        _start_guard(item)  # sealed: httpx, httpx2 and socket.connect
        return
    if policy is not None:
        policy.running = item  # named only if it refuses a request: no string built here
        policy.guarded = False


def start_session(config: pytest.Config) -> None:
    """Set `CURRENT` for the session: a policy that stands aside until a test names itself."""
    policy = NetworkPolicy(config.stash[MODE])
    config.stash[_TOKEN] = CURRENT.set(policy)
    config.stash[_POLICY] = policy


def stop_session(config: pytest.Config) -> None:
    """Undo `start_session` (safe to call twice)."""
    token = config.stash.get(_TOKEN, None)
    if token is None:
        return
    del config.stash[_TOKEN]
    config.stash[_POLICY].guarded = True  # a task that kept the context: stand aside
    try:
        CURRENT.reset(token)
    except ValueError:  # set in another context (a plugin ran sessionstart elsewhere)
        CURRENT.set(None)


def start_network_late(item: pytest.Item) -> None:
    """A kit fixture asked for in the test body: the kit's guard takes over."""
    if _allowed(item) or GUARD in item.stash:
        return
    policy = CURRENT.get()
    if policy is not None:
        policy.guarded = True
    _start_guard(item)


def _start_guard(item: pytest.Item) -> None:
    # lazy: the kit loads on the first test that uses it; after that, found in sys.modules
    # (a ``from`` import looks for attributes the module lacks, ~7k instructions a test)
    network: Any = sys.modules.get("pytest_agentfaults.testing._network")
    if network is None:
        from pytest_agentfaults.testing import _network as network  # noqa: PLC0415 - the kit loads on first use

    # the list itself, read only if a request is refused (`NetworkGuard.unseen_by_mocks`)
    fixturenames = getattr(item, "fixturenames", ())
    learned = item.config.stash[SESSION].learned
    guard = network.NetworkGuard(
        item.nodeid, sockets=True, fixturenames=fixturenames, learned=learned
    )
    guard.start()
    item.stash[GUARD] = guard


def note_call(item: pytest.Item, report: pytest.TestReport) -> None:
    """Note that a guarded test without kit state passed its call (under ini ``block``).

    A kit test's state says whether it passed; this test has none, and its teardown
    checks the refused requests all the same (`check_network`). An XPASS is left alone.
    """
    if report.outcome == "passed" and GUARD in item.stash and not hasattr(report, "wasxfail"):
        item.stash[PASSED] = True


def passed_call(item: pytest.Item) -> bool:
    """Whether `note_call` saw the test pass; forgotten (items live all session)."""
    stash = item.stash
    if PASSED not in stash:
        return False
    del stash[PASSED]
    return True


def stop_network(item: pytest.Item, errors: list[Exception]) -> Any:
    """Undo `start_network`, adding what failed to ``errors`` (safe to call twice).

    Returns the test's guard, stopped and dropped from the item (items live all session),
    for `check_network`; None if it had none.
    """
    stash = item.stash  # `in`, not `stash.get`: a get that misses raises a KeyError
    guard = None
    if GUARD in stash:
        guard = stash[GUARD]
        del stash[GUARD]
        try:
            guard.stop()
        except Exception as error:
            errors.append(error)
    policy = CURRENT.get()
    if policy is not None and policy.running is item:
        policy.running = None
        policy.guarded = True  # stands aside again until the next test
    return guard


def check_network(guard: Any, passed: bool) -> None:
    """If the test passed, fail it over the SDK requests its ``guard`` refused.

    (See `NetworkGuard.check`.) A failed test's own error already names the request.
    """
    __tracebackhide__ = True
    if passed:
        guard.check()
