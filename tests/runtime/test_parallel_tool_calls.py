"""The tool calls of one model turn run concurrently in ``arun``, sequentially in ``run``.

Results reach the model in the model's order; the trace is ordered by virtual time, then by
call index, so it is the same on every run.
"""

from __future__ import annotations

import asyncio

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, call_tools, say

CITIES = ("Paris", "Rome", "Oslo")


def three_calls(tool: str = "lookup"):
    return call_tools([(tool, {"city": city}) for city in CITIES])


class Service:
    """An async tool whose calls take virtual time; it notes how many run at once."""

    def __init__(self, clock: af.VirtualClock, seconds: dict[str, float] | None = None) -> None:
        self.clock = clock
        self.seconds = seconds or {}
        self.running = 0
        self.most_at_once = 0
        self.started: list[str] = []

        @af.tool
        async def lookup(city: str) -> str:
            """The weather in ``city``."""
            self.started.append(city)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            try:
                await self.clock.asleep(self.seconds.get(city, 0.2))
            finally:
                self.running -= 1
            return f"{city}: sunny"

        self.tool = lookup


def make_agent(clock, tools, steps, **kwargs):
    return af.Agent("bot", model=ScriptedModel(steps), tools=tools, clock=clock, **kwargs)


def tool_results(result: af.RunResult) -> list[str]:
    return [m.content for m in result.messages if m.role == "tool"]


def tool_events(result: af.RunResult) -> list[tuple[str, str | None, float]]:
    return [(e.type, e.call_id, round(e.at, 6)) for e in result.trace if e.type.startswith("tool.")]


@pytest.mark.asyncio
async def test_three_calls_of_0_2_s_take_0_2_s_in_arun():
    clock = af.VirtualClock()
    service = Service(clock)
    agent = make_agent(clock, [service.tool], [three_calls(), say("done")])
    result = await agent.arun("weather?")
    assert result.output == "done"
    assert clock.now() == pytest.approx(0.2)
    assert service.most_at_once == 3
    assert tool_results(result) == [f"{city}: sunny" for city in CITIES]


def test_run_keeps_the_calls_sequential():
    clock = af.VirtualClock()
    service = Service(clock)
    result = make_agent(clock, [service.tool], [three_calls(), say("done")]).run("weather?")
    assert clock.now() == pytest.approx(0.6)
    assert service.most_at_once == 1
    assert tool_results(result) == [f"{city}: sunny" for city in CITIES]
    assert [kind for kind, _, _ in tool_events(result)] == ["tool.call", "tool.result"] * 3


@pytest.mark.asyncio
async def test_a_clock_that_ran_a_single_call_first_gives_parallel_calls_their_own_time():
    # A clock reads a branch's own time only once a parallel turn has forked it: the same
    # clock, used by a lone call first, must still give each concurrent call its own.
    clock = af.VirtualClock()
    service = Service(clock, {"Paris": 0.3, "Rome": 0.1, "Oslo": 0.2})
    steps = [call_tool("lookup", city="Paris"), three_calls(), say("done")]
    result = await make_agent(clock, [service.tool], steps).arun("x")
    assert service.most_at_once == 3
    assert clock.now() == pytest.approx(0.6)  # 0.3, then the slowest call's 0.3, not the sum
    assert [at for kind, _, at in tool_events(result) if kind == "tool.result"] == [
        pytest.approx(at) for at in (0.3, 0.4, 0.5, 0.6)
    ]


@pytest.mark.asyncio
async def test_results_keep_the_models_order_and_the_trace_is_ordered_by_time_then_index():
    clock = af.VirtualClock()
    service = Service(clock, {"Paris": 0.3, "Rome": 0.1, "Oslo": 0.2})
    result = await make_agent(clock, [service.tool], [three_calls(), say("done")]).arun("x")
    assert tool_results(result) == [f"{city}: sunny" for city in CITIES]
    assert tool_events(result) == [
        ("tool.call", "call_1", 0.0),
        ("tool.call", "call_2", 0.0),
        ("tool.call", "call_3", 0.0),
        ("tool.result", "call_2", 0.1),
        ("tool.result", "call_3", 0.2),
        ("tool.result", "call_1", 0.3),
    ]
    seqs = [e.seq for e in result.trace]
    assert seqs == list(range(len(seqs)))
    ats = [e.at for e in result.trace]
    assert ats == sorted(ats)
    assert clock.now() == pytest.approx(0.3)


