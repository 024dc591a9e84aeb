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
            model = ScriptedModel([call_tool("search", query="x"), say("done")])
            af.Agent("bot", model=model, tools=[search]).run("go")  # every step used
            feedback = model.requests[1].messages[-1].content
            assert '{\\\\"query\\\\": 42' in feedback or '{"query": 42' in feedback
            assert trace.count("tool.error") == 1
            assert trace.count("tool.result", tool="search") == 1
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


@af.tool
def fetch(url: str) -> str:
    """Fetch."""
    return "page"


def test_name_chooses_the_tool_the_broken_call_goes_to_not_the_first_on_offer():
    # Without name=, the broken call goes to search, the first tool on offer: a test of
    # fetch's invalid arguments (what fault coverage suggests) would never reach fetch.
    with af.fault_scope() as scope:
        scope.faults.llm.malformed("tool_args", name="fetch")
        model = ScriptedModel([call_tool("search", query="x"), say("done")])
        af.Agent("bot", model=model, tools=[search, fetch]).run("go")
    assert scope.trace.count("tool.error", tool="search") == 0
    error = scope.trace.of("tool.error", tool="fetch")[0].error
    assert error is not None
    assert error.type == "InvalidArgsError"


def test_the_marker_takes_name_and_checks_it_at_setup(pytester):
    pytester.makepyfile(
        """
        import pytest
        import pytest_agentfaults as af
        from pytest_agentfaults import ScriptedModel, call_tool, say

        @af.tool
        def search(query: str) -> str:
            '''Search.'''
            return "found"

        @af.tool
        def fetch(url: str) -> str:
            '''Fetch.'''
            return "page"

        @pytest.mark.inject_fault(llm="malformed_tool_args", name="fetch", args='{"url": ')
        def test_it(trace):
            model = ScriptedModel([call_tool("search", query="x"), say("done")])
            af.Agent("bot", model=model, tools=[search, fetch]).run("go")
            assert [e.tool for e in trace.of("tool.error")] == ["fetch"]
            assert trace.of("tool.call", tool="fetch") == []  # refused before it ran

        @pytest.mark.inject_fault(llm="malformed_tool_args", name=3)
        def test_bad_name():
            pass
        """
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*UsageError*name=3*tool must be a tool name, got 3*"])


def test_a_name_the_agent_does_not_offer_fails_the_test_naming_the_fix(pytester):
    # Before, the misspelt name made an unknown tool's call: the test passed on that path
    pytester.makepyfile(
        """
        import pytest
        import pytest_agentfaults as af
        from pytest_agentfaults import ScriptedModel, call_tool, say

        @af.tool
        def fetch(url: str) -> str:
            '''Fetch.'''
            return "page"

        def retry(exc, attempt):
            return af.LlmErrorDecision.retry(max_attempts=3)

        @pytest.mark.inject_fault(llm="malformed_tool_args", name="fecth")
        def test_it():
            model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
            af.Agent("bot", model=model, tools=[fetch], on_llm_error=retry).run("go")
        """
    )
    result = pytester.runpytest(
        "-p", "no:randomly", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*UsageError: *the request offers no tool 'fecth'; did you mean 'fetch'?*",
            "*from @pytest.mark.inject_fault(llm='malformed_tool_args', name='fecth'): "
            "fix the fault as the error says*",
        ]
    )
    result.stdout.no_fnmatch_line("*give it on_llm_error*")
