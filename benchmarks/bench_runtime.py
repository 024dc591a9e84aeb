"""Runtime core benchmarks, side by side with the peers, in ONE process.

Run:  python benchmarks/bench_runtime.py        (needs the `bench` extra)

1. An agent run with one tool call over two scripted turns, vs pydantic-ai's FunctionModel
   on the same scenario; and the same run whose tool fails twice first (retried), vs
   pydantic-ai with the tool raising ModelRetry twice.
2. A tool call through the recovery layer on the happy path, vs tenacity's @retry on the
   same function; and `tool.invoke(args)` (validation included) vs tenacity.
3. A run whose backoff schedule totals 10 minutes, on the virtual clock (wall time).
4. A fixer round with a function fixer, vs the same run without the fault.
5. The faulted run of 1 as a test with the plugin runs it: the two faults injected by an
   active `FaultPlan` (what ``inject_fault(tool=..., raises=ConnectionError, times=2)``
   installs) and every event also collected into the test's trace (the ``trace`` fixture).

Figures are medians of several repeats; what matters is the ratio, measured in one run
(the agent runs and pydantic-ai's, and `tool.invoke` and tenacity, with their repeats
alternated).
"""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, malformed, say
from pytest_agentfaults.runtime._drivers import drive
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime._toolcalls import ToolCalls
from pytest_agentfaults.runtime.hooks import Attempt
from pytest_agentfaults.runtime.models.base import ToolCall


def per_call_us(fn: Callable[[], object], number: int, repeat: int = 7) -> float:
    fn()  # warm up
    times = timeit.repeat(fn, number=number, repeat=repeat)
    return statistics.median(times) / number * 1e6


def paired_us(
    ours: Callable[[], object], ours_n: int, theirs: Callable[[], object], theirs_n: int
) -> tuple[float, float]:
    """Median per call of each, their repeats alternated (ours, theirs, ours, ...).

    A slow spell of a shared machine then lands on both sides of the ratio, not on
    whichever side happened to be timed during it.
    """
    ours()
    theirs()
    mine: list[float] = []
    other: list[float] = []
    for _ in range(7):
        mine.append(timeit.timeit(ours, number=ours_n) / ours_n)
        other.append(timeit.timeit(theirs, number=theirs_n) / theirs_n)
    return statistics.median(mine) * 1e6, statistics.median(other) * 1e6


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# --------------------------------------------------------------------------- 1. agent run


def ours_agent_run() -> Callable[[], object]:
    model = ScriptedModel([call_tool("add", a=1, b=2), say("3")])
    agent = af.Agent("bot", model=model, tools=[af.tool(add)], clock=af.VirtualClock())

    def run() -> object:
        model.reset()
        result = agent.run("what is 1 + 2?")
        assert result.output == "3"
        return result

    return run


def pydantic_ai_agent_run() -> Callable[[], object]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2})])
        return ModelResponse(parts=[TextPart("3")])

    agent = Agent(FunctionModel(respond))
    agent.tool_plain(add)

    def run() -> object:
        result = agent.run_sync("what is 1 + 2?")
        assert result.output == "3"
        return result

    return run


def ours_agent_run_with_faults() -> Callable[[], object]:
    failures = {"left": 0}

    def add_flaky(a: int, b: int) -> int:
        """Add two numbers; fails twice first."""
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("reset")
        return a + b

    model = ScriptedModel([call_tool("add", a=1, b=2), say("3")])
    tool = af.tool(name="add")(add_flaky)
    agent = af.Agent("bot", model=model, tools=[tool], clock=af.VirtualClock())

    def run() -> object:
        model.reset()
        failures["left"] = 2
        result = agent.run("what is 1 + 2?")
        assert result.output == "3"
        assert result.usage.retries == 2
        return result

    return run


