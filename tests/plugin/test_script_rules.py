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
    CALLS.clear()  # the inner tests may run in any order
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


def test_a_malformed_marker_keeps_the_llm_server_step_it_answers_before(suite):
    # The same rule as in-process and as the transient kinds: the fault answers the model
    # call in the client's place, before any request, and the server's step stays for the
    # next call. So fetch's step is served and the tool runs: the fault ate no step.
    result = suite("""
@pytest.mark.inject_fault(llm="malformed_tool_args")
def test_over_the_wire(llm_server, trace):
    CALLS.clear()
    script = llm_server.script([call_tool("fetch", url="u"), say("done")])
    with af.OpenAIModel("m", base_url=llm_server.base_url("openai"),
                        api_key="sk-key-0123456789") as model:
        result = af.Agent("bot", model=model, tools=[fetch]).run("go")
    assert result.output == "done"
    assert len(llm_server.requests) == 2  # the faulted call sent none
    assert script.remaining == 0
    assert trace.count("llm.fault") == 1
    assert trace.count("tool.result") == 1 and CALLS == ["u"]

@pytest.mark.asyncio
@pytest.mark.inject_fault(llm="malformed_tool_args")
async def test_over_the_wire_async(llm_server, trace):
    CALLS.clear()
    script = llm_server.script([call_tool("fetch", url="u"), say("done")])
    async with af.OpenAIModel("m", base_url=llm_server.base_url("openai"),
                              api_key="sk-key-0123456789") as model:
        result = await af.Agent("bot", model=model, tools=[fetch]).arun("go")
    assert result.output == "done"
    assert (len(llm_server.requests), script.remaining, CALLS) == (2, 0, ["u"])

@pytest.mark.inject_fault(llm="malformed_tool_args")
def test_in_process(trace):
    CALLS.clear()
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    assert af.Agent("bot", model=model, tools=[fetch]).run("go").output == "done"
    assert len(model.requests) == 3
    assert trace.count("tool.result") == 1 and CALLS == ["u"]
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


# ------------------------------------------------------------ leftover steps fail the test


def test_a_leftover_step_fails_the_test_at_teardown_naming_it(suite):
    result = suite("""
def test_it():
    model = ScriptedModel([call_tool("fetch", url="u"), say("done"), say("never asked")])
    assert af.Agent("bot", model=model, tools=[fetch]).run("go").output == "done"
""").runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_it*",
            "*ScriptedModel 'scripted' has 1 step left over: step 3 of 3: say('never asked').*",
        ]
    )
    assert (
        "or pass strict=False where the model is built "
        "(ScriptedModel(..., strict=False), or scripted_model([...], strict=False)) "
        "to allow leftovers."
    ) in result.stdout.str()


def test_a_leftover_step_of_the_fixtures_model_names_the_fixture_too(suite):
    result = suite("""
def test_it(scripted_model):
    model = scripted_model([say("done"), say("extra")])
    assert af.Agent("bot", model=model).run("go").output == "done"
""").runpytest()
    result.assert_outcomes(passed=1, errors=1)
    assert "scripted_model([...], strict=False)" in result.stdout.str()


def test_a_model_built_in_an_async_test_or_a_fixture_is_checked_too(suite):
    result = suite("""
@pytest.fixture
def model():
    return ScriptedModel([say("done"), say("spare")], name="from_fixture")

@pytest.mark.asyncio
async def test_async():
    model = ScriptedModel([say("done"), say("spare")], name="async")
    assert (await af.Agent("bot", model=model).arun("go")).output == "done"

def test_fixture(model):
    assert af.Agent("bot", model=model).run("go").output == "done"
""").runpytest()
    result.assert_outcomes(passed=2, errors=2)
    result.stdout.fnmatch_lines_random(
        [
            "*ScriptedModel 'async' has 1 step left over: step 2 of 2: say('spare')*",
            "*ScriptedModel 'from_fixture' has 1 step left over: step 2 of 2: say('spare')*",
        ]
    )


def test_strict_false_and_repeat_last_allow_leftovers(suite):
    result = suite("""
def test_strict_false(scripted_model):
    model = scripted_model([say("done"), say("spare")], strict=False)
    assert af.Agent("bot", model=model).run("go").output == "done"

def test_repeat_last():
    model = ScriptedModel([say("done"), say("again")], on_exhausted="repeat_last")
    assert af.Agent("bot", model=model).run("go").output == "done"

def test_from_function():
    model = ScriptedModel.from_function(lambda request: say("done"))
    assert af.Agent("bot", model=model).run("go").output == "done"

def test_all_used(scripted_model):
    model = scripted_model([call_tool("fetch", url="u"), say("done")])
    assert af.Agent("bot", model=model, tools=[fetch]).run("go").output == "done"
""").runpytest()
    result.assert_outcomes(passed=4)


def test_a_failed_test_reports_only_its_own_failure(suite):
    result = suite("""
def test_it():
    model = ScriptedModel([say("done"), say("spare")])
    af.Agent("bot", model=model).run("go")
    assert 1 == 2, "the test's own failure"
""").runpytest()
    # the strict checks run only for a test whose call passed: the leftover is a
    # consequence of the failure, and would only bury it
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["FAILED test_suite.py::test_it - AssertionError: the test's own failure*"]
    )
    assert "say('spare')" not in result.stdout.str()


def test_leftovers_and_an_unfired_fault_are_reported_together(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="search", raises=ConnectionError("x"))
def test_it():
    ScriptedModel([say("a")], name="first")
    ScriptedModel([say("b"), say("c")], name="second")
""").runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*fault on tool 'search' never fired*",
            "*ScriptedModel 'first' has 1 step left over: step 1 of 1: say('a')*",
            "*ScriptedModel 'second' has 2 steps left over: step 1 of 2: say('b')*",
        ]
    )


def test_a_leftover_llm_server_step_fails_the_test(suite):
    result = suite("""
import httpx

def test_leftover(llm_server):
    llm_server.script([say("one"), say("two")])
    httpx.post(llm_server.base_url("ollama") + "/api/chat", json={"stream": False})

def test_allowed(llm_server):
    llm_server.script([say("one"), say("two")], strict=False)
    httpx.post(llm_server.base_url("ollama") + "/api/chat", json={"stream": False})
""").runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leftover*",
            "*llm_server: the script has 1 step left over: step 2 of 2: say('two')."
            "*or pass llm_server.script(..., strict=False) to allow leftovers.",
        ]
    )


def test_a_failed_test_reports_no_llm_server_or_script_route_leftovers(suite):
    result = suite("""
import openai

ASK = dict(model="m", messages=[{"role": "user", "content": "hi"}])

def test_over_the_server(llm_server):
    llm_server.script([say("one"), say("two")])
    with openai.OpenAI(base_url=llm_server.base_url("openai"), api_key="k") as client:
        client.chat.completions.create(**ASK)
    assert 1 == 2, "the server test's own failure"

def test_over_a_script_route(http_faults, openai_client):
    http_faults.script("openai", [say("one"), say("two")])
    openai_client.chat.completions.create(**ASK)
    assert 1 == 2, "the route test's own failure"
""").runpytest()
    # as for a ScriptedModel: the leftover step is a consequence of the failure
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines_random(
        [
            # short enough for an 80-column summary line (outside CI pytest cuts it there)
            "FAILED test_suite.py::test_over_the_server - AssertionError: the server*",
            "FAILED test_suite.py::test_over_a_script_route - AssertionError: the*",
        ]
    )
    assert "say('two')" not in result.stdout.str()
