"""freezegun and time-machine beside the kit: frozen wall time, virtual sleeps, no hang.

A test that uses the kit under ``freeze_time`` or ``time_machine.travel`` keeps both: the
wall clock (``time.time``, ``datetime.now``) reads what the freezer says, and every sleep
of the test (the SDKs' retry waits, the runtime's backoff, ``asyncio.sleep``) is virtual,
recorded once on ``virtual_clock``. freezegun also stops ``time.monotonic`` and with it
the event loop's clock (unless ``real_asyncio=True``): the kit's looks at a loop, which
it takes on real time, must still come, or a virtual sleep beside real work would hang.
Each inner session runs under pytest-timeout, so a hang fails instead of stalling.
"""

from __future__ import annotations

import pytest

pytest.importorskip("freezegun")
pytest.importorskip("time_machine")

HEAD = """
import asyncio, datetime, threading, time
import anyio
import freezegun
import pytest
import time_machine
from pytest_agentfaults import say

REAL = (time.sleep, asyncio.sleep, anyio.sleep, time.time, time.monotonic, datetime.datetime)
ASK = [{"role": "user", "content": "hi"}]
FREEZERS = {
    "freezegun": lambda: freezegun.freeze_time("2024-01-01"),
    "time_machine": lambda: time_machine.travel(datetime.datetime(2024, 1, 1), tick=False),
}

def untouched():
    return (time.sleep, asyncio.sleep, anyio.sleep, time.time, time.monotonic,
            datetime.datetime) == REAL

def frozen_at_2024():
    return datetime.datetime.now().year == 2024 and time.gmtime(time.time()).tm_year == 2024
"""


def _run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_frozen=HEAD + body)
    return pytester.runpytest_subprocess("-p", "no:randomly", "--timeout=10", *args, timeout=90)


SDK_RETRIES = """
@pytest.mark.parametrize("freezer", sorted(FREEZERS))
@pytest.mark.inject_fault(http=503, times=2)
def test_sdk_retries(freezer, openai_client, http_faults, virtual_clock):
    http_faults.script("openai", [say("ok")])
    with FREEZERS[freezer]():
        reply = openai_client.chat.completions.create(model="gpt-4o", messages=ASK)
        assert frozen_at_2024()  # the wall clock stays frozen
    assert reply.choices[0].message.content == "ok"
    assert len(virtual_clock.sleeps) == 2  # the SDK's two retry waits, each once
    assert 0 < virtual_clock.now() < 10

@pytest.mark.asyncio
@pytest.mark.parametrize("freezer", sorted(FREEZERS))
@pytest.mark.inject_fault(http=503, times=2)
async def test_async_sdk_retries(freezer, async_openai_client, http_faults, virtual_clock):
    http_faults.script("openai", [say("ok")])
    with FREEZERS[freezer]():
        reply = await async_openai_client.chat.completions.create(model="gpt-4o", messages=ASK)
        assert frozen_at_2024()
    assert reply.choices[0].message.content == "ok"
    assert len(virtual_clock.sleeps) == 2

@freezegun.freeze_time("2024-01-01")
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_runtime_backoff_under_the_decorator(virtual_clock):
    import pytest_agentfaults as af
    from pytest_agentfaults import ScriptedModel, call_tool

    @af.tool
    def fetch(url: str) -> str:
        \"\"\"Fetch.\"\"\"
        return "page"

    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch])
    assert agent.run("go").output == "done"
    assert len(virtual_clock.sleeps) == 2  # the runtime's two backoff waits
    assert frozen_at_2024()

def test_nothing_is_left_patched():
    assert untouched()
"""


def test_sdk_and_runtime_retries_under_a_frozen_clock_are_virtual_once(pytester):
    result = _run(pytester, SDK_RETRIES)
    result.assert_outcomes(passed=6)


FROZEN_LOOP = """
@pytest.fixture(params=["freezegun", "freezegun_fixture", "time_machine"])
def frozen(request):
    if request.param == "freezegun_fixture":  # the fixture style: frozen from setup on
        with freezegun.freeze_time("2024-01-01") as freezer:
            yield freezer
    else:
        with FREEZERS[request.param]() as freezer:
            yield freezer

def test_a_virtual_sleep_beside_real_work_in_an_executor(frozen, virtual_clock):
    async def main():
        loop = asyncio.get_running_loop()
        work = loop.run_in_executor(None, threading.Event().wait, 0.1)  # real work
        await asyncio.gather(work, asyncio.sleep(1))
    asyncio.run(main())
    assert virtual_clock.sleeps == [1]
    assert frozen_at_2024()

def test_a_virtual_sleep_beside_a_task_that_never_lets_the_loop_idle(frozen, virtual_clock):
    async def main():
        done = False
        async def poll():
            while not done:
                await asyncio.sleep(0)
        poller = asyncio.create_task(poll())
        await asyncio.sleep(1)
        done = True
        await poller
    asyncio.run(main())
    assert virtual_clock.now() == 1

def test_a_hanging_async_tool_is_cut_at_its_virtual_deadline(frozen, virtual_clock):
    import pytest_agentfaults as af
    from pytest_agentfaults import ScriptedModel, call_tool

    @af.tool
    async def charge(amount: int) -> str:
        \"\"\"Charge.\"\"\"
        await asyncio.Event().wait()  # never set: only the deadline ends it
        return "charged"

    model = ScriptedModel([call_tool("charge", amount=1), say("gave up")])
    config = af.ResilienceConfig(timeout_seconds=5, max_retries=0)
    agent = af.Agent("bot", model=model, tools=[charge], resilience=config)
    assert asyncio.run(agent.arun("pay")).output == "gave up"
    assert virtual_clock.now() == 5

def test_nothing_is_left_patched():
    assert untouched()
"""


