"""The plugin as users meet it: markers and fixtures, driven through pytester."""

from __future__ import annotations

import pytest


def test_markers_are_registered_with_their_signatures(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*inject_fault(tool=None, http=None, llm=None, *", "*real_time*"])


def test_the_marker_help_names_every_target_kind_and_option_the_marker_takes(pytester):
    from pytest_agentfaults.testing._fault import HTTP_KINDS, LLM_FAULT_KINDS
    from pytest_agentfaults.testing._marker import _HTTP_KEYS, _VALID_KEYS

    result = pytester.runpytest("--markers")
    [line] = [line for line in result.stdout.lines if "@pytest.mark.inject_fault(" in line]
    missing = [f"llm={kind!r}" for kind in LLM_FAULT_KINDS if f"'{kind}'" not in line]
    missing += [f"http={kind!r}" for kind in HTTP_KINDS if f"'{kind}'" not in line]
    keys = {key for target in _VALID_KEYS.values() for key in target} | set(_HTTP_KEYS)
    missing += [f"{key}=" for key in sorted(keys) if f"{key}=" not in line]
    assert not missing, f"pytest --markers does not name {missing}:\n{line}"


def test_tool_fault_raises_then_the_agent_recovers(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
def test_it(faults, trace):
    result = make().run("go")
    assert result.output == "done"
    assert result.trace.retries("fetch") == 2
    assert [f.target for f in faults.fired] == ["tool", "tool"]
    assert trace.count("tool.fault", tool="fetch") == 2
    assert len(CALLS) == 1  # the two faulted attempts never reached the tool
""").runpytest("--strict-markers")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["agentfaults: 2 faults injected, 2 retries, 0 fixer calls, 0 escalations"]
    )


def test_returns_a_tool_failure_or_a_value(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", returns=af.ToolFailure(error="no route"))
def test_failure(trace):
    result = make().run("go")
    assert result.trace.errors("fetch")[0].error.kind == "logical"
    assert CALLS == []

@pytest.mark.inject_fault(tool="fetch", returns="cached page")
def test_value():
    result = make().run("go")
    assert [m.content for m in result.messages if m.role == "tool"] == ["cached page"]
""").runpytest()
    result.assert_outcomes(passed=2)


def test_delay_trips_the_per_attempt_timeout_in_virtual_time(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", delay=90)
def test_it(virtual_clock):
    agent = make(resilience=af.ResilienceConfig(timeout_seconds=60, strategy="fixed"))
    result = agent.run("go")
    errors = result.trace.errors("fetch")
    assert errors[0].error.type == "ToolTimeoutError"
    assert result.output == "done"
    assert virtual_clock.now() == 61.0   # cut at the 60 s deadline, then 1 s backoff
""").runpytest()
    result.assert_outcomes(passed=1)


def test_at_selects_the_occurrence_where_hits_start(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("late"), at=2)
def test_it(faults):
    steps = [call_tool("fetch", url="a"), call_tool("fetch", url="b"), say("x")]
    result = make(steps).run("go")
    assert CALLS == ["a", "b"]          # 1st ran, 2nd was hit, its retry ran
    assert faults.fired[0].occurrence == 2
""").runpytest()
    result.assert_outcomes(passed=1)


def test_stacked_markers_apply_top_down_one_after_another(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError("first"))
@pytest.mark.inject_fault(tool="fetch", raises=TimeoutError("second"))
def test_it(trace):
    make().run("go")
    assert [e.error.message for e in trace.of("tool.error")] == ["first", "second"]
""").runpytest()
    result.assert_outcomes(passed=1)


def test_inherited_markers_follow_the_tests_own_in_a_fixed_order(suite):
    # The test's own markers top-down, then the inherited ones: the module's, then the
    # class's (the order the plan has always had: a user stacking them sees it in trace)
    result = suite("""
def fault(message):
    return pytest.mark.inject_fault(tool="fetch", raises=ValueError(message), strict=False)

pytestmark = [fault("module 1"), fault("module 2")]

@fault("class")
class TestIt:
    @fault("first")
    @fault("second")
    def test_it(self, faults):
        assert [f.raises.args[0] for f in faults.faults] == [
            "first", "second", "module 2", "module 1", "class"
        ]

def test_module_only(faults):
    assert [f.raises.args[0] for f in faults.faults] == ["module 2", "module 1"]
""").runpytest()
    result.assert_outcomes(passed=2)


def test_llm_faults_hit_any_model_and_keep_the_scripted_step(suite):
    result = suite("""
class EchoModel:
    name = "echo"
    def request(self, request):
        return af.ModelResponse(message=af.Message.assistant("echo"))
    async def arequest(self, request):
        return self.request(request)

@pytest.mark.inject_fault(llm="rate_limit", retry_after=3)
def test_any_model():
    agent = af.Agent("bot", model=EchoModel(),
                     on_llm_error=lambda e, a: af.LlmErrorDecision.retry(initial_backoff=0))
    result = agent.run("x")
    assert result.output == "echo"
    assert result.trace.of("llm.error")[0].error.type == "RateLimitError"

@pytest.mark.inject_fault(llm="malformed_tool_args", at=1)
def test_scripted(faults):
    model = ScriptedModel([call_tool("fetch", url="u"), say("fixed")])
    agent = af.Agent("bot", model=model, tools=[fetch])
    result = agent.run("x")
    assert result.output == "fixed"
    assert len(model.requests) == 3          # the fault answered first; both steps followed
    assert model.remaining == 0
    assert result.trace.count("tool.result", tool="fetch") == 1  # the tool really ran
    assert faults.fired[0].target == "llm"
""").runpytest()
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            'tool="fetch", raises=ValueError, bogus=1',
            "unknown key 'bogus' for a tool fault; valid keys: tool, raises, returns, delay, idempotent, times, at, probability, strict",
        ),
        ('tool="fetch", http=503', "has 2 targets"),
        ("times=2", "has no target"),
        ('tool="fetch", raises=ValueError, times=0', "times= must be an int >= 1, got 0"),
        ('tool="fetch", raises="boom"', "raises= needs an exception"),
        ('tool="fetch"', "needs exactly one of raises=..., returns=..., delay=..."),
        ('http="slow"', "http= must be a status code"),
        ('llm="chaos"', "llm= must be one of"),
        ('tool="fetch", delay=5, probability=2', "probability= must be a number in (0, 1]"),
        # NaN and the infinities are refused for every number, naming the key and the range
        ('tool="fetch", delay=float("nan")', "delay= must be a finite number of seconds >= 0"),
        ('tool="fetch", delay=float("inf")', "delay= must be a finite number of seconds >= 0"),
        ('tool="fetch", delay=-float("inf")', "delay= must be a finite number of seconds >= 0"),
        ("http=429, retry_after=float('nan')", "retry_after= must be a finite number of seconds"),
        ("http=429, retry_after=float('inf')", "retry_after= must be a finite number of seconds"),
        (
            "llm='rate_limit', retry_after=float('nan')",
            "retry_after= must be a finite number of seconds >= 0, got nan",
        ),
        (
            "llm='rate_limit', retry_after=float('inf')",
            "retry_after= must be a finite number of seconds >= 0, got inf",
        ),
        (
            'tool="fetch", delay=1, probability=float("nan")',
            "probability= must be a number in (0, 1], got nan",
        ),
        ('tool="fetch", delay=1, probability=float("inf")', "probability= must be a number in"),
        ('tool="fetch", delay=1, times=float("inf")', "times= must be an int >= 1, got inf"),
        ('tool="fetch", delay=1, at=float("nan")', "at= must be an int >= 1, got nan"),
        ("llm='server_error', status=float('nan')", "status= must be an HTTP error status"),
        ("http=float('nan')", "http= must be a status code (e.g. 503) or one of"),
    ],
)
def test_bad_marker_arguments_fail_the_test_at_setup(suite, marker, message):
    result = suite(f"""
@pytest.mark.inject_fault({marker})
def test_it():
    raise AssertionError("never runs")
""").runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*UsageError*@pytest.mark.inject_fault(*"])
    assert message in result.stdout.str()


def test_a_fault_that_never_fires_fails_at_teardown_naming_it(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetc", raises=ConnectionError())
def test_typo():
    make().run("go")

@pytest.mark.inject_fault(tool="fetc", raises=ConnectionError(), strict=False)
def test_opted_out():
    make().run("go")
""").runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_typo*", "*fault on tool 'fetc' never fired*"]
    )