def pydantic_ai_agent_run_with_faults() -> Callable[[], object]:
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    failures = {"left": 0}

    def respond(messages: list, info: AgentInfo) -> ModelResponse:
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            return ModelResponse(parts=[TextPart("3")])
        return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2})])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain(retries=2)
    def add(a: int, b: int) -> int:
        """Add two numbers; fails twice first."""
        if failures["left"]:
            failures["left"] -= 1
            raise ModelRetry("reset")
        return a + b

    def run() -> object:
        failures["left"] = 2
        result = agent.run_sync("what is 1 + 2?")
        assert result.output == "3"
        return result

    return run


def ours_agent_run_with_injected_faults() -> Callable[[], object]:
    from pytest_agentfaults.runtime._recorder import collecting
    from pytest_agentfaults.testing.faults import FaultPlan

    model = ScriptedModel([call_tool("add", a=1, b=2), say("3")])
    agent = af.Agent("bot", model=model, tools=[af.tool(add)], clock=af.VirtualClock())

    def run() -> object:
        model.reset()
        plan = FaultPlan()  # a test's plan: fresh per test, as the plugin makes it
        plan.tool("add").raises(ConnectionError).times(2)
        with plan.active(), collecting(af.Trace(), fresh_run_ids=True) as trace:
            result = agent.run("what is 1 + 2?")
        assert result.output == "3"
        assert len(plan.fired) == 2
        assert len(trace) == len(result.trace)
        return result

    return run


# --------------------------------------------------------------------------- 2. recovery layer


def ours_recovery_layer(
    timeout: float | None = None,
) -> tuple[Callable[[], object], Callable[[], object]]:
    """One tool attempt through the recovery loop (policy, attempt, timeout check).

    Real time, as tenacity uses. With no timeout (tenacity has none) the tool runs inline;
    with one, a sync tool runs on a worker thread so the attempt can be cut at its deadline.
    """
    tool = af.tool(add)
    clock = af.RealClock()
    config = af.ResilienceConfig(timeout_seconds=timeout)
    calls = ToolCalls(
        tools={"add": tool},
        resilience=config,
        clock=clock,
        rec=Recorder(agent="bot", clock=clock),
        uniform=lambda: 0.5,
    )
    kwargs = {"a": 1, "b": 2}

    def attempt_steps():  # the policy loop around one happy attempt, minus validation
        result = yield Attempt(tool, kwargs, timeout, clock)
        return result

    def through_layer() -> object:
        return drive(attempt_steps())

    call = ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')

    def whole_tool_call() -> object:  # + argument validation + two trace events
        calls.rec.trace.events.clear()  # type: ignore[union-attr]
        return drive(calls.tool_call(call))

    return through_layer, whole_tool_call


def ours_invoke() -> Callable[[], object]:
    tool = af.tool(add)
    args = {"a": 1, "b": 2}
    return lambda: tool.invoke(args)


def tenacity_retry() -> Callable[[], object]:
    from tenacity import retry, stop_after_attempt, wait_exponential_jitter

    wrapped = retry(stop=stop_after_attempt(4), wait=wait_exponential_jitter())(add)
    return lambda: wrapped(1, 2)


# --------------------------------------------------------------------------- 3. ten minutes


def ten_minutes_of_backoff() -> tuple[float, float]:
    failures = {"left": 10}

    @af.tool
    def flaky() -> str:
        """Fails ten times."""
        if failures["left"]:
            failures["left"] -= 1
            raise ConnectionError("reset")
        return "ok"

    clock = af.VirtualClock()
    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("flaky"), say("done")]),
        tools=[flaky],
        clock=clock,
        resilience=af.ResilienceConfig(max_retries=10, strategy="fixed", base_delay=60),
    )
    start = time.perf_counter()
    result = agent.run("go")
    wall = time.perf_counter() - start
    assert result.output == "done"
    return clock.total_slept, wall


# --------------------------------------------------------------------------- 4. fixer round


