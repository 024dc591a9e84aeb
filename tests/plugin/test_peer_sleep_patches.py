"""A test's own patches of the sleep functions beside the kit's virtual ones.

Users fake ``time.sleep`` and ``asyncio.sleep`` with ``monkeypatch``, ``unittest.mock``
and pytest-mock's ``mocker`` in tests that also use the kit. A patch made in the test or
its function-scoped fixtures lies over the kit's: it sees every call while in place (the
SDKs' retry waits included), the kit's virtual sleep is back once it is undone, and after
the test the originals are in place, whichever of the two was undone first.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_mock")

HEAD = """
import asyncio, time
from unittest import mock
import anyio
import pytest
from pytest_agentfaults import say

REAL = (time.sleep, asyncio.sleep, anyio.sleep)
ASK = [{"role": "user", "content": "hi"}]

def untouched():
    return (time.sleep, asyncio.sleep, anyio.sleep) == REAL

def virtual():
    return "pytest-agentfaults" in (time.sleep.__doc__ or "")
"""

OVER = """
@pytest.fixture
def fake_sleep(monkeypatch):
    calls = []
    monkeypatch.setattr(time, "sleep", calls.append)
    yield calls
    assert time.sleep == calls.append  # still the user's at its own teardown

@pytest.mark.inject_fault(http=503, times=2)
def test_a_fixtures_monkeypatch_sees_the_sdks_waits(fake_sleep, openai_client, http_faults, virtual_clock):
    http_faults.script("openai", [say("ok")])
    openai_client.chat.completions.create(model="gpt-4o", messages=ASK)
    assert len(fake_sleep) == 2  # the SDK's two retry waits went to the user's fake
    assert virtual_clock.sleeps == []

def test_in_body_monkeypatch_then_the_kits_again(virtual_clock, monkeypatch):
    with monkeypatch.context() as patch:
        fake = mock.Mock()
        patch.setattr(time, "sleep", fake)
        time.sleep(3)
        fake.assert_called_once_with(3)
    assert virtual()  # undone: the kit's virtual sleep is back
    time.sleep(4)
    assert virtual_clock.sleeps == [4]

@pytest.mark.inject_fault(tool="fetch", raises=OSError, strict=False)
@mock.patch("time.sleep")
def test_mock_patch_decorator(fake):
    time.sleep(5)
    fake.assert_called_once_with(5)

def test_mock_patch_asyncio_sleep(virtual_clock):
    with mock.patch("asyncio.sleep", new=mock.AsyncMock()) as fake:
        asyncio.run(asyncio.sleep(5))
    fake.assert_awaited_once_with(5)
    assert virtual_clock.sleeps == []

def test_mocker(virtual_clock, mocker):
    fake = mocker.patch("time.sleep")
    async_fake = mocker.patch("asyncio.sleep", new=mocker.AsyncMock())
    time.sleep(1)
    asyncio.run(asyncio.sleep(2))
    fake.assert_called_once_with(1)
    async_fake.assert_awaited_once_with(2)
    assert virtual_clock.sleeps == []

def test_a_wrapping_mock_reaches_the_virtual_sleep(virtual_clock):
    with mock.patch("time.sleep", wraps=time.sleep) as spy:
        time.sleep(30)
    spy.assert_called_once_with(30)
    assert virtual_clock.sleeps == [30]  # wrapped the kit's: virtual, no real wait

def test_nothing_is_left_patched():
    assert untouched()
"""


def test_a_tests_own_sleep_patch_lies_over_the_kits_and_all_is_undone(pytester):
    pytester.makepyfile(test_patches=HEAD + OVER)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=7)


UNDER = """
def test_patched_before_the_kit_switched_on(monkeypatch, request):
    calls = []
    monkeypatch.setattr(time, "sleep", calls.append)
    clock = request.getfixturevalue("virtual_clock")  # the kit switches on now, over it
    time.sleep(4)
    assert clock.sleeps == [4] and calls == []  # as the how-to says: the kit's gets it

@pytest.fixture(scope="module")
def quiet_module():
    with mock.patch("time.sleep") as fake:
        yield fake

@pytest.mark.parametrize("n", [1, 2])
def test_under_a_module_wide_mock(n, quiet_module, virtual_clock):
    time.sleep(n)  # the first test set the module's mock up over its own virtual sleep
"""

AFTER = """
import asyncio, time
import anyio
import pytest_agentfaults._patches as patches
from test_under import REAL

def test_nothing_is_left_patched():  # in a later module: the module-wide mock is undone
    now = (time.sleep, asyncio.sleep, anyio.sleep)
    # at worst a retired wrapper of the kit's (which calls what it replaced, straight
    # through), put back by the module's mock.patch that found it in place
    assert [patches.live(each) for each in now] == list(REAL)
"""


def test_a_patch_in_place_before_the_kit_lies_under_it_and_is_undone(pytester):
    pytester.makepyfile(test_under=HEAD + UNDER, test_zz_after=AFTER)
    # in a process of its own: the module-wide mock puts back a retired wrapper of the kit's
    # (see AFTER), which would stay in this process's time module after the session
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=4)