def test_probability_is_reproducible_from_the_seed(suite):
    pytester = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), probability=0.5, times=50, strict=False)
def test_it(faults):
    steps = [call_tool("fetch", url=str(i)) for i in range(20)] + [say("x")]
    make(steps, resilience=af.ResilienceConfig(max_retries=0)).run("go")
    with open("fired.txt", "w") as out:
        out.write(repr([f.occurrence for f in faults.fired]))
""")

    def fired(seed: int) -> str:
        out = pytester.runpytest(f"--agentfaults-seed={seed}").stdout.str()
        assert f"agentfaults: seed={seed}" in out
        return (pytester.path / "fired.txt").read_text()

    assert fired(7) == fired(7)
    assert fired(7) != fired(8)


def test_trace_fixture_collects_every_run_of_the_test(suite):
    result = suite("""
def test_it(trace):
    make().run("one")
    make([say("two")]).run("two")
    assert trace.count("run.start") == 2
    assert [e.seq for e in trace] == list(range(len(trace)))
""").runpytest()
    result.assert_outcomes(passed=1)


def test_agents_use_the_virtual_clock_by_default_and_real_time_opts_out(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), times=2)
def test_virtual(virtual_clock):
    make(resilience=af.ResilienceConfig(strategy="fixed", base_delay=30)).run("go")
    assert virtual_clock.sleeps == [30.0, 30.0]

@pytest.mark.real_time
def test_real():
    assert isinstance(af.Agent("bot", model=ScriptedModel([])).clock, af.RealClock)

@pytest.mark.real_time
def test_real_has_no_virtual_clock(virtual_clock):
    pass
""").runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*is marked real_time, so it has no virtual clock*"])


