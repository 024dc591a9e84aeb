"""Scripts tell the truth: a transient llm fault eats no step, leftover steps fail the test."""

from __future__ import annotations

RETRY = """
def retrying(model):
    return af.Agent("bot", model=model, tools=[fetch],
                    on_llm_error=lambda e, a: af.LlmErrorDecision.retry(initial_backoff=1))
"""


# ------------------------------------------------------------ a transient fault eats no step


def test_a_rate_limit_marker_leaves_the_call_tool_step_for_the_retry(suite):
    result = suite(
        RETRY
        + """
@pytest.mark.inject_fault(llm="rate_limit")
def test_it(faults, trace):
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    result = retrying(model).run("go")
    assert result.output == "done"
    assert CALLS == ["u"]                                   # fetch really ran
    assert trace.count("tool.result", tool="fetch") == 1
    trace.assert_sequence("llm.fault", "llm.retry", "tool.result:fetch")
    assert len(model.requests) == 3                         # faulted call, retry, last turn
    assert [f.kind for f in faults.fired] == ["rate_limit"]

@pytest.mark.asyncio
@pytest.mark.inject_fault(llm="timeout")
async def test_async(trace):
    CALLS.clear()
    model = ScriptedModel([call_tool("fetch", url="v"), say("done")])
    result = await retrying(model).arun("go")
    assert result.output == "done"
    assert CALLS == ["v"]
    assert len(model.requests) == 3
"""
    ).runpytest()
    result.assert_outcomes(passed=2)


def test_a_fluent_transient_fault_leaves_the_step_too(suite):
    result = suite(
        RETRY
        + """
def test_it(faults):
    faults.llm.connection().times(2)
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    assert retrying(model).run("go").output == "done"
    assert CALLS == ["u"]
    assert len(model.requests) == 4
"""
    ).runpytest()
    result.assert_outcomes(passed=1)


def test_a_rate_limit_marker_leaves_the_llm_server_step_for_the_retry(suite):
    result = suite(
        RETRY
        + """
@pytest.mark.inject_fault(llm="rate_limit")
def test_it(llm_server, trace, faults):
    script = llm_server.script([call_tool("fetch", url="u"), say("done")])
    with af.OpenAIModel("m", base_url=llm_server.base_url("openai"),
                        api_key="sk-key-0123456789") as model:
        result = retrying(model).run("go")
    assert result.output == "done"
    assert CALLS == ["u"]
    assert trace.count("tool.result", tool="fetch") == 1
    # the fault failed the call in-process, before the wire: the server got 2 requests
    assert len(llm_server.requests) == 2
    assert len(script.requests) == 2
    assert script.remaining == 0
    assert [f.kind for f in faults.fired] == ["rate_limit"]
"""
    ).runpytest()
    result.assert_outcomes(passed=1)