def fixer_runs() -> tuple[Callable[[], object], Callable[[], object]]:
    fixer = af.Agent.from_function("quote-keys", lambda raw: '{"a": 1, "b": 2}')
    tool = af.tool(on_error=af.OnError(invalid_args=af.fix(fixer)))(add)
    clean = ScriptedModel([call_tool("add", a=1, b=2), say("3")])
    faulty = ScriptedModel([malformed.tool_args("{a: 1, b: 2}", tool="add"), say("3")])
    clock = af.VirtualClock()
    clean_agent = af.Agent("bot", model=clean, tools=[tool], clock=clock)
    faulty_agent = af.Agent("bot", model=faulty, tools=[tool], clock=clock)

    def without_fault() -> object:
        clean.reset()
        return clean_agent.run("x")

    def with_fixer_round() -> object:
        faulty.reset()
        result = faulty_agent.run("x")
        assert result.usage.fixer_calls == 1
        return result

    return without_fault, with_fixer_round


def main() -> None:
    print("pytest-agentfaults runtime benchmarks (median per call)\n")
    ours, theirs = paired_us(ours_agent_run(), 2000, pydantic_ai_agent_run(), 200)
    print("1. agent run, one tool call over two scripted turns")
    print(f"   pytest-agentfaults        {ours:9.1f} us   (target <= 100 us)")
    print(f"   pydantic-ai FunctionModel {theirs:9.1f} us")
    print(f"   ratio                     {theirs / ours:9.1f}x faster (target >= 100x)")
    ours_f, theirs_f = paired_us(
        ours_agent_run_with_faults(), 2000, pydantic_ai_agent_run_with_faults(), 200
    )
    print("   with the tool failing twice first (retried):")
    print(f"   pytest-agentfaults        {ours_f:9.1f} us")
    print(f"   pydantic-ai FunctionModel {theirs_f:9.1f} us  (ModelRetry twice)")
    print(f"   ratio                     {theirs_f / ours_f:9.1f}x faster (target >= 100x)")
    ours_i = per_call_us(ours_agent_run_with_injected_faults(), 2000)
    print("   the faults injected by a FaultPlan, events also in a test's trace (as a test):")
    print(f"   pytest-agentfaults        {ours_i:9.1f} us")
    print(f"   ratio                     {theirs_f / ours_i:9.1f}x faster\n")

    direct = per_call_us(lambda: add(1, 2), 200_000)
    layer, whole = ours_recovery_layer()
    layer_us = per_call_us(layer, 50_000)
    whole_us = per_call_us(whole, 20_000)
    invoke_us, ten = paired_us(ours_invoke(), 50_000, tenacity_retry(), 20_000)
    print("2. tool call on the happy path")
    print(f"   plain function call       {direct:9.2f} us")
    print(
        f"   through the recovery layer{layer_us:9.2f} us  (+{layer_us - direct:.2f} us; target <= 2)"
    )
    print(f"   + validation and events   {whole_us:9.2f} us")
    print(f"   tenacity @retry           {ten:9.2f} us  (+{ten - direct:.2f} us)")
    print(
        f"   ratio of added cost       {(ten - direct) / (layer_us - direct):9.1f}x cheaper "
        "than tenacity (target >= 10x)"
    )
    print(f"   tool.invoke(args)         {invoke_us:9.2f} us  (validation included)")
    print(
        f"   ratio tenacity / invoke   {ten / invoke_us:9.1f}x cheaper than tenacity "
        "(target >= 10x)"
    )
    cut_layer, _ = ours_recovery_layer(timeout=60.0)
    cut_us = per_call_us(cut_layer, 5_000)
    print(f"   with a 60 s timeout       {cut_us:9.2f} us  (worker thread, cut at the deadline)\n")

    slept, wall = ten_minutes_of_backoff()
    print("3. a run whose backoff totals 10 minutes, on the virtual clock")
    print(f"   virtual time slept        {slept:9.0f} s")
    print(f"   wall time                 {wall * 1e3:9.2f} ms  (target < 5 ms)\n")

    without, with_round = fixer_runs()
    base = per_call_us(without, 2000)
    fixed = per_call_us(with_round, 2000)
    print("4. a fixer round with a function fixer")
    print(f"   run without the fault     {base:9.1f} us")
    print(f"   same run, one fixer round {fixed:9.1f} us  (+{fixed - base:.1f} us; target <= 20)")


if __name__ == "__main__":
    main()