def test_patch_sleep_virtualises_third_party_sleeps_and_is_undone(suite):
    result = suite("""
import time, anyio

def test_patched(virtual_clock):
    virtual_clock.patch_sleep()
    time.sleep(120)  # patched by patch_sleep(): recorded, not slept
    asyncio.run(asyncio.sleep(5))
    anyio.run(anyio.sleep, 7)
    assert virtual_clock.sleeps == [120, 5, 7]

def test_undone_afterwards():
    assert time.sleep.__module__ == "time"
    assert asyncio.sleep.__module__ == "asyncio.tasks"
""").runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_faults_fixture_is_fluent(suite):
    result = suite("""
def test_it(faults):
    faults.tool("fetch").raises(ConnectionError("x")).times(2)
    faults.llm.malformed("empty").at(2)
    agent = make([call_tool("fetch", url="u"), say("done")],
                 on_llm_error=lambda e, a: af.LlmErrorDecision.retry(initial_backoff=0))
    result = agent.run("go")
    assert result.output == "done"  # the empty answer came before the step, which stayed
    assert [f.target for f in faults.fired] == ["tool", "tool", "llm"]
""").runpytest()
    result.assert_outcomes(passed=1)


def test_scripted_model_fixture(suite):
    result = suite("""
def test_it(scripted_model):
    model = scripted_model([say("hi")])
    assert af.Agent("bot", model=model)("x") == "hi"
""").runpytest()
    result.assert_outcomes(passed=1)


def test_async_tests_with_pytest_asyncio_and_anyio(suite):
    result = suite("""
@pytest.mark.asyncio
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), times=1)
async def test_asyncio(trace, virtual_clock):
    result = await make().arun("go")
    assert result.output == "done"
    assert trace.count("tool.fault") == 1
    assert len(virtual_clock.sleeps) == 1

@pytest.mark.anyio
@pytest.mark.inject_fault(tool="fetch", raises=ConnectionError(), times=1)
async def test_anyio(trace):
    result = await make().arun("go")
    assert trace.count("tool.retry") == 1

@pytest.fixture
def anyio_backend():
    return "asyncio"
""").runpytest("-p", "anyio")
    result.assert_outcomes(passed=2)


