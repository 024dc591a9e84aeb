"""Fixtures wider than the function belong to no one test: real time, no kit guard, no faults.

A session (module, class, package) fixture set up or torn down while a kit test runs
keeps real `time.sleep` and reaches the network as it would in a plain test, and takes
none of the test's faults nor writes in its trace; the kit test's own function-scoped
fixtures stay on its virtual clock (audit finding 2).
"""

from __future__ import annotations

import importlib.util
import time

import pytest

# pydantic-ai comes with the test extras; the CI's floors step (the oldest versions we
# allow, .ci/run) installs no framework, and runs this module's other tests
_needs_pydantic_ai = pytest.mark.skipif(
    importlib.util.find_spec("pydantic_ai") is None,
    reason="a real pydantic-ai agent: installed by the test extras, not in the floors run",
)

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


WARM_CONFTEST = """
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def reply(request):
    return say("done") if request.messages[-1].role == "tool" else call_tool("fetch", url="x")


@af.tool
def fetch(url: str) -> str:
    '''Fetch a URL.'''
    return "page"


@pytest.fixture(scope="session")
def agent():
    made = af.Agent("bot", model=ScriptedModel.from_function(reply), tools=[fetch])
    assert made.run("warm up").output == "done"  # a smoke run, once for the session
    return made


@pytest.fixture(scope="module")
def framework_agent():
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def respond(messages, info):
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart) and last.outcome != "retried":
            return ModelResponse(parts=[TextPart("found")])
        return ModelResponse(parts=[ToolCallPart("search", {"q": "x"})])

    made = Agent(FunctionModel(respond))

    @made.tool_plain(retries=3)
    def search(q: str) -> str:
        return "hit"

    assert made.run_sync("warm up").output == "found"
    return made
"""

WARM_TESTS = """
import pytest
from pydantic_ai import ModelRetry


@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=1)
def test_own_run_takes_the_fault(agent, trace):
    assert agent.run("go").output == "done"
    assert trace.count("run.start") == 1  # the test's run, not the fixture's smoke run
    assert trace.retries("fetch") == 1


@pytest.mark.inject_fault(tool="fetch", raises=ValueError("bad"), times=1)
def test_own_run_fails_of_it(agent, trace):
    result = agent.run("go")
    assert trace.errors("fetch")[0].error.type == "ValueError"


@pytest.mark.inject_fault(tool="search", raises=ModelRetry("warming"), times=1)
def test_framework_tool_of_a_module_fixture(framework_agent, trace):
    assert framework_agent.run_sync("go").output == "found"
    assert trace.tool_attempts("search") == 2  # the test's own run: the fault, the retry
    assert trace.retries("search") == 1


@pytest.mark.inject_fault(tool="search", raises=ConnectionError("down"), times=1)
def test_framework_tool_fails_the_test_run(framework_agent):
    with pytest.raises(ConnectionError):
        framework_agent.run_sync("go")


def test_plain(agent, framework_agent):
    assert agent.run("go").output == "done"
"""

WARM_NAMES = [
    "test_own_run_takes_the_fault",
    "test_own_run_fails_of_it",
    "test_framework_tool_of_a_module_fixture",
    "test_framework_tool_fails_the_test_run",
]


@_needs_pydantic_ai
@pytest.mark.parametrize("first", WARM_NAMES)
def test_a_wider_fixture_takes_none_of_the_tests_faults_nor_writes_in_its_trace(pytester, first):
    """A session fixture's smoke run is no one test's: whichever test sets it up.

    The test that happened to set the fixture up used to have its fault fire in the
    fixture's run: the run passed through the fixture's recovery (or the fixture failed,
    and every test after it with it), the test's own run never met the fault, and its
    trace counted the fixture's attempts. The outcome hung on the order of the run.
    """
    pytester.makeconftest(WARM_CONFTEST)
    pytester.makepyfile(test_warm=WARM_TESTS)
    rest = [name for name in WARM_NAMES if name != first]
    order = [f"test_warm.py::{name}" for name in (first, *rest, "test_plain")]
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *order)
    result.assert_outcomes(passed=5)


TEARDOWN_CONFTEST = (
    WARM_CONFTEST.split('@pytest.fixture(scope="session")', maxsplit=1)[0]
    + """
@pytest.fixture(scope="session")
def agent():
    made = af.Agent("bot", model=ScriptedModel.from_function(reply), tools=[fetch])
    yield made
    result = made.run("cool down")  # torn down in the last test's teardown
    with open("teardown.txt", "w") as out:
        out.write(",".join(e.type for e in result.trace.events if e.type.startswith("tool.")))
"""
)


def test_a_wider_fixtures_teardown_takes_none_of_the_last_tests_faults(pytester):
    pytester.makeconftest(TEARDOWN_CONFTEST)
    pytester.makepyfile(
        test_it="""
import pytest


# the fault waits for a second call, which only the fixture's teardown would make
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), at=2, strict=False)
def test_kit(agent, trace):
    assert agent.run("go").output == "done"
    assert trace.tool_attempts("fetch") == 1
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "teardown.txt").read_text() == "tool.call,tool.result"


HTTP_WARM = """
import http.server
import json
import threading

import httpx
import pytest

URL = "https://api.example.com/v1/status"

def _answer(request):
    return httpx.Response(200, json={"from": "the fixture's own transport"})

@pytest.fixture(scope="session")
def warmed():
    # a smoke request of a session fixture, set up in the first test's setup
    with httpx.Client(transport=httpx.MockTransport(_answer)) as client:
        return client.get(URL).json()

@pytest.mark.inject_fault(http=503, url=URL, times=1)
def test_first(warmed, http_faults, trace):
    route = http_faults.get(URL).respond(200, json={"from": "the test's route"})
    assert warmed == {"from": "the fixture's own transport"}  # no fault, no route of ours
    with httpx.Client() as client:
        assert client.get(URL).status_code == 503  # the test's own request: its fault
        assert client.get(URL).json() == {"from": "the test's route"}
    assert route.call_count == 1
    assert [e.status for e in trace.of("http.request")] == [503, 200]  # the test's only

def test_second(warmed):
    assert warmed == {"from": "the fixture's own transport"}


class _Here(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"from": "the real loopback server"}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Here)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/status"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def probed(server):
    # a module fixture's request through the default transport, to a host the test routes
    with httpx.Client() as client:
        return client.get(server).json()


def test_routes_of_the_test_answer_not_a_wider_fixture(server, http_faults, request, trace):
    route = http_faults.get(server).respond(200, json={"from": "the test's route"})
    # the module fixture is set up only now, while the test's route is on
    assert request.getfixturevalue("probed") == {"from": "the real loopback server"}
    assert route.call_count == 0
    assert trace.of("http.request") == []
    with httpx.Client() as client:
        assert client.get(server).json() == {"from": "the test's route"}  # the test's own
    assert route.call_count == 1
"""


def test_a_wider_fixtures_http_request_is_no_one_tests(pytester):
    # A session fixture's request made while a kit test sets it up: not answered by that
    # test's routes, nor recorded in its trace (its faults already sat out)
    pytester.makepyfile(test_http_warm=HTTP_WARM)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
