"""Tool faults reach the openai SDK's own tool runner: ``ResponsesToolRunner``.

``openai.lib.responses_tool_runner`` is the official SDK's agent loop over the Responses
API: it calls each ``RegisteredFunction``'s ``execute`` with the model's arguments and
sends the result back. A function that raises stops the run: the runner raises
``ToolRunnerError`` naming the calls it attempted, and the app decides whether to run
again. ``tool=`` faults never reached those functions; now each ``execute`` is one attempt
(``framework="openai"``), sync and async, one at a time or concurrently. The model is the
real SDK over ``http_faults.script("openai-responses", ...)``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from openai.lib.responses_tool_runner import (
    AsyncRegisteredFunction,
    AsyncResponsesToolRunner,
    RegisteredFunction,
    ResponsesToolRunner,
    ToolRunnerError,
)

import pytest_agentfaults as af
from pytest_agentfaults.testing.steps import call_tool, say

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
PARAMS: Any = {"model": "gpt-4o-mini", "input": "Weather in Paris?"}


def weather(calls: list[Any]) -> Any:
    def get_weather(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"Sunny in {args['city']}"

    return get_weather


def outputs(http_faults: Any) -> list[str]:
    """The function outputs the model has read by the last request (its whole history)."""
    last = json.loads(http_faults.calls[-1].request.content).get("input", [])
    return [
        item["output"]
        for item in last
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def script(http_faults: Any, *steps: Any) -> Any:
    return http_faults.script("openai-responses", list(steps))


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_a_raised_fault_stops_the_run_and_a_second_run_recovers(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    calls: list[Any] = []
    script(
        http_faults,
        call_tool("get_weather", city="Paris"),  # the first run's only answer
        call_tool("get_weather", city="Paris"),  # the second run's two
        say("It is sunny."),
    )
    runner = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))])
    with pytest.raises(ToolRunnerError) as stopped:  # the SDK stops at a failed function
        runner.run(openai_client, PARAMS)
    assert calls == []  # the fault came in the function's place
    assert stopped.value.attempted_call_ids
    assert not stopped.value.completed_call_ids
    # the app's recovery: run again
    final = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))]).run(
        openai_client, PARAMS
    )
    assert final.output_text == "It is sunny."
    assert calls == [{"city": "Paris"}]
    assert outputs(http_faults) == ["Sunny in Paris"]
    errors = trace.of("tool.error")
    assert [e.field("framework") for e in errors] == ["openai"]
    assert errors[0].tool == "get_weather"
    assert errors[0].error.type == "ConnectionError"
    assert [e.field("framework") for e in trace.of("tool.result")] == ["openai"]


@pytest.mark.inject_fault(tool="get_weather", returns=af.ToolFailure(error="weather service down"))
def test_a_returned_failure_is_the_output_the_model_reads(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    calls: list[Any] = []
    script(http_faults, call_tool("get_weather", city="Paris"), say("Try later."))
    runner = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))])
    assert runner.run(openai_client, PARAMS).output_text == "Try later."
    assert calls == []
    assert outputs(http_faults) == ["weather service down"]
    (event,) = trace.of("tool.error")
    assert event.field("framework") == "openai"


@pytest.mark.inject_fault(tool="get_weather", returns=af.ToolFailure(error="busy"), times=1)
def test_the_model_calling_again_after_a_returned_failure_is_its_retry(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # the model read the failure and asked again in its next turn: the model's retry
    calls: list[Any] = []
    script(
        http_faults,
        call_tool("get_weather", city="Paris"),
        call_tool("get_weather", city="Paris"),
        say("It is sunny."),
    )
    runner = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))])
    assert runner.run(openai_client, PARAMS).output_text == "It is sunny."
    assert outputs(http_faults) == ["busy", "Sunny in Paris"]
    (retry,) = trace.of("tool.retry")
    assert retry.by == "model"
    assert retry.field("framework") == "openai"


@pytest.mark.inject_fault(tool="get_weather", returns="Rain in Paris")
def test_a_returned_value_is_the_function_result(http_faults: Any, openai_client: Any) -> None:
    calls: list[Any] = []
    script(http_faults, call_tool("get_weather", city="Paris"), say("Rain."))
    runner = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))])
    assert runner.run(openai_client, PARAMS).output_text == "Rain."
    assert calls == []
    assert outputs(http_faults) == ["Rain in Paris"]


@pytest.mark.inject_fault(tool="get_weather", raises=TimeoutError("slow"), times=1)
def test_independent_calls_on_the_runner_thread_pool_take_the_fault_once(
    http_faults: Any, openai_client: Any, trace: af.Trace
) -> None:
    # eager streaming runs an independent function's calls on the runner's thread pool, as
    # they stream in: the fault reaches them there (each in a copy of the test's context),
    # fires once, and the run stops at the failed one after the other call finished
    calls: list[Any] = []
    threads: list[str] = []

    def get_weather(args: dict[str, Any]) -> str:
        threads.append(threading.current_thread().name)
        return weather(calls)(args)

    script(
        http_faults,
        af.call_tools([("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]),
    )
    function = RegisteredFunction(WEATHER, get_weather, independent=True)
    with pytest.raises(ToolRunnerError):
        ResponsesToolRunner(functions=[function]).run(
            openai_client, PARAMS, stream=True, eager=True, max_concurrent_calls=2
        )
    assert len(calls) == 1  # the other call ran the real function
    assert threads != [threading.current_thread().name]  # on the pool
    (error,) = trace.of("tool.error")
    assert error.error.type == "TimeoutError"
    assert trace.of("tool.retry") == []  # two calls of one turn: neither retries the other


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_the_async_runner_too(http_faults: Any, async_openai_client: Any, trace: af.Trace) -> None:
    calls: list[Any] = []

    async def get_weather(args: dict[str, Any]) -> str:
        calls.append(args)
        return f"Sunny in {args['city']}"

    script(
        http_faults,
        call_tool("get_weather", city="Paris"),
        call_tool("get_weather", city="Paris"),
        say("It is sunny."),
    )

    async def main() -> Any:
        functions = [AsyncRegisteredFunction(WEATHER, get_weather)]
        with pytest.raises(ToolRunnerError):
            await AsyncResponsesToolRunner(functions=functions).run(async_openai_client, PARAMS)
        return await AsyncResponsesToolRunner(functions=functions).run(async_openai_client, PARAMS)

    assert asyncio.run(main()).output_text == "It is sunny."
    assert calls == [{"city": "Paris"}]
    assert [e.field("framework") for e in trace.of("tool.error")] == ["openai"]


def test_without_a_fault_the_runner_runs_as_ever(http_faults: Any, openai_client: Any) -> None:
    calls: list[Any] = []
    script(http_faults, call_tool("get_weather", city="Paris"), say("It is sunny."))
    runner = ResponsesToolRunner(functions=[RegisteredFunction(WEATHER, weather(calls))])
    assert runner.run(openai_client, PARAMS).output_text == "It is sunny."
    assert calls == [{"city": "Paris"}]


def test_a_test_without_the_kit_meets_the_sdk_own_runner() -> None:
    # hooked for a kit test only, and undone at its teardown, whatever ran before
    from openai.lib import _tool_lifecycle
    from openai.lib import responses_tool_runner as module

    from pytest_agentfaults.testing._frameworks._hook import HOOKED

    assert module.invoke is _tool_lifecycle.invoke
    for runner in (ResponsesToolRunner, AsyncResponsesToolRunner):
        assert not hasattr(runner._execute_function, HOOKED)


def test_a_runner_without_what_is_hooked_is_unhookable_and_left_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a future openai that no longer calls invoke(): the two methods hooked first are put
    # back, and the fault's message will say why its tools run unwatched
    from openai.lib import responses_tool_runner as module

    from pytest_agentfaults.testing._frameworks import Unhookable
    from pytest_agentfaults.testing._frameworks._hook import HOOKED
    from pytest_agentfaults.testing._frameworks.openai_runner import install

    monkeypatch.delattr(module, "invoke")
    with pytest.raises(Unhookable, match="calls no invoke"):
        install()
    for runner in (ResponsesToolRunner, AsyncResponsesToolRunner):
        assert not hasattr(vars(runner)["_execute_function"], HOOKED)
