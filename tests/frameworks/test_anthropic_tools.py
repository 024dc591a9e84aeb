"""Tool faults reach the anthropic SDK's own tools: ``@beta_tool`` and its tool runner.

``client.beta.messages.tool_runner(tools=[...])`` is the official SDK's agent loop: it
calls each ``@beta_tool`` / ``@beta_async_tool`` and feeds an exception back to the model
as an ``is_error`` tool result. The adapter hooks the tools' ``call``, so each attempt is
one occurrence of the tool, and the runner's own recovery (the model asked again) is what
the trace shows. The model is the real SDK over ``http_faults.script("anthropic", ...)``.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from anthropic import beta_async_tool, beta_tool
from anthropic.lib.tools import ToolError

import pytest_agentfaults as af
from pytest_agentfaults.testing.steps import call_tool, say

ASK = [{"role": "user", "content": "Weather in Paris?"}]
MODEL = "claude-haiku-4-5"


def make_tools(calls: list[str]) -> tuple[Any, Any]:
    @beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    @beta_async_tool
    async def get_weather_async(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    return get_weather, get_weather_async


def tool_results(http_faults: Any) -> list[dict[str, Any]]:
    """The tool results the runner sent the model, in order.

    Each request of the runner carries the turn's new message only (its thread keeps the
    rest), so they are read from every request.
    """
    found = []
    for call in http_faults.calls:
        for message in json.loads(call.request.content)["messages"]:
            content = message["content"]
            if isinstance(content, list):
                found.extend(block for block in content if block.get("type") == "tool_result")
    return found


def run_sync(client: Any, tool: Any, *, stream: bool = False) -> Any:
    runner = client.beta.messages.tool_runner(
        model=MODEL, max_tokens=64, tools=[tool], messages=ASK, stream=stream
    )
    return runner.until_done()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_a_raised_fault_is_fed_back_and_the_model_calls_again(
    http_faults: Any, anthropic_client: Any, trace: af.Trace, stream: bool
) -> None:
    calls: list[str] = []
    http_faults.script(
        "anthropic",
        [
            call_tool("get_weather", city="Paris"),
            call_tool("get_weather", city="Paris"),
            say("Sunny."),
        ],
    )
    final = run_sync(anthropic_client, make_tools(calls)[0], stream=stream)
    assert final.content[0].text == "Sunny."
    assert calls == ["Paris"]  # the faulted attempt never reached the tool
    first, second = tool_results(http_faults)
    assert first["is_error"] is True
    assert "reset" in json.dumps(first["content"])
    assert second["content"] == "Sunny in Paris"
    assert "is_error" not in second
    trace.assert_sequence(["tool.fault", "tool.retry", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"anthropic"}
    assert trace.tool_attempts("get_weather") == 2
    assert trace.retries("get_weather") == 1
    assert trace.of("tool.retry")[0].by == "model"  # the model asked again
    trace.assert_resilient()


@pytest.mark.inject_fault(
    tool="get_weather", returns=af.ToolFailure(error="city not found", recommendations=["ask"])
)
def test_a_tool_failure_is_the_sdks_tool_error(
    http_faults: Any, anthropic_client: Any, trace: af.Trace
) -> None:
    calls: list[str] = []
    http_faults.script("anthropic", [call_tool("get_weather", city="Paris"), say("Sorry.")])
    run_sync(anthropic_client, make_tools(calls)[0])
    assert calls == []
    (result,) = tool_results(http_faults)
    assert result["is_error"] is True
    assert "city not found" in json.dumps(result["content"])
    assert "ask" in json.dumps(result["content"])
    assert trace.count("tool.fault") == 1


@pytest.mark.inject_fault(tool="get_weather", returns="Snow in Paris")
def test_a_returned_value_is_the_tools_result(http_faults: Any, anthropic_client: Any) -> None:
    calls: list[str] = []
    http_faults.script("anthropic", [call_tool("get_weather", city="Paris"), say("Snow.")])
    run_sync(anthropic_client, make_tools(calls)[0])
    assert calls == []
    assert tool_results(http_faults)[0]["content"] == "Snow in Paris"


@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="get_weather_async", raises=TimeoutError("slow"), times=1)
async def test_the_async_runner_and_an_async_tool(
    http_faults: Any, async_anthropic_client: Any, trace: af.Trace
) -> None:
    calls: list[str] = []
    http_faults.script(
        "anthropic",
        [
            call_tool("get_weather_async", city="Paris"),
            call_tool("get_weather_async", city="Paris"),
            say("Sunny."),
        ],
    )
    runner = async_anthropic_client.beta.messages.tool_runner(
        model=MODEL, max_tokens=64, tools=[make_tools(calls)[1]], messages=ASK
    )
    final = await runner.until_done()
    assert final.content[0].text == "Sunny."
    assert calls == ["Paris"]
    trace.assert_sequence(["tool.fault", "tool.retry", "tool.result"])
    assert {e.framework for e in trace.of("tool.*")} == {"anthropic"}


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_a_tool_called_by_hand_is_faulted_too(trace: af.Trace) -> None:
    # a loop of the user's own, reading the model's tool_use blocks and calling the tool
    calls: list[str] = []
    tool = make_tools(calls)[0]
    with pytest.raises(ConnectionError, match="reset"):
        tool.call({"city": "Paris"})
    assert tool.call({"city": "Paris"}) == "Sunny in Paris"
    assert calls == ["Paris"]
    assert [e.type for e in trace.of("tool.*")] == [
        "tool.call",
        "tool.fault",
        "tool.error",
        "tool.retry",
        "tool.call",
        "tool.result",
    ]


@pytest.mark.inject_fault(tool="get_weather", raises=ConnectionError("reset"), times=1)
def test_arguments_the_sdk_refuses_take_no_fault(trace: af.Trace) -> None:
    calls: list[str] = []
    tool = make_tools(calls)[0]
    with pytest.raises(ValueError, match="Invalid arguments"):
        tool.call({"town": "Paris"})  # refused before the tool runs: not an occurrence
    with pytest.raises(ConnectionError, match="reset"):
        tool.call({"city": "Paris"})
    assert calls == []


@pytest.mark.inject_fault(tool="get_weather", raises=ToolError("down for maintenance"))
def test_the_sdks_own_tool_error_as_the_fault(http_faults: Any, anthropic_client: Any) -> None:
    http_faults.script("anthropic", [call_tool("get_weather", city="Paris"), say("Later.")])
    run_sync(anthropic_client, make_tools([])[0])
    (result,) = tool_results(http_faults)
    assert (result["is_error"], result["content"]) == (True, "down for maintenance")


def test_without_a_fault_the_tools_run_untouched(
    http_faults: Any, anthropic_client: Any, trace: af.Trace
) -> None:
    calls: list[str] = []
    http_faults.script("anthropic", [call_tool("get_weather", city="Paris"), say("Sunny.")])
    run_sync(anthropic_client, make_tools(calls)[0])
    assert calls == ["Paris"]
    assert [e.type for e in trace.of("tool.*")] == ["tool.call", "tool.result"]


def test_a_fault_the_runner_never_meets_fails_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it="""
        import anthropic
        import pytest
        from anthropic import beta_tool

        @beta_tool
        def get_weather(city: str) -> str:
            \"\"\"The weather.\"\"\"
            return "Sunny"

        @pytest.mark.inject_fault(tool="get_wether", raises=ConnectionError("reset"))
        def test_typo():
            assert get_weather.call({"city": "Paris"}) == "Sunny"
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*get_wether*never fired*", "*get_weather*"])


def test_the_adapter_is_registered_and_loads_with_anthropic() -> None:
    from pytest_agentfaults._plugin_adapters import adapters_header
    from pytest_agentfaults.testing._frameworks import ADAPTERS, FRAMEWORK_OF

    assert ADAPTERS["anthropic"].endswith("._frameworks.anthropic:install")
    assert FRAMEWORK_OF["anthropic"] == "anthropic"
    assert f"anthropic {anthropic.__version__}" in (adapters_header() or "")
