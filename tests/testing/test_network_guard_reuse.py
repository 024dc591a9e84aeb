"""The guard goes on and off for every test that uses the kit: cheaply, and never reviving a
hook of ours that was found covered."""

from __future__ import annotations

import gc

import httpx
import pytest

from pytest_agentfaults._patches import retired
from pytest_agentfaults.testing._network import NetworkGuard, UnmatchedRequestError


def _hook() -> object:
    return vars(httpx.Client)["_send_single_request"]


def test_switching_the_guard_on_and_off_leaves_nothing_for_the_garbage_collector():
    warm = NetworkGuard("warm-up")  # the first start imports what it needs
    warm.start()
    warm.stop()
    gc.collect()
    gc.disable()
    try:
        for n in range(5):
            guard = NetworkGuard(f"test_{n}")
            guard.start()
            guard.stop()
        # Only what the guard left counts: another thread (xdist's, a library's) may leave
        # garbage of its own while the collector is off, which made a count of 0 flaky.
        assert _garbage_of_ours() == []
    finally:
        gc.enable()


def _garbage_of_ours() -> list[object]:
    """What a collection would free that the kit made: its objects, functions and frames."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return [thing for thing in gc.garbage if _ours(thing)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _ours(thing: object) -> bool:
    if type(thing).__module__.startswith("pytest_agentfaults"):
        return True
    code = getattr(thing, "__code__", None) or getattr(thing, "f_code", None)
    return code is not None and "pytest_agentfaults" in code.co_filename


def test_a_hook_found_covered_is_never_put_back_on():
    real = _hook()
    first = NetworkGuard("test_first")
    first.start()
    ours = _hook()

    def cover(client: httpx.Client, request: httpx.Request) -> httpx.Response:
        return ours(client, request)  # type: ignore[operator,no-any-return]

    try:
        httpx.Client._send_single_request = cover  # type: ignore[method-assign,assignment]
        first.stop()  # ours is covered: retired, it passes every call through
        assert retired(ours)
    finally:
        httpx.Client._send_single_request = real  # type: ignore[method-assign]
    second = NetworkGuard("test_second")
    second.start()
    try:
        now = _hook()
        assert now is not ours
        assert not retired(now)
        with pytest.raises(UnmatchedRequestError), httpx.Client() as client:
            client.get("https://api.example.com/v1")  # refused, never sent
    finally:
        second.stop()
    assert _hook() is real


def test_a_hook_removed_cleanly_guards_again_next_time():
    real = _hook()
    for name in ("test_one", "test_two"):
        guard = NetworkGuard(name)
        guard.start()
        try:
            with pytest.raises(UnmatchedRequestError, match=name), httpx.Client() as client:
                client.get("https://api.example.com/v1")
        finally:
            guard.stop()
        assert _hook() is real
