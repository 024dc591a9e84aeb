"""``llm=`` faults with ``agent="name"`` hit only that agent's model calls (our runtime)."""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing.faults import parse_marker


def fixed_run(scope: af.FaultScope) -> af.RunResult:
    """A bot whose tool fails on bad JSON; a fixer agent (with its own model) repairs it."""
    fixer = af.Agent("fixer", model=ScriptedModel([say('{"text": "{}"}')]))

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def count_keys(text: str) -> int:
        """Count the keys of a JSON object."""
        return len(json.loads(text))

    bot = af.Agent(
        "bot",
        model=ScriptedModel([call_tool("count_keys", text="oops"), say("0 keys")]),
        tools=[count_keys],
    )
    return bot.run("count")


@pytest.mark.parametrize("kind", ["rate_limit", "server_error"])
def test_only_the_fixers_model_call_is_hit(kind: str) -> None:
    with af.fault_scope() as scope:
        scope.faults.add(parse_marker((), {"llm": kind, "agent": "fixer"}))
        result = fixed_run(scope)
    assert result.output == "0 keys"  # the bot's own model calls were left alone
    assert [e.agent for e in scope.trace.of("llm.fault")] == ["fixer"]
    assert [e.agent for e in scope.trace.of("llm.error")] == ["fixer"]
    assert scope.trace.of("fixer.result")[0].status == "error"
    assert len(scope.faults.fired) == 1


def test_the_fluent_form_and_an_agent_that_never_calls_its_model() -> None:
    never = "llm 'timeout' of agent 'nobody' never fired"
    with pytest.raises(AssertionError, match=never), af.fault_scope() as scope:  # noqa: PT012
        scope.faults.llm.timeout().agent("nobody")
        fixed_run(scope)
    assert scope.trace.count("llm.fault") == 0


def test_an_untargeted_fault_counts_the_calls_no_targeted_fault_answered() -> None:
    with af.fault_scope() as scope, pytest.raises(af.RateLimitError):  # noqa: PT012
        scope.faults.llm.rate_limit().agent("fixer")
        scope.faults.llm.rate_limit().at(2)  # bot 1, (fixer 1: answered above), bot 2
        fixed_run(scope)
    assert [e.agent for e in scope.trace.of("llm.fault")] == ["fixer", "bot"]


@pytest.mark.parametrize("agent", ["", 3, None])
def test_agent_must_be_a_name(agent: object) -> None:
    if agent is None:
        assert parse_marker((), {"llm": "timeout", "agent": None}).agent is None
        return
    with pytest.raises(UsageError, match="agent= must be an agent's name"):
        parse_marker((), {"llm": "timeout", "agent": agent})


def test_agent_is_only_for_llm_faults() -> None:
    with pytest.raises(UsageError, match="unknown key 'agent' for a tool fault"):
        parse_marker((), {"tool": "fetch", "raises": ValueError, "agent": "fixer"})
