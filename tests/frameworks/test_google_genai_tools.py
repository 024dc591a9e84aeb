"""Tool faults reach google-genai's automatic function calling (AFC).

``generate_content(config=GenerateContentConfig(tools=[get_weather]))`` with Python
functions as tools is the SDK's own agent loop: it calls each function the model asks for
and sends its result, or ``{"error": ...}`` when it raised, back to the model. The adapter
wraps each such call, so each is one occurrence of the tool. The model is the real SDK
over ``http_faults.script("gemini", ...)``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from google import genai
from google.genai import types

import pytest_agentfaults as af
from pytest_agentfaults.testing.steps import call_tool, say

MODEL = "gemini-2.0-flash"


def make_tools(calls: list[str]) -> tuple[Any, Any]:
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    async def get_weather_async(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    return get_weather, get_weather_async


def responses_sent(http_faults: Any) -> list[dict[str, Any]]:
    """The function responses AFC sent the model, in order (the last request has them all)."""
    found = []
    if http_faults.calls:
        for content in json.loads(http_faults.calls[-1].request.content)["contents"]:
            found.extend(
                part["functionResponse"]["response"]
                for part in content["parts"]
                if "functionResponse" in part
            )
    return found


def ask(tool: Any) -> Any:
    with genai.Client(api_key="gemini-test-key") as client:
        return client.models.generate_content(
            model=MODEL,
            contents="Weather in Paris?",
            config=types.GenerateContentConfig(tools=[tool]),
        )


AGAIN = [
    call_tool("get_weather", city="Paris"),
    call_tool("get_weather", city="Paris"),
    say("Sunny."),
]


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_a_raised_fault_is_sent_as_the_error_and_the_model_calls_again(
    http_faults: Any, trace: af.Trace
) -> None:
    calls: list[str] = []
    http_faults.script("gemini", AGAIN)
    assert ask(make_tools(calls)[0]).text == "Sunny."
    assert calls == ["Paris"]  # the faulted attempt never reached the function
    first, second = responses_sent(http_faults)[-2:]
    assert "reset" in first["error"]  # wrapped as the SDK wraps a function's own error
    assert "Failed to invoke function get_weather" in first["error"]
    assert second == {"result": "Sunny in Paris"}
    trace.assert_sequence(["tool.fault", "tool.retry", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"google_genai"}
    assert trace.retries("get_weather") == 1
    assert trace.of("tool.retry")[0].by == "model"
    trace.assert_resilient()


@pytest.mark.inject_fault(tool="get_weather", returns=af.ToolFailure(error="city not found"))
def test_a_tool_failure_is_the_error_the_model_reads(http_faults: Any) -> None:
    calls: list[str] = []
    http_faults.script("gemini", [call_tool("get_weather", city="Paris"), say("Sorry.")])
    ask(make_tools(calls)[0])
    assert calls == []
    (sent,) = responses_sent(http_faults)
    assert "city not found" in sent["error"]


@pytest.mark.inject_fault(tool="get_weather", returns="Snow in Paris")
def test_a_returned_value_is_the_functions_result(http_faults: Any) -> None:
    calls: list[str] = []
    http_faults.script("gemini", [call_tool("get_weather", city="Paris"), say("Snow.")])
    ask(make_tools(calls)[0])
    assert calls == []
    assert responses_sent(http_faults) == [{"result": "Snow in Paris"}]


@pytest.mark.asyncio
@pytest.mark.parametrize("which", [0, 1], ids=["sync-function", "async-function"])
@pytest.mark.inject_fault(tool="get_weather", raises=TimeoutError("slow"), times=1)
async def test_the_async_client(http_faults: Any, trace: af.Trace, which: int) -> None:
    calls: list[str] = []
    tool = make_tools(calls)[which]
    tool.__name__ = "get_weather"  # the name the model calls
    http_faults.script("gemini", AGAIN)
    async with genai.Client(api_key="gemini-test-key").aio as client:
        answer = await client.models.generate_content(
            model=MODEL, contents="Weather?", config=types.GenerateContentConfig(tools=[tool])
        )
    assert answer.text == "Sunny."
    assert calls == ["Paris"]
    trace.assert_sequence(["tool.fault", "tool.retry", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"google_genai"}


def test_without_a_fault_the_functions_run_untouched(http_faults: Any, trace: af.Trace) -> None:
    calls: list[str] = []
    http_faults.script("gemini", [call_tool("get_weather", city="Paris"), say("Sunny.")])
    ask(make_tools(calls)[0])
    assert calls == ["Paris"]
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.result"]


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_arguments_the_function_cannot_take_take_no_fault(
    http_faults: Any, faults: af.FaultPlan
) -> None:
    calls: list[str] = []
    http_faults.script(
        "gemini",
        [
            call_tool("get_weather", town="Paris"),
            call_tool("get_weather", city="Paris"),
            say("Sunny."),
        ],
    )
    ask(make_tools(calls)[0])
    first, second = responses_sent(http_faults)
    assert "missing 1 required positional argument" in first["error"]  # the SDK's own
    assert "reset" in second["error"]  # the fault took the first call that could run
    assert len(faults.fired) == 1


def test_the_adapter_is_registered_and_loads_with_google_genai() -> None:
    from pytest_agentfaults._plugin_adapters import adapters_header
    from pytest_agentfaults.testing._frameworks import ADAPTERS, FRAMEWORK_OF

    assert ADAPTERS["google.genai"].endswith("._frameworks.google_genai:install")
    assert FRAMEWORK_OF["google.genai"] == "google_genai"
    assert "google-genai " in (adapters_header() or "")
