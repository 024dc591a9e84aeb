"""What a test of the kit leaves behind for a later test, through things that outlive it.

Each case is a hole an adversarial run found (pytester): a module-scoped patch that puts
back a socket guard of a finished test, a kit fixture asked for late inside an async test,
and a session-built SDK client that a test changes in place.
"""

from __future__ import annotations

import pytest

# A fake connect where the network would be: it records the address and refuses, so
# nothing leaves the machine, whether or not a guard let the call through.
REFUSING_CONNECT = """
import socket

import pytest

SENT = []

def _never(sock, address):
    SENT.append(address)  # would have sent a SYN
    raise ConnectionRefusedError(address)

socket.socket.connect = _never
socket.socket.connect_ex = _never
"""


def _ini(pytester: pytest.Pytester, line: str = "") -> None:
    pytester.makefile(
        ".ini",
        pytest="[pytest]\naddopts = -p no:hypothesispytest\n"
        f"asyncio_default_fixture_loop_scope = function\nfilterwarnings = error\n{line}\n",
    )


def test_a_socket_guard_put_back_by_a_longer_lived_patch_decides_nothing(pytester):
    # test_a's guard wraps connect; the module fixture wraps that wrapper and, at module
    # end, puts it back. A later allowed test must reach the real connect, not be refused
    # in test_a's name.
    pytester.makeconftest(REFUSING_CONNECT)
    _ini(pytester, "agentfaults_network = block")
    pytester.makepyfile(
        test_a_module_patch="""
import socket

import pytest

@pytest.fixture(scope="module")
def count_connects():
    calls = []
    mp = pytest.MonkeyPatch()
    seen = socket.socket.connect  # test_a's guard, under block

    def connect(sock, address):
        calls.append(address)
        return seen(sock, address)

    mp.setattr(socket.socket, "connect", connect)
    yield calls
    mp.undo()  # puts back what it saw: test_a's guard

def test_a(count_connects):
    pass

def test_a2(count_connects):
    import pytest_agentfaults as af

    with socket.socket() as sock, pytest.raises(af.NetworkBlockedError, match="test_a2"):
        sock.connect(("10.255.255.1", 80))  # still guarded, in this test's name
""",
        test_b_later="""
import socket

import pytest

from conftest import SENT

@pytest.mark.allow_network
def test_b_allowed():
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("10.255.255.1", 80))
    assert SENT[-1] == ("10.255.255.1", 80)  # reached the (fake) network

def test_c_blocked_again():
    import pytest_agentfaults as af

    with socket.socket() as sock, pytest.raises(af.NetworkBlockedError, match="test_c_blocked"):
        sock.connect(("10.255.255.2", 80))
    assert ("10.255.255.2", 80) not in SENT
""",
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    # the two tests that caught their refusal fail at teardown (block mode), each in its
    # own name: test_a's guard, put back, refused nothing for them
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_a2*",
            "*test_a_module_patch.py::test_a2 sent requests to real hosts*",
            "*ERROR at teardown of test_c_blocked_again*",
            "*test_b_later.py::test_c_blocked_again sent requests to real hosts*",
        ]
    )
    assert "test_a_module_patch.py::test_a sent" not in result.stdout.str()


# The kit's runtime is not imported until a test needs it: a kit fixture asked for in an
# async test's body (first in its session, as here, or first on an xdist worker) switches
# the test's context on inside the test's task, a copy of the context its teardown runs in.
LEFT_BEFORE_EACH_TEST = """
import contextvars

import pytest

LEFT = {}  # test id: the kit's context variables set before it started

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item):
    # outside the plugin's own per-test switch: every kit variable at its default, but the
    # session's network policy
    LEFT[item.name] = {
        var.name: value
        for var, value in contextvars.copy_context().items()
        if var.name.startswith("agentfaults")
        and var.name != "agentfaults_network"
        and value not in (None, ())
    }
    return (yield)
"""

LATE_IN_TASK = """
import pytest

{test}

def test_z_later():
    from conftest import LEFT

    assert LEFT == {{"test_a_late": {{}}, "test_z_later": {{}}}}
"""

