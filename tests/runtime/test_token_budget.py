"""Token budgets: `af.Budget(max_input_tokens=, max_output_tokens=, max_total_tokens=)`."""

from __future__ import annotations

import httpx
import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, call_tools, say


@af.tool
def lookup(city: str) -> str:
    """The weather in ``city``."""
    return "sunny"


def usage(input_tokens: int, output_tokens: int) -> af.TokenUsage:
    return af.TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens)


def agent_with(steps, budget):
    return af.Agent(
        "bot",
        model=ScriptedModel(steps),
        tools=[lookup],
        budget=budget,
        clock=af.VirtualClock(),
    )


def test_scripted_steps_can_declare_their_usage():
    steps = [
        call_tool("lookup", city="Paris").with_usage(input_tokens=100, output_tokens=10),
        say("sunny", usage={"input_tokens": 150, "output_tokens": 5}),
    ]
    result = agent_with(steps, af.Budget()).run("x")
    assert result.status == "ok"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 15)


@pytest.mark.parametrize(
    ("budget", "limit"),
    [
        (af.Budget(max_input_tokens=200), "max_input_tokens"),
        (af.Budget(max_output_tokens=15), "max_output_tokens"),
        (af.Budget(max_total_tokens=230), "max_total_tokens"),
    ],
    ids=["input", "output", "total"],
)
def test_a_token_budget_ends_the_run_softly_with_budget_exceeded(budget, limit):
    steps = [
        call_tool("lookup", city="Paris").with_usage(input_tokens=100, output_tokens=10),
        call_tool("lookup", city="Rome").with_usage(input_tokens=120, output_tokens=10),
    ]  # a third call would run out of script
    model_steps = ScriptedModel(steps)
    agent = af.Agent(
        "bot", model=model_steps, tools=[lookup], budget=budget, clock=af.VirtualClock()
    )
    result = agent.run("x")
    assert result.status == "budget_exceeded"
    assert not result.ok
    assert len(model_steps.requests) == 2  # stopped as soon as the second answer crossed it
    (event,) = result.trace.of("budget.exceeded")
    assert event.status == limit
    assert limit in event.reason
    assert result.trace.of("run.end")[-1].status == "budget_exceeded"


def test_a_budget_reached_exactly_stops_before_the_next_call():
    steps = [
        call_tool("lookup", city="Paris").with_usage(input_tokens=100, output_tokens=10),
    ]  # a second call would run out of script
    model = ScriptedModel(steps)
    agent = af.Agent("bot", model=model, tools=[lookup], budget=af.Budget(max_total_tokens=110))
    result = agent.run("x")
    assert result.status == "budget_exceeded"
    assert len(model.requests) == 1


def test_under_budget_the_run_is_ok():
    steps = [
        call_tools([("lookup", {"city": "a"})]).with_usage(10, 10),
        say("done").with_usage(10, 10),
    ]
    result = agent_with(steps, af.Budget(max_total_tokens=41)).run("x")
    assert result.status == "ok"
    assert result.output == "done"


def test_the_other_budgets_keep_their_status():
    steps = [call_tool("lookup", city="a")]  # max_turns=1: one call
    assert agent_with(steps, af.Budget(max_turns=1)).run("x").status == "max_iterations"


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100"])
def test_token_caps_are_checked(bad):
    with pytest.raises(af.UsageError, match="max_total_tokens"):
        af.Budget(max_total_tokens=bad)


def test_bad_declared_usage_is_a_usage_error():
    with pytest.raises(af.UsageError, match="usage"):
        say("x", usage={"input_tokens": -1})
    with pytest.raises(af.UsageError, match="usage"):
        say("x").with_usage(input_tokens="many")


@pytest.mark.asyncio
async def test_arun_counts_the_same():
    steps = [call_tool("lookup", city="a").with_usage(500, 1)]
    result = await agent_with(steps, af.Budget(max_input_tokens=100)).arun("x")
    assert result.status == "budget_exceeded"


def test_the_usage_an_http_client_reports_is_counted(respx_mock):
    url = "https://api.openai.com/v1/chat/completions"
    respx_mock.post(url).mock(
        return_value=httpx.Response(
            200,
            json={
                "choices": [
                    {"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 900, "completion_tokens": 50},
            },
        )
    )
    with af.OpenAIModel("gpt-4o-mini", api_key="sk-test-budget-0123456789") as model:
        agent = af.Agent("bot", model=model, budget=af.Budget(max_total_tokens=500))
        result = agent.run("x")
    assert result.status == "budget_exceeded"
    assert result.usage.input_tokens == 900
    assert result.trace.of("budget.exceeded")[0].status == "max_total_tokens"