def test_the_kits_looks_at_a_loop_come_on_real_time_when_the_loops_clock_is_frozen(pytester):
    result = _run(pytester, FROZEN_LOOP)
    result.assert_outcomes(passed=10)


# The loopback server's own limits run on the real clock. It bounded a request's arrival
# with ``time.monotonic()``, which freezegun replaces in every module and thread: frozen,
# a client dribbling a request a byte at a time held a server thread past the idle
# timeout (the request had ``idle_timeout`` per byte, not in all); ticking
# (``auto_tick_seconds``), every request that took two reads (a large body) got a 408.
SERVER_CLOCK = """
import select, socket
from pytest_agentfaults.testing.server import LLMServer

IDLE = 0.05  # the server's idle timeout here, real seconds
REQUEST = b"POST /v1/chat/completions HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\n{}"
EVERY = dict(FREEZERS, freezegun_ticking=lambda: freezegun.freeze_time(
    "2024-01-01", auto_tick_seconds=10))

@pytest.mark.parametrize("freezer", sorted(EVERY))
def test_a_dribbled_request_is_still_cut_off_at_the_idle_timeout(freezer):
    with LLMServer(idle_timeout=IDLE) as server, EVERY[freezer]():
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
            for byte in REQUEST:
                sock.sendall(bytes([byte]))
                # each byte well within the idle timeout of the one before it
                if select.select([sock], [], [], IDLE / 5)[0]:
                    break
            answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:60]

@pytest.mark.parametrize("freezer", sorted(EVERY))
def test_a_large_request_is_answered(freezer, llm_server, openai_client):
    llm_server.script([say("ok")])
    big = [{"role": "user", "content": "x" * 400_000}]   # more than one read of the server
    with EVERY[freezer]():
        reply = openai_client.chat.completions.create(model="gpt-4o", messages=big)
    assert reply.choices[0].message.content == "ok"
    assert llm_server.requests[0].fault is None

def test_nothing_is_left_patched():
    assert untouched()
"""


def test_the_loopback_servers_limits_keep_real_time_under_a_freezer(pytester):
    result = _run(pytester, SERVER_CLOCK)
    result.assert_outcomes(passed=7)


# A ``real_time`` test keeps the real clock: its runtime and its trace read
# ``time.monotonic()``, which freezegun replaces. Frozen, every event of the run was at the
# same instant (the real backoff between attempts read as none); ticking, each reading
# moved 10 s, so an attempt of a 5 s timeout that took no time "timed out" and was retried.
REAL_TIME_RUN = """
import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool

EVERY = dict(FREEZERS, freezegun_ticking=lambda: freezegun.freeze_time(
    "2024-01-01", auto_tick_seconds=10))

@af.tool
def fetch(url: str) -> str:
    \"\"\"Fetch.\"\"\"
    return "page"

@pytest.mark.parametrize("freezer", sorted(EVERY))
@pytest.mark.real_time
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_a_real_time_run_is_timed_on_the_real_clock(freezer, trace):
    config = af.ResilienceConfig(
        strategy="fixed", base_delay=0.01, jitter_factor=0, timeout_seconds=5
    )
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch], resilience=config)
    with EVERY[freezer]():
        assert agent.run("go").output == "done"
    calls = [event.at for event in trace.events if event.type == "tool.call"]
    assert len(calls) == 3   # two faults and the call that worked: no timeout
    assert 0.02 <= calls[-1] - calls[0] < 5   # the two real backoff waits, as they took

def test_nothing_is_left_patched():
    assert untouched()
"""


def test_a_real_time_run_keeps_the_real_clock_under_a_freezer(pytester):
    result = _run(pytester, REAL_TIME_RUN)
    result.assert_outcomes(passed=4)


# The kit loads its runtime at its first use, which may come under a freezer: freezegun's
# own start reads every attribute of every module, ``pytest_agentfaults``'s lazy names
# too, after it replaced the clocks. The real clock the kit took then was freezegun's
# fake: every later freezer stopped it again, and once the freezer was gone the kit took
# the real clock for a mocked one (its looks at a loop then paused the loop each time).
LOADED_FROZEN = """
import sys

import freezegun
import pytest

import pytest_agentfaults as af

def test_the_runtime_is_first_loaded_under_a_freezer():
    assert "pytest_agentfaults.runtime.clock" not in sys.modules   # the premise
    with freezegun.freeze_time("2024-01-01"):   # its start reads af's lazy names: loads it
        assert "pytest_agentfaults.runtime.clock" in sys.modules

def test_the_kit_still_knows_the_real_clock():
    from pytest_agentfaults.runtime._loop_facts import real_now

    with freezegun.freeze_time("2024-01-01", auto_tick_seconds=10):
        first, second = real_now(), real_now()
    assert 0 <= second - first < 1

@pytest.mark.real_time
def test_a_real_time_run_under_a_ticking_freezer(faults, trace):
    faults.tool("fetch").raises(ConnectionError("reset")).times(2)

    @af.tool
    def fetch(url: str) -> str:
        \"\"\"Fetch.\"\"\"
        return "page"

    config = af.ResilienceConfig(strategy="fixed", base_delay=0.01, timeout_seconds=5)
    model = af.ScriptedModel([af.call_tool("fetch", url="u"), af.say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch], resilience=config)
    with freezegun.freeze_time("2024-01-01", auto_tick_seconds=10):
        assert agent.run("go").output == "done"
    assert len([event for event in trace.events if event.type == "tool.call"]) == 3
"""


def test_the_kits_real_clock_is_real_when_first_loaded_under_a_freezer(pytester):
    pytester.makepyfile(test_loaded_frozen=LOADED_FROZEN)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--timeout=10", timeout=90)
    result.assert_outcomes(passed=3)