PAYMENT = '''
CHARGES = []

@af.tool
def charge(amount: int) -> str:
    """Charge the card (the tool itself says nothing about idempotency)."""
    CHARGES.append(amount)
    return "charged"

def shop(**kw):
    CHARGES.clear()
    steps = [call_tool("charge", amount=30), say("done")]
    kw.setdefault("resilience", af.ResilienceConfig(strategy="fixed", base_delay=1))
    return af.Agent("shop", model=ScriptedModel(steps), tools=[charge], **kw)
'''


def test_marker_idempotent_false_stops_the_rerun_and_the_verdict_checks_it(suite):
    result = suite(
        PAYMENT
        + """
@pytest.mark.inject_fault(tool="charge", raises=TimeoutError("gateway"), idempotent=False)
def test_default_policy(trace):
    result = shop().run("pay")
    assert CHARGES == []                      # the faulted attempt, and no second one
    assert trace.count("tool.call", tool="charge") == 1
    assert trace.of("tool.fault")[0].field("idempotent") is False
    assert "check the state first" in result.messages[2].content
    trace.assert_resilient()

@pytest.mark.inject_fault(tool="charge", raises=TimeoutError("gateway"), idempotent=False)
def test_opt_in(trace):
    # the tool's own TimeoutError is an execution failure (ToolTimeoutError is a timeout)
    opt_in = af.OnError(execution=af.retry(2, strategy="fixed", allow_non_idempotent=True))
    shop(on_tool_error={"charge": opt_in}).run("pay")
    assert CHARGES == [30]
    assert trace.verdict().codes == ["retried_non_idempotent"]

def test_fluent(faults, trace):
    faults.tool("charge").raises(ConnectionResetError("reset")).idempotent(False)
    shop().run("pay")
    assert CHARGES == []
    assert trace.of("tool.error")[0].field("ambiguous") is True

@pytest.mark.inject_fault(tool="charge", raises=TimeoutError("gateway"))
def test_without_the_declaration_it_is_retried(trace):
    shop().run("pay")
    assert CHARGES == [30]
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)


def test_marker_idempotent_must_be_a_bool(suite):
    result = suite("""
@pytest.mark.inject_fault(tool="fetch", raises=TimeoutError(), idempotent="no")
def test_it():
    pass
""").runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*inject_fault(*idempotent='no'*idempotent= must be True or False*"]
    )


def test_real_time_sync_tool_is_cut_and_the_tests_faults_follow_it_to_its_thread(suite):
    result = suite('''
import threading

RELEASE = threading.Event()
ENDED = threading.Semaphore(0)
THREADS = []

@af.tool
def charge(amount: int) -> str:
    """Charge; blocks until the test releases it."""
    THREADS.append(threading.current_thread())
    RELEASE.wait(10)
    ENDED.release()
    return "charged"

@pytest.mark.real_time
@pytest.mark.inject_fault(tool="charge", raises=ConnectionRefusedError("down"))
def test_it(trace, faults):
    # 0.25 s: the fault of attempt 1 must reach the worker thread before its deadline,
    # even on a loaded machine
    config = af.ResilienceConfig(timeout_seconds=0.25, max_retries=2, strategy="fixed",
                                 base_delay=0)
    steps = [call_tool("charge", amount=3), say("done")]
    agent = af.Agent("shop", model=ScriptedModel(steps), tools=[charge], resilience=config)
    try:
        agent.run("pay")
    finally:
        RELEASE.set()
    # attempt 1: the fault, injected on the worker thread, recorded in this test's trace;
    # attempts 2 and 3: the tool blocks and is cut at 0.25 s of real time
    assert [f.kind for f in faults.fired] == ["raises"]
    assert trace.count("tool.fault", tool="charge") == 1
    errors = [e.error.type for e in trace.of("tool.error", tool="charge")]
    assert errors == ["ConnectionRefusedError", "ToolTimeoutError", "ToolTimeoutError"]
    assert ENDED.acquire(timeout=10) and ENDED.acquire(timeout=10)
    assert len(THREADS) == 2 and threading.current_thread() not in THREADS
''').runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
