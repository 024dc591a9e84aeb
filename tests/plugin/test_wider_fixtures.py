"""Fixtures wider than the function belong to no one test: real time, no kit guard.

A session (module, class, package) fixture set up or torn down while a kit test runs
keeps real `time.sleep` and reaches the network as it would in a plain test; the kit
test's own function-scoped fixtures stay on its virtual clock (audit finding 2).
"""

from __future__ import annotations

import pytest

CONFTEST = """
import time

import pytest

SEEN = {}


@pytest.fixture(scope="session")
def service():
    start = time.perf_counter()
    time.sleep(0.05)  # a readiness wait: it must really wait
    SEEN["setup"] = time.perf_counter() - start
    yield SEEN
    start = time.perf_counter()
    time.sleep(0.05)  # a graceful shutdown: it must really wait too
    SEEN["teardown"] = time.perf_counter() - start
    with open("teardown.txt", "w") as out:  # read by the outer test after the session
        out.write(str(SEEN["teardown"]))


@pytest.fixture(scope="module")
def nested(service):  # a wider fixture on top of another: each pauses, then resumes
    start = time.perf_counter()
    time.sleep(0.01)
    return time.perf_counter() - start


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
            assert service["setup"] >= 0.045, service
            assert nested >= 0.009
            time.sleep(3)  # the test's own again, after the wider fixtures
            assert virtual_clock.sleeps == [7, 3]

        def test_plain(service):
            assert service["setup"] >= 0.045, service
        """
    )
    result = pytester.runpytest("-p", "no:randomly", *(f"test_it.py::{name}" for name in order))
    result.assert_outcomes(passed=len(order))
    # torn down in the kit test's teardown (the last test): a real wait as well
    assert float((pytester.path / "teardown.txt").read_text()) >= 0.045


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
