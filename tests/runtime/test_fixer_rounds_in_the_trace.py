"""What the trace and the model say about fixer rounds.

Each ``fixer.call`` event numbers its round and carries the failure the fixer was given;
when a fixer gives up (it returns the arguments unchanged), the model's payload still
counts the tool attempts that ran.
"""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


def _parse_tool(on_error: af.OnError) -> af.Tool:
    @af.tool(on_error=on_error)
    def parse(text: str) -> int:
        """Parse a number."""
        return int(text)

    return parse


def _run(tool: af.Tool) -> af.RunResult:
    model = ScriptedModel([call_tool("parse", text="seven"), say("done")])
    return af.Agent("bot", model=model, tools=[tool], clock=af.VirtualClock()).run("go")


def test_each_llm_fixer_round_is_numbered_in_its_event():
    fixer_model = ScriptedModel([say('{"text": "7.0"}'), say('{"text": "sept"}')])
    fixer = af.Agent("number-fixer", model=fixer_model)
    result = _run(_parse_tool(af.OnError(execution=af.fix(fixer, retries=2))))
    calls = result.trace.of("fixer.call", tool="parse")
    assert [(e.attempt, e.max_attempts) for e in calls] == [(1, 2), (2, 2)]
    assert [e.attempt for e in result.trace.of("fixer.result", tool="parse")] == [1, 2]


def test_a_function_fixers_event_carries_the_failure_it_was_given():
    fixer = af.Agent.from_function("number-fixer", lambda raw: '{"text": "7"}')
    result = _run(_parse_tool(af.OnError(execution=af.fix(fixer))))
    [call] = result.trace.of("fixer.call", tool="parse")
    assert call.error is not None
    assert call.error.type == "ValueError"
    assert "invalid literal for int()" in call.error.message
    assert next(m.content for m in result.messages if m.role == "tool") == "7"


def test_a_fixer_that_gives_up_leaves_the_attempts_count_in_the_models_payload():
    fixer = af.Agent.from_function("number-fixer", lambda raw: raw)  # unchanged
    result = _run(_parse_tool(af.OnError(execution=af.fix(fixer, retries=3))))
    assert result.trace.of("fixer.result")[0].status == "unchanged"
    payload = json.loads(next(m.content for m in result.messages if m.role == "tool"))
    assert payload["attempts"] == 1
    assert payload["tool"] == "parse"