LATE_ASYNCIO = """
import asyncio

@pytest.mark.asyncio
async def test_a_late(request):
    clock = request.getfixturevalue("virtual_clock")
    await asyncio.sleep(5)
    assert clock.now() == 5
"""

LATE_ANYIO = """
import anyio

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.anyio
async def test_a_late(request):
    clock = request.getfixturevalue("virtual_clock")
    request.getfixturevalue("trace")  # a second kit fixture: the same context
    await anyio.sleep(5)
    assert clock.now() == 5
"""


@pytest.mark.parametrize("test", [LATE_ASYNCIO, LATE_ANYIO], ids=["asyncio", "anyio"])
def test_a_kit_fixture_asked_for_late_in_an_async_test_is_switched_off(pytester, test):
    _ini(pytester)
    pytester.makeconftest(LEFT_BEFORE_EACH_TEST)
    pytester.makepyfile(test_late=LATE_IN_TASK.format(test=test))
    # a subprocess: the kit's runtime is not imported yet when test_a asks for the clock
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


pytest.importorskip("openai")
pytest.importorskip("anthropic")

# The sync SDK fixtures hand out one session-built client (and its httpx2 client) put
# back for each test: what test_a changes in place on the httpx2 client stays in test_a.
SHARED_HTTP_CLIENT = """
import httpx2
import pytest

CHAT = {
    "id": "x", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                 "finish_reason": "stop"}],
}
URL = "https://api.openai.com/v1/chat/completions"
HOOKED = []
BUILT = {}

def _chat(client):
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

def _changes_in_place(http):
    http.headers["x-leak"] = "from-test-a"
    http.event_hooks["request"].append(lambda request: HOOKED.append(str(request.url)))
    http.cookies.set("leak", "from-test-a")
    http.params = {"leak": "1"}
    http.timeout = 0.001
    http.auth = ("user", "leak")
    http.follow_redirects = False
    http.max_redirects = 0
    http._mounts[httpx2.URL("https://leak.example")] = None

def _built(http):
    BUILT.setdefault("state", {k: v.copy() if k == "_mounts" else v for k, v in vars(http).items()})
    BUILT.setdefault("headers", dict(http.headers))

def test_a_changes_the_http_client(openai_client, http_faults):
    _built(openai_client._client)
    http_faults.post(URL).respond(200, json=CHAT, headers={"set-cookie": "got=from-a; Path=/"})
    _chat(openai_client)
    assert openai_client._client.cookies.get("got") == "from-a"  # the answer's, kept
    _changes_in_place(openai_client._client)
    raise RuntimeError("fails, as a test that changed things may")

def test_a_changes_it_through_a_copy(openai_client, llm_server):
    # a copy pointed at the server shares the session's httpx2 client
    _changes_in_place(openai_client._client)
    raise RuntimeError("fails, as a test that changed things may")

def test_b_sees_the_http_client_as_built(openai_client, http_faults):
    route = http_faults.post(URL).respond(200, json=CHAT)
    _chat(openai_client)
    sent = route.calls[0].request
    assert "x-leak" not in sent.headers
    assert "cookie" not in sent.headers
    assert "authorization" in sent.headers and "leak" not in sent.headers["authorization"]
    assert str(sent.url) == URL
    assert HOOKED == []
    http = openai_client._client
    assert dict(http.headers) == BUILT["headers"]
    assert list(http.cookies.jar) == []
    assert http.event_hooks == {"request": [], "response": []}
    for name in ("_base_url", "_auth", "_params", "_timeout", "follow_redirects",
                 "max_redirects", "_mounts", "_transport"):
        assert getattr(http, name) == BUILT["state"][name], name
"""


def test_the_shared_http_client_of_a_sync_sdk_fixture_is_put_back_as_built(pytester):
    _ini(pytester)
    pytester.makepyfile(test_shared=SHARED_HTTP_CLIENT)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*RuntimeError: fails, as a test*"])
