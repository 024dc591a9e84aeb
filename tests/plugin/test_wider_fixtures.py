"""Fixtures wider than the function belong to no one test: real time, no kit guard.

A session (module, class, package) fixture set up or torn down while a kit test runs
keeps real `time.sleep` and reaches the network as it would in a plain test; the kit
test's own function-scoped fixtures stay on its virtual clock (audit finding 2).
"""

from __future__ import annotations

import time

import pytest

CONFTEST = """
import time

import pytest

# What reaches the real time.sleep is recorded, not slept: installed before the kit's
# virtual sleep (which wraps the sleep it finds), and put back when the session ends.
REAL = []
_SLEEP = time.sleep


def _real(seconds):
    REAL.append(seconds)


time.sleep = _real


def pytest_unconfigure(config):
    time.sleep = _SLEEP


SEEN = {}


@pytest.fixture(scope="session")
def service():
    time.sleep(0.05)  # a readiness wait: it must reach the real sleep
    SEEN["setup"] = REAL[-1:] == [0.05]
    yield SEEN
    time.sleep(0.06)  # a graceful shutdown: real too
    with open("teardown.txt", "w") as out:  # read by the outer test after the session
        out.write(str(REAL[-1:] == [0.06]))


@pytest.fixture(scope="module")
def nested(service):  # a wider fixture on top of another: each pauses, then resumes
    time.sleep(0.01)
    return REAL[-1:] == [0.01]


@pytest.fixture
def local_wait():
    time.sleep(7)  # function-scoped: the test's own, on its virtual clock
    return True
"""


@pytest.mark.parametrize(
    "order",
    [("test_kit",), ("test_plain", "test_kit")],
    ids=["set-up-and-torn-down-in-a-kit-test", "torn-down-in-a-kit-test"],
)
def test_a_session_fixture_of_a_kit_test_keeps_real_time(pytester, order):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_it="""
        import pytest

        import time

        def test_kit(service, nested, local_wait, virtual_clock):
            # the session fixture's wait is not this test's: real, and not on its clock
            assert service["setup"], service
            assert nested
            time.sleep(3)  # the test's own again, after the wider fixtures
            assert virtual_clock.sleeps == [7, 3]

        def test_plain(service):
            assert service["setup"], service
        """
    )
    before = time.sleep
    result = pytester.runpytest("-p", "no:randomly", *(f"test_it.py::{name}" for name in order))
    assert time.sleep is before  # the conftest's recorder is gone with its session
    result.assert_outcomes(passed=len(order))
    # torn down in the kit test's teardown (the last test): a real wait as well
    assert (pytester.path / "teardown.txt").read_text() == "True"


def test_a_wider_fixture_reaches_the_network_as_in_a_plain_test(pytester):
    """The kit test's guard does not refuse a session fixture's request; it never connects.

    The fixture's request goes to a TEST-NET address through a transport that answers
    without a socket (what a real host would do), so the guard alone decides.
    """
    pytester.makeconftest(
        """
        import httpcore
        import httpx
        import pytest

        def answer(request):  # where the socket would be: nothing leaves the machine
            return httpcore.Response(200, content=b"registered")

        @pytest.fixture(scope="module")
        def registered():
            transport = httpx.HTTPTransport()  # httpx's own: the guard decides for it
            transport._pool.handle_request = answer
            with httpx.Client(transport=transport) as client:
                return client.get("http://192.0.2.1:9/register").text
        """
    )
    pytester.makepyfile(
        test_it="""
        def test_kit(registered, trace):
            assert registered == "registered"

        def test_plain(registered):
            assert registered == "registered"
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_task_a_session_loop_keeps_running_shares_the_kit_tests_virtual_time(pytester):
    """pytest-asyncio's session-scoped loop: a background task of a session fixture.

    Its sleeps during a kit test wait on the test's virtual clock as the test's own do
    (the loop is one: a real timer of its would hold every virtual wait back until it
    fired), so a 50 ms heartbeat beats 600 times in the test's virtual 30 s, at once.
    Its setup still waits in real time (above), and a plain test keeps real time.
    """
    pytester.makefile(
        ".ini",
        pytest="[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = session\n"
        "asyncio_default_test_loop_scope = session\n",
    )
    pytester.makepyfile(
        test_it="""
        import asyncio
        import time

        import pytest_asyncio

        BEATS = []

        @pytest_asyncio.fixture(scope="session", loop_scope="session")
        async def heartbeat():
            async def beat():
                while True:
                    await asyncio.sleep(0.05)
                    BEATS.append(1)

            task = asyncio.create_task(beat())
            yield
            task.cancel()

        async def test_kit(heartbeat, virtual_clock):
            start, before = time.monotonic(), len(BEATS)
            await asyncio.sleep(30)
            assert 590 <= len(BEATS) - before <= 601
            assert time.monotonic() - start < 20  # virtual: not 30 s of real time
            assert virtual_clock.sleeps.count(30) == 1
            assert virtual_clock.sleeps.count(0.05) == len(BEATS) - before  # recorded too
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
