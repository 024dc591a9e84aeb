"""Failure output shows the user's code, not ours (issue 21, item 3): a strict fault that
never fired is a short message naming the fault as written, what happened, and the fix."""

from __future__ import annotations

import pytest

PLUGIN_SOURCE = (
    "pytest_runtest_teardown",
    "state.plan.check()",
    "plugin.py",
    "faults.py",
    "def check(",
    "def assert_sequence(",
    "def check_schedule(",
    "raise AssertionError",
)


def _assert_no_kit_source(out: str) -> None:
    for line in PLUGIN_SOURCE:
        assert line not in out, line


@pytest.mark.parametrize("tb", ["auto", "long", "native"])
def test_an_unfired_marker_fault_is_three_lines_in_every_tb_style(suite, tb):
    result = suite("""
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("reset"))
def test_typo():
    assert make().run("go").output == "done"
""").runpytest(f"--tb={tb}")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "fault on tool 'search' never fired: "
            "@pytest.mark.inject_fault(tool='search', raises=ConnectionError('reset'))",
            "  what happened: search was called 0 times; the tools called were fetch",
            "  fix: name a tool the agent calls (tool='...' is the tool's name), "
            "or add strict=False if the fault may go unused",
        ]
    )
    _assert_no_kit_source(result.stdout.str())


def test_a_fluent_fault_is_named_as_called_and_its_at_explained(suite):
    result = suite("""
def test_late(faults):
    faults.tool("fetch").raises(ConnectionError("x")).at(5)
    assert make().run("go").output == "done"
""").runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "fault on tool 'fetch' never fired: "
            "faults.tool('fetch').raises(ConnectionError('x')).at(5)",
            "  what happened: fetch was called 1 time, and the fault waits for call 5 (at=5)",
            "  fix: lower at= (at=1 is the first call), or add .strict(False) *",
        ]
    )


def test_the_agent_never_called_a_tool(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("x"))
def test_talks_only():
    assert make([say("hi")]).run("go").output == "hi"
""").runpytest()
    result.stdout.fnmatch_lines(
        ["  what happened: fetch was called 0 times: the agent never called a tool"]
    )


def test_an_llm_fault_without_model_calls_and_a_probabilistic_miss(suite):
    result = suite("""
@pytest.mark.inject_fault(llm="rate_limit")
def test_no_agent():
    pass

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("x"), probability=0.000001)
def test_unlucky():
    make().run("go")

@pytest.mark.inject_fault(http=503)
def test_no_http():
    make().run("go")
""").runpytest()
    result.assert_outcomes(passed=3, errors=3)
    result.stdout.fnmatch_lines_random(
        [
            "  what happened: no af.Agent model call was seen (llm= faults act on af.Agent's *",
            "  what happened: fetch was called 1 time; the fault was drawn with "
            "probability=1e-06 and missed it",
            "  fix: raise probability=, or replay with another --agentfaults-seed, *",
            "  what happened: the test made no HTTP request",
        ]
    )
    _assert_no_kit_source(result.stdout.str())


def test_earlier_faults_that_take_every_call_are_named(suite):
    result = suite("""
def test_second(faults):
    faults.tool("fetch").raises(ConnectionError("x"))
    faults.tool("fetch").raises(TimeoutError("y")).times(9)
    make(resilience=af.ResilienceConfig(max_retries=0)).run("go")
""").runpytest()
    result.stdout.fnmatch_lines(
        [
            "*what happened: fetch was called 1 time; the faults declared before it on tool "
            "'fetch' took all of them"
        ]
    )


def test_trace_assertions_and_schedule_checks_point_at_the_test(suite):
    result = suite("""
def test_sequence(trace):
    make().run("go")
    trace.assert_sequence("tool.call:fetch", "tool.retry:fetch")

def test_schedule():
    af.check_schedule(af.ResilienceConfig(max_retries=2), [1.0])
""").runpytest()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "trace does not contain the expected sequence" in out
    assert "schedule violates 'count'" in out
    assert out.count("test_suite.py:") >= 2  # each failure points at the test's line
    _assert_no_kit_source(out)


def test_scripted_model_frames_are_hidden_when_the_script_runs_out_or_fails(suite):
    result = suite("""
def test_runs_out():
    make([call_tool("fetch", url="u")]).run("go")

def test_model_fails():
    from pytest_agentfaults import fail

    make([fail.http(500)]).run("go")
""").runpytest()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "ScriptExhaustedError: ScriptedModel 'scripted' has no step for call 2" in out
    for source in ("def _next_step(", "def request(", "def respond(", "testing/scripted.py:"):
        assert source not in out, source


@pytest.mark.parametrize("tb", ["auto", "short"])
def test_a_bad_marker_fails_setup_with_its_message_and_no_parser_source(suite, tb):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), tims=2)
def test_typo_kwarg():
    make().run("go")

@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=0)
def test_bad_value():
    make().run("go")

@pytest.mark.inject_fault(function="os.path.join", raises=OSError("x"))
def test_bad_path():
    pass
""").runpytest(f"--tb={tb}")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    assert "tims" in out
    assert "times= must be an int >= 1, got 0" in out
    assert "os.path.join" in out
    for source in (
        "def parse_marker(",
        "def parsed(",
        "def _parse_tool(",
        "def positive_int(",
        "def check_path(",
        "_plugin_state.py:",
        "testing/_marker.py:",
        "testing/_builders.py:",
    ):
        assert source not in out, source


def test_an_injected_llm_failure_names_the_marker_and_the_recovery(suite):
    result = suite("""
@pytest.mark.inject_fault(llm="timeout")
def test_timeout():
    make().run("go")

def test_fluent(faults):
    faults.llm.server_error()
    make().run("go")
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E *ModelTimeoutError: scripted model 'scripted' timed out",
            "E *injected by @pytest.mark.inject_fault(llm='timeout'); an Agent rethrows a "
            "model error by default: give it on_llm_error=... to retry "
            "(see docs/howto/llm-errors.md), or expect the error with pytest.raises",
            "E *injected by faults.llm.server_error*on_llm_error=*",
        ]
    )


def test_the_trace_fixture_refuses_a_tool_name_no_agent_of_the_test_had(suite):
    result = suite("""
def test_typo(trace):
    make([say("done")]).run("go")
    assert trace.retries("fetch") == 0  # the agent has it: never called, 0
    assert trace.retries("fethc") == 0
""").runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *UsageError: trace.retries(tool='fethc'): no agent of this trace has a tool "
            "'fethc'; did you mean 'fetch'? (their tools: fetch)"
        ]
    )


def test_async_misuse_says_what_to_write_instead(suite):
    result = suite("""
@pytest.mark.asyncio
async def test_awaited_run():
    await make([say("done")]).run("go")

@pytest.mark.asyncio
async def test_forgot_await():
    result = make([say("done")]).arun("go")
    assert result.output == "done"
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "E *TypeError: agent.run(...) is blocking and has already returned its RunResult: "
            "drop the `await`, or write `await agent.arun(...)`",
            "E *AttributeError: 'coroutine' object has no attribute 'output'",
            "E *agent.arun(...) returns a coroutine: write `result = await agent.arun(...)`*",
        ]
    )
    assert "was never awaited" not in result.stdout.str()