@pytest.mark.asyncio
async def test_the_trace_is_the_same_on_every_run():
    async def once():
        clock = af.VirtualClock()
        service = Service(clock, {"Paris": 0.2, "Rome": 0.2, "Oslo": 0.1})
        agent = make_agent(clock, [service.tool], [three_calls(), say("done")])
        result = await agent.arun("x")
        return [(e.type, e.tool, e.call_id, e.attempt, e.at) for e in result.trace]

    assert await once() == await once()


@pytest.mark.asyncio
async def test_a_retrying_call_backs_off_on_its_own_timeline():
    clock = af.VirtualClock()
    failures = {"Rome": 2}

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=3)))
    async def lookup(city: str) -> str:
        """The weather in ``city``."""
        await clock.asleep(0.2)
        if failures.get(city, 0):
            failures[city] -= 1
            raise ConnectionError("reset")
        return f"{city}: sunny"

    config = af.ResilienceConfig(strategy="exponential", base_delay=1.0)
    agent = make_agent(clock, [lookup], [three_calls(), say("done")], resilience=config)
    result = await agent.arun("x")
    assert tool_results(result) == [f"{city}: sunny" for city in CITIES]
    # Rome: 0.2 + 1 + 0.2 + 2 + 0.2 = 3.6 s; the others finished at 0.2 s meanwhile
    assert clock.now() == pytest.approx(3.6)
    assert result.trace.retries("lookup") == 2
    assert [e.at for e in result.trace.of("tool.result")] == pytest.approx([0.2, 0.2, 3.6])


@pytest.mark.asyncio
async def test_cancelling_stops_the_other_calls_retries():
    clock = af.VirtualClock()
    token = af.CancelToken()

    @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=5)))
    async def lookup(city: str) -> str:
        """The weather in ``city``."""
        await clock.asleep(0.2)
        if city == "Paris":
            token.cancel("user left")
            return "cancelled it"
        raise ConnectionError("reset")

    agent = make_agent(clock, [lookup], [three_calls()])
    result = await agent.arun("x", cancel=token)
    assert result.status == "cancelled"
    assert result.trace.count("tool.call") == 3  # no retry once the token is cancelled


@pytest.mark.asyncio
async def test_a_hard_failure_propagates_and_the_budget_still_counts_calls():
    clock = af.VirtualClock()

    @af.tool
    async def lookup(city: str) -> str:
        """The weather in ``city``."""
        await clock.asleep(0.1)
        if city == "Rome":
            raise af.ToolExecutionError("card blocked")
        return city

    agent = make_agent(clock, [lookup], [three_calls()])
    with pytest.raises(af.ToolExecutionError, match="card blocked"):
        await agent.arun("x")

    service = Service(af.VirtualClock())
    capped = make_agent(
        service.clock,
        [service.tool],
        [three_calls()],
        budget=af.Budget(max_tool_calls=2),
    )
    result = await capped.arun("x")
    assert result.status == "max_iterations"
    assert service.started == ["Paris", "Rome"]
    ran, ran_too, not_run = tool_results(result)  # the third answered as not run
    assert '"error_type": "aborted"' in not_run
    assert '"aborted"' not in ran + ran_too


@pytest.mark.asyncio
async def test_tool_faults_reach_each_parallel_call(faults):
    faults.tool("lookup").delay(0.5).times(1)
    clock = af.VirtualClock()
    service = Service(clock)
    result = await make_agent(clock, [service.tool], [three_calls(), say("done")]).arun("x")
    assert result.output == "done"
    assert clock.now() == pytest.approx(0.7)  # one call: 0.5 latency + 0.2 work


