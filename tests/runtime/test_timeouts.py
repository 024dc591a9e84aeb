"""Per-attempt timeouts that cut: a blocking sync tool in real time, a hung async tool in
virtual time. Nothing here waits for real longer than a few timeouts of 0.05 s."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

RELEASE_WAIT = 10.0  # bounds a blocked tool if the cut is broken; never reached when it works


def blocking_tool(release: threading.Event):
    """A sync tool that blocks until the test releases it, recording its threads."""
    threads: list[threading.Thread] = []
    finished: list[int] = []
    ended = threading.Semaphore(0)

    @af.tool
    def charge(amount: int) -> str:
        """Charge a card."""
        threads.append(threading.current_thread())
        release.wait(RELEASE_WAIT)
        finished.append(amount)
        ended.release()
        return "charged"

    charge.ended = ended  # type: ignore[attr-defined]
    return charge, threads, finished


def real_time_agent(tool, **config):
    config.setdefault("timeout_seconds", 0.05)
    config.setdefault("max_retries", 1)
    return af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[tool],
        clock=af.RealClock(),
        resilience=af.ResilienceConfig(strategy="fixed", base_delay=0.0, **config),
    )


def assert_cut_twice(result, charge, threads, finished, release):
    # The run is over while both attempts still block: each was abandoned at its deadline.
    assert finished == []
    errors = result.trace.of("tool.error", tool="charge")
    assert [e.error.type for e in errors] == ["ToolTimeoutError", "ToolTimeoutError"]
    assert [e.attempt for e in errors] == [1, 2]
    assert result.trace.retries("charge") == 1
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert payload["error"].startswith("ToolTimeoutError")
    assert payload["attempts"] == 2
    # The abandoned calls go on in their threads, and end when what they wait for comes:
    # their threads are free again (workers are reused, so they do not exit).
    release.set()
    assert charge.ended.acquire(timeout=RELEASE_WAIT)
    assert charge.ended.acquire(timeout=RELEASE_WAIT)
    assert finished == [7, 7]
    assert len(threads) == 2
    assert all(t is not threading.current_thread() for t in threads)


def test_blocking_sync_tool_is_cut_at_its_deadline_in_real_time_run():
    release = threading.Event()
    charge, threads, finished = blocking_tool(release)
    result = real_time_agent(charge).run("pay")
    assert result.output == "ok"
    assert_cut_twice(result, charge, threads, finished, release)


def test_blocking_sync_tool_is_cut_at_its_deadline_in_real_time_arun():
    release = threading.Event()
    charge, threads, finished = blocking_tool(release)
    result = asyncio.run(real_time_agent(charge).arun("pay"))
    assert result.output == "ok"
    assert_cut_twice(result, charge, threads, finished, release)


def test_worker_runs_in_the_callers_context_and_returns_its_result():
    release = threading.Event()
    release.set()  # never blocks
    charge, threads, finished = blocking_tool(release)
    result = real_time_agent(charge, timeout_seconds=5).run("pay")
    assert [m.content for m in result.messages if m.role == "tool"] == ["charged"]
    assert finished == [7]
    assert threads[0] is not threading.current_thread()


def test_sync_tool_errors_cross_the_worker_thread_unchanged():
    @af.tool
    def charge(amount: int) -> str:
        """Charge."""
        raise ValueError(f"bad amount {amount}")

    result = real_time_agent(charge).run("pay")
    errors = result.trace.of("tool.error", tool="charge")
    assert [e.error.type for e in errors] == ["ValueError"]  # not retried, not a timeout


def thread_recording_tool():
    """A sync tool that records the thread each of its calls ran on."""
    seen: list[threading.Thread] = []

    @af.tool
    def charge(amount: int) -> str:
        """Charge."""
        seen.append(threading.current_thread())
        return "charged"

    return charge, seen


def test_no_timeout_means_no_thread():
    charge, seen = thread_recording_tool()
    real_time_agent(charge, timeout_seconds=None).run("pay")
    assert seen == [threading.current_thread()]


def test_the_default_timeout_keeps_a_sync_tool_on_the_callers_thread():
    # The default 60 s is a backstop checked on return: tools using thread-bound objects
    # (a sqlite3 connection, thread-locals) keep working, and pay no thread hand-off.
    charge, seen = thread_recording_tool()
    model = ScriptedModel([call_tool("charge", amount=7), say("ok")])
    agent = af.Agent("bot", model=model, tools=[charge], clock=af.RealClock())
    assert agent.resilience.timeout_seconds == 60.0
    assert agent.run("pay").output == "ok"
    assert seen == [threading.current_thread()]


def test_a_timeout_set_for_one_tool_cuts_it_on_a_worker_thread():
    charge, seen = thread_recording_tool()
    config = af.ResilienceConfig(tool_overrides={"charge": {"timeout_seconds": 30}})
    model = ScriptedModel([call_tool("charge", amount=7), say("ok")])
    agent = af.Agent("bot", model=model, tools=[charge], clock=af.RealClock(), resilience=config)
    assert agent.run("pay").output == "ok"
    assert len(seen) == 1
    assert seen[0] is not threading.current_thread()


# ----------------------------------------------------------------- virtual time, async


def hung_tool():
    starts: list[float] = []
    clock = af.VirtualClock()

    @af.tool
    async def charge(amount: int) -> str:
        """Charge a card; the gateway never answers."""
        starts.append(clock.now())
        await asyncio.Event().wait()
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=clock,
        resilience=af.ResilienceConfig(
            timeout_seconds=5, max_retries=1, strategy="fixed", base_delay=1
        ),
    )
    return agent, clock, starts


def assert_cut_at_virtual_deadlines(result, clock, starts):
    assert result.output == "ok"
    errors = result.trace.of("tool.error", tool="charge")
    assert [e.error.type for e in errors] == ["ToolTimeoutError", "ToolTimeoutError"]
    assert [e.at for e in errors] == [5.0, 11.0]  # 0 + 5; then 1 s backoff, 6 + 5
    assert starts == [0.0, 6.0]
    assert result.trace.retries("charge") == 1
    assert clock.sleeps == [1]  # the deadline is a jump, not a wait


def test_async_tool_awaiting_forever_is_cut_at_its_virtual_deadline_arun():
    agent, clock, starts = hung_tool()

    async def main():
        # The guard only turns a hang into a failure; the cut comes after ~50 ms of idle.
        return await asyncio.wait_for(agent.arun("pay"), RELEASE_WAIT)

    assert_cut_at_virtual_deadlines(asyncio.run(main()), clock, starts)


def test_async_tool_awaiting_forever_is_cut_at_its_virtual_deadline_run():
    agent, clock, starts = hung_tool()
    box: list[object] = []
    runner = threading.Thread(target=lambda: box.append(agent.run("pay")), daemon=True)
    runner.start()
    runner.join(RELEASE_WAIT)  # the guard: a hang fails the test instead of blocking it
    assert box, "run() hung on a tool that awaits forever"
    assert_cut_at_virtual_deadlines(box[0], clock, starts)


def test_real_sleep_far_beyond_the_deadline_is_cut_too():
    clock = af.VirtualClock()

    @af.tool
    async def charge(amount: int) -> str:
        """Charge."""
        await asyncio.sleep(10**9)
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
    )
    result = asyncio.run(asyncio.wait_for(agent.arun("pay"), RELEASE_WAIT))
    assert [e.at for e in result.trace.of("tool.error")] == [5.0]


def test_async_tool_making_progress_on_short_real_awaits_completes():
    clock = af.VirtualClock()

    @af.tool
    async def charge(amount: int) -> str:
        """Charge, in several short real steps (longer in all than the idle grace)."""
        for _ in range(4):
            await asyncio.sleep(0.02)
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
    )
    result = asyncio.run(agent.arun("pay"))
    assert [m.content for m in result.messages if m.role == "tool"] == ["charged"]
    assert clock.now() == 0.0


def test_async_tool_reading_a_slow_loopback_stream_completes():
    clock = af.VirtualClock()

    async def main() -> af.RunResult:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            for chunk in (b"a", b"b", b"c\n"):
                await asyncio.sleep(0.03)  # 90 ms in all: longer than the idle grace
                writer.write(chunk)
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        @af.tool
        async def fetch() -> str:
            """Read one line from the loopback server."""
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            line = await reader.readline()
            writer.close()
            return line.decode().strip()

        agent = af.Agent(
            "bot",
            model=ScriptedModel([call_tool("fetch"), say("ok")]),
            tools=[fetch],
            clock=clock,
            resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
        )
        async with server:
            return await agent.arun("read")

    result = asyncio.run(main())
    assert [m.content for m in result.messages if m.role == "tool"] == ["abc"]


def test_async_tool_reading_a_server_on_another_thread_completes():
    # The server's waits are on its own loop: the tool's loop has no timer to go by, only
    # the tool's progress (each chunk wakes it and it awaits anew) keeps time from jumping.
    clock = af.VirtualClock()
    server_loop = asyncio.new_event_loop()
    servers: list[asyncio.Server] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(8):
            await asyncio.sleep(0.02)  # 160 ms in all: three times the idle grace
            writer.write(b"x")
            await writer.drain()
        writer.write(b"\n")
        writer.close()

    async def start() -> None:
        servers.append(await asyncio.start_server(serve, "127.0.0.1", 0))

    async def stop() -> None:
        servers[0].close()
        await servers[0].wait_closed()

    server_loop.run_until_complete(start())
    thread = threading.Thread(target=server_loop.run_forever, daemon=True)
    thread.start()

    @af.tool
    async def fetch() -> str:
        """Read one line, chunk by chunk."""
        port = servers[0].sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        line = b""
        while not line.endswith(b"\n"):
            line += await reader.read(1)
        writer.close()
        await writer.wait_closed()
        return line.decode().strip()

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("fetch"), say("ok")]),
        tools=[fetch],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
    )
    try:
        result = asyncio.run(agent.arun("read"))
    finally:
        asyncio.run_coroutine_threadsafe(stop(), server_loop).result(RELEASE_WAIT)
        server_loop.call_soon_threadsafe(server_loop.stop)
        thread.join(RELEASE_WAIT)
        server_loop.close()
    assert [m.content for m in result.messages if m.role == "tool"] == ["xxxxxxxx"]
    assert clock.now() == 0.0


def test_async_tool_of_run_sees_the_deadline_of_its_own_attempt():
    # run() drives async tools on one event loop runner: each attempt must see its own
    # virtual deadline, not the first attempt's.
    clock = af.VirtualClock()
    slept: list[float] = []

    @af.tool
    async def charge(amount: int) -> str:
        """Charge."""
        slept.append(clock.now())
        if len(slept) == 1:
            raise ConnectionRefusedError("down")
        await clock.asleep(3)  # well within the second attempt's deadline (6 + 5)
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=clock,
        resilience=af.ResilienceConfig(
            timeout_seconds=5, max_retries=1, strategy="fixed", base_delay=6
        ),
    )
    result = agent.run("pay")
    assert [m.content for m in result.messages if m.role == "tool"] == ["charged"]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_sync_tool_under_the_virtual_clock_keeps_the_virtual_deadline(driver):
    clock = af.VirtualClock()

    @af.tool
    def charge(amount: int) -> str:
        """Charge."""
        assert threading.current_thread() is threading.main_thread()  # no worker thread
        clock.sleep(90)
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7), say("ok")]),
        tools=[charge],
        clock=clock,
        resilience=af.ResilienceConfig(timeout_seconds=5, max_retries=0),
    )
    result = agent.run("pay") if driver == "run" else asyncio.run(agent.arun("pay"))
    assert [e.at for e in result.trace.of("tool.error")] == [5.0]


def test_async_tool_hung_in_real_time_is_cut_with_an_error_naming_it_and_its_timeout():
    @af.tool(on_error=af.OnError(timeout=af.raise_error()))
    async def charge(amount: int) -> str:
        """Charge."""
        await asyncio.Event().wait()
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7)]),
        tools=[charge],
        clock=af.RealClock(),
        resilience=af.ResilienceConfig(timeout_seconds=0.05),
    )

    async def main():
        return await asyncio.wait_for(agent.arun("pay"), RELEASE_WAIT)

    with pytest.raises(af.ToolTimeoutError) as caught:
        asyncio.run(main())
    assert str(caught.value) == "tool 'charge' did not finish within 0.05s"
    assert (caught.value.tool, caught.value.timeout) == ("charge", 0.05)


def test_an_async_tool_timing_out_in_virtual_time_names_the_tool_and_timeout():
    @af.tool(on_error=af.OnError(timeout=af.raise_error()))
    async def charge(amount: int) -> str:
        """Charge."""
        await asyncio.Event().wait()
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7)]),
        tools=[charge],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(timeout_seconds=3),
    )
    with pytest.raises(af.ToolTimeoutError) as caught:
        asyncio.run(asyncio.wait_for(agent.arun("pay"), RELEASE_WAIT))
    assert str(caught.value) == "tool 'charge' did not finish within 3s"
    assert (caught.value.tool, caught.value.timeout) == ("charge", 3)


def test_run_refuses_an_async_tool_inside_a_running_event_loop_and_says_use_arun():
    @af.tool
    async def charge(amount: int) -> str:
        """Charge."""
        return "charged"

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("charge", amount=7)]),
        tools=[charge],
        clock=af.VirtualClock(),
        resilience=af.ResilienceConfig(max_retries=0),
    )

    async def main():
        return agent.run("pay")

    with pytest.raises(af.UsageError) as caught:
        asyncio.run(main())
    assert str(caught.value) == (
        "an async tool cannot run inside agent.run() while an event loop is running in this "
        "thread; use `await agent.arun(...)`"
    )
