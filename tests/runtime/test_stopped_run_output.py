"""A run that stops before a final answer: what it returns and what its trace says.

Models often talk while they call a tool ("Let me look that up."). When a budget or a
cancel token stops the run there, a plain-text agent answers with those last words; a
structured one has no output (a half answer is not an `output_type`). The trace says why
the run stopped, with the limit and its value.
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
)


class TalkingModel:
    """A model that says a sentence alongside each tool call, then answers ``final``."""

    name = "talker"

    def __init__(self, sentences: list[str], final: str = "done") -> None:
        self.sentences = list(sentences)
        self.final = final
        self.requests: list[ModelRequest] = []

    def request(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        n = len(self.requests)
        if n > len(self.sentences):
            return ModelResponse(message=Message.assistant(self.final), finish_reason="stop")
        call = ToolCall(id=f"call_{n}", name="lookup", arguments='{"city": "Paris"}')
        return ModelResponse(
            message=Message.assistant(self.sentences[n - 1], [call]), finish_reason="tool_calls"
        )

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        return self.request(request)


@af.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 21C"


class Weather(BaseModel):
    city: str
    celsius: int


def agent_with(model, **kwargs):
    return af.Agent("bot", model=model, tools=[lookup], clock=af.VirtualClock(), **kwargs)


def test_a_run_out_of_turns_answers_with_the_model_s_last_words():
    model = TalkingModel(["Let me look that up.", "Checking once more."])
    result = agent_with(model, budget=af.Budget(max_turns=2)).run("weather?")
    assert result.status == "max_iterations"
    assert result.output == "Checking once more."
    assert result.trace.of("run.end")[-1].detail == "Checking once more."


def test_a_structured_run_out_of_turns_has_no_output_whatever_the_model_said():
    model = TalkingModel(["Let me look that up."])
    result = agent_with(model, output_type=Weather, budget=af.Budget(max_turns=1)).run("x")
    assert result.status == "max_iterations"
    assert result.output is None
    end = result.trace.of("run.end")[-1]
    assert (end.status, end.detail) == ("max_iterations", None)


def test_the_budget_event_names_the_limit_its_value_and_why():
    model = TalkingModel(["one", "two", "three"])
    result = agent_with(model, budget=af.Budget(max_turns=2)).run("x")
    (event,) = result.trace.of("budget.exceeded")
    assert event.status == "max_turns"
    assert event.detail == "2"
    assert event.reason == "budget max_turns=2 reached"


def test_a_tool_call_budget_counts_every_single_call_turn():
    model = TalkingModel(["a", "b", "c"])
    result = agent_with(model, budget=af.Budget(max_tool_calls=2)).run("x")
    assert result.usage.tool_calls == 2
    assert [e.type for e in result.trace.events].count("tool.call") == 2
    (event,) = result.trace.of("budget.exceeded")
    assert (event.status, event.detail) == ("max_tool_calls", "2")
    assert result.output == "c"


def test_a_run_cancelled_after_the_model_spoke_answers_with_its_words():
    token = af.CancelToken()

    def stop_after_the_tool(event):
        if event.type == "tool.result":
            token.cancel("user pressed stop")

    model = TalkingModel(["Let me look that up."])
    agent = agent_with(model, observer=stop_after_the_tool)
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert result.output == "Let me look that up."


def test_the_model_is_told_which_tool_each_result_comes_from():
    model = TalkingModel(["Looking."])
    result = agent_with(model).run("x")
    assert result.output == "done"
    fed_back = model.requests[1].messages[-1]
    assert (fed_back.role, fed_back.name, fed_back.tool_call_id) == ("tool", "lookup", "call_1")
    assert fed_back.content == "Paris: 21C"


def test_a_run_ending_without_output_shows_no_output_in_its_trace():
    model = ScriptedModel([say("not json")], on_exhausted="repeat_last")
    config = af.ResilienceConfig(max_retries=0)
    result = agent_with(model, output_type=Weather, resilience=config).run("x")
    assert result.status == "max_iterations"
    assert result.trace.of("run.end")[-1].detail is None


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_run_stopped_by_the_user_or_an_exit_is_traced_then_reraised(stop):
    @af.tool
    def lookup(city: str) -> str:  # the same name the model calls
        """Interrupted."""
        raise stop

    events: list[af.Event] = []
    agent = af.Agent(
        "bot",
        model=TalkingModel(["Looking."]),
        tools=[lookup],
        clock=af.VirtualClock(),
        observer=events.append,
    )
    with pytest.raises(stop):
        agent.run("x")
    end = events[-1]
    assert end.type == "run.end"
    cancelled = [e for e in events if e.type == "run.cancelled"]
    if stop is KeyboardInterrupt:
        assert [e.reason for e in cancelled] == ["KeyboardInterrupt"]
        assert end.status == "cancelled"
    else:
        assert cancelled == []
        assert end.status == "error"
        assert end.error is not None
        assert end.error.type == "SystemExit"


def test_cancelling_a_run_stops_its_llm_fixer_too():
    token = af.CancelToken()
    noted: list[str] = []

    @af.tool
    def note(text: str) -> str:
        """Take a note."""
        noted.append(text)
        return "noted"

    def stop_when_the_fixer_answers(event):
        if event.type == "llm.response":
            token.cancel("user pressed stop")

    fixer = af.Agent(
        "fixer",
        model=ScriptedModel(
            [call_tool("note", text="thinking"), say('{"city": "Paris"}')], strict=False
        ),
        tools=[note],
        observer=stop_when_the_fixer_answers,
    )

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def lookup(city: str) -> str:
        """Look a city up."""
        raise ValueError("unknown city")

    agent = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("lookup", city="Pariss")], strict=False),
        tools=[lookup],
        clock=af.VirtualClock(),
    )
    result = agent.run("x", cancel=token)
    assert result.status == "cancelled"
    assert noted == []
