"""Seed scenario: the JSON analyst (docs/howto/json-analyst.md).

The model sends JSON with unquoted keys; the tool throws; an LLM fixer escalates with the
corrected JSON in its reason; the main model retries with it and answers 3.
"""

from __future__ import annotations

import json

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say

CORRECTED = '{"name": "world", "greeting": "hello", "lang": "en"}'


def build():
    fixer = af.Agent(
        "json-fixer",
        model=ScriptedModel(
            [
                call_tool(
                    "escalate",
                    reason=f"the keys are not quoted; call count_keys with {CORRECTED}",
                    severity="medium",
                )
            ]
        ),
        instructions="Repair JSON. If you cannot repair the call yourself, escalate.",
        builtin_tools=("escalate",),
    )

    @af.tool(on_error=af.OnError(execution=af.fix(fixer)))
    def count_keys(json: str) -> int:
        """Count the top-level keys of a JSON object."""
        import json as _json

        return len(_json.loads(json))

    model = ScriptedModel(
        [
            call_tool("count_keys", json="{name: world, greeting: hello, lang: en}"),
            call_tool("count_keys", json=CORRECTED),
            say("3"),
        ]
    )
    agent = af.Agent("analyst", model=model, tools=[count_keys], clock=af.VirtualClock())
    return agent, model, fixer


def test_the_analyst_recovers_through_the_fixers_escalation_and_answers_3():
    agent, model, fixer = build()
    result = agent.run("How many keys does this object have? {name: world, ...}")

    assert result.output == "3"
    assert result.status == "ok"
    # the escalation reached the main model as the tool result, verbatim
    fed_back = model.requests[1].messages[-1]
    assert fed_back.role == "tool"
    assert fed_back.content == (
        f"ERROR: Tool 'count_keys' failed: the keys are not quoted; call count_keys with {CORRECTED}"
    )
    # the fixer saw the failing input
    (fixer_request,) = fixer.model.requests
    assert "{name: world, greeting: hello, lang: en}" in fixer_request.messages[-1].content
    # and the trace tells the whole story, in order
    result.trace.assert_sequence(
        "tool.call:count_keys",
        "tool.error:count_keys",
        "fixer.call:count_keys",
        "escalation:count_keys",
        "tool.call:count_keys",
        "tool.result:count_keys",
        "run.end",
    )
    assert result.usage.fixer_calls == 1
    assert len(result.trace.escalations()) == 1
    assert result.trace.retries() == 0


def test_the_tool_result_after_recovery_is_the_count():
    agent, _, _ = build()
    result = agent.run("?")
    tool_results = [m.content for m in result.messages if m.role == "tool"]
    assert tool_results[1] == "3"
    assert json.loads(CORRECTED)