@pytest.mark.asyncio
async def test_sync_tools_also_run_in_the_turn():
    seen = []

    @af.tool
    def lookup(city: str) -> str:
        """The weather in ``city``."""
        seen.append(city)
        return city

    agent = make_agent(af.VirtualClock(), [lookup], [three_calls(), say("done")])
    result = await agent.arun("x")
    assert result.output == "done"
    assert seen == list(CITIES)


@pytest.mark.asyncio
async def test_concurrent_calls_really_overlap_on_the_event_loop():
    gate = asyncio.Event()
    clock = af.VirtualClock()

    @af.tool
    async def lookup(city: str) -> str:
        """The weather in ``city``."""
        if city == "Oslo":
            gate.set()  # the last call opens the gate the first one waits on
        else:
            await asyncio.wait_for(
                gate.wait(), timeout=1
            )  # only reached when the calls run one by one
        return city

    result = await make_agent(clock, [lookup], [three_calls(), say("done")]).arun("x")
    assert tool_results(result) == list(CITIES)


@pytest.mark.asyncio
async def test_jitter_does_not_depend_on_which_call_gets_there_first():
    from pytest_agentfaults.runtime.backoff import seeded_jitter

    def scenario(first_latency: float):
        clock = af.VirtualClock()
        failures = dict.fromkeys(CITIES, 2)

        @af.tool(on_error=af.OnError(execution=af.retry(max_attempts=3)))
        def lookup(city: str) -> str:
            """The weather in ``city``."""
            if city == "Paris":
                clock.advance(first_latency)  # latency: no await, the call runs on
            if failures[city]:
                failures[city] -= 1
                raise ConnectionError("reset")
            return city

        config = af.ResilienceConfig(strategy="exponential_jitter", base_delay=1.0)
        return make_agent(clock, [lookup], [three_calls(), say("done")], resilience=config)

    def delays(result):
        return {
            call_id: [e.delay for e in result.trace.of("tool.retry", call_id=call_id)]
            for call_id in ("call_1", "call_2", "call_3")
        }

    with seeded_jitter(42):
        reference = delays(scenario(0.0).run("x"))
        assert delays(await scenario(0.0).arun("x")) == reference
        assert delays(await scenario(5.0).arun("x")) == reference
    assert len({tuple(d) for d in reference.values()}) == 3  # each call its own stream


def test_run_keeps_one_event_loop_for_every_async_tool_call():
    loops = []

    @af.tool
    async def lookup(city: str) -> str:
        """The weather in ``city``."""
        loops.append(asyncio.get_running_loop())  # e.g. an async client kept between calls
        return city

    steps = [call_tools([("lookup", {"city": "Nice"})]), three_calls(), say("done")]
    assert make_agent(af.VirtualClock(), [lookup], steps).run("x").output == "done"
    assert len(loops) == 4
    assert len(set(map(id, loops))) == 1


@pytest.mark.asyncio
async def test_observers_and_the_tests_trace_see_the_merged_order(trace):
    clock = af.VirtualClock()
    service = Service(clock, {"Paris": 0.3, "Rome": 0.1, "Oslo": 0.2})
    seen: list[af.Event] = []
    agent = af.Agent(
        "bot",
        model=ScriptedModel([three_calls(), say("done")]),
        tools=[service.tool],
        clock=clock,
        observer=seen.append,
    )
    result = await agent.arun("x")
    assert [(e.seq, e.type, e.call_id) for e in seen] == [
        (e.seq, e.type, e.call_id) for e in result.trace
    ]
    assert [(e.type, e.call_id) for e in trace] == [(e.type, e.call_id) for e in result.trace]


def test_run_stops_the_turn_at_a_cancel_like_before():
    token = af.CancelToken()
    ran = []

    @af.tool
    def lookup(city: str) -> str:
        """The weather in ``city``."""
        ran.append(city)
        token.cancel("enough")
        return city

    agent = make_agent(af.VirtualClock(), [lookup], [three_calls()])
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert ran == ["Paris"]  # sequential: the next calls never start
