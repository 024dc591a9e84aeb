"""`llm="malformed_tool_args"` sends a fixed broken text by default; `args=` chooses it."""

from __future__ import annotations

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


@af.tool
def search(query: str) -> str:
    """Search."""
    return f"results for {query}"


def test_the_default_text_is_the_documented_one():
    with af.fault_scope() as scope:
        scope.faults.llm.malformed("tool_args")
        model = ScriptedModel([call_tool("search", query="x"), say("done")])
        agent = af.Agent("bot", model=model, tools=[search])
        agent.run("go")
    error = scope.trace.of("tool.error", tool="search")[0].error
    assert error is not None
    assert error.kind == "validation"
    assert error.message.endswith('(got {"arguments": )')


def test_args_chooses_the_text_the_model_sends(pytester):
    pytester.makepyfile(
        """
        import pytest
        import pytest_agentfaults as af
        from pytest_agentfaults import ScriptedModel, call_tool, say

        @af.tool
        def search(query: str) -> str:
            '''Search.'''
            return "found"

        @pytest.mark.inject_fault(llm="malformed_tool_args", args='{"query": 42')
        def test_it(trace):
            model = ScriptedModel([say("first"), call_tool("search", query="x"), say("done")])
            af.Agent("bot", model=model, tools=[search]).run("go")
            feedback = model.requests[1].messages[-1].content
            assert '{\\\\"query\\\\": 42' in feedback or '{"query": 42' in feedback
            assert trace.count("tool.error") == 1
        """
    )
    pytester.runpytest(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    ).assert_outcomes(passed=1)


def test_args_must_be_text(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.inject_fault(llm="malformed_tool_args", args={"query": 1})
        def test_it(faults):
            pass
        """
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*args= is the raw arguments text the model sends, a str*"])


def test_args_applies_only_to_malformed_tool_args(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.inject_fault(llm="empty", args="{")
        def test_it(faults):
            pass
        """
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*args= does not apply to llm='empty'*"])
