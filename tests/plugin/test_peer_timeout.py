"""pytest-timeout beside the kit: virtual waits never reach its deadline; a real hang does.

A tool that sleeps or hangs in virtual time is cut by the kit long before pytest-timeout's
real deadline, with either method. A tool that blocks on something no virtual clock can
move (a lock, an event) is failed by pytest-timeout (``signal`` raises in the test): the
test then fails with pytest-timeout's message, its trace says the attempt was stopped
(not that the retries ran out), and nothing of the kit stays patched. (The ``thread``
method ends the whole process: nothing is left to leak.)
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_timeout")

TOOLS = """
import asyncio
import threading
import time
from pytest_agentfaults.runtime import hooks

REAL_SLEEP = time.sleep

@af.tool
def blocks(n: int) -> str:
    \"\"\"Wait on an event nobody sets: no virtual clock can move it.\"\"\"
    threading.Event().wait()
    return "never"

@af.tool
def sleeps(n: int) -> str:
    \"\"\"Sleep an hour.\"\"\"
    time.sleep(3600)
    return "rested"

@af.tool
async def hangs(n: int) -> str:
    \"\"\"Await forever.\"\"\"
    await asyncio.Event().wait()
    return "never"

def agent(tool, **config):
    model = ScriptedModel([call_tool(tool.name, n=1), say("ok")])
    return af.Agent("bot", model=model, tools=[tool], resilience=af.ResilienceConfig(**config))
"""


@pytest.mark.parametrize("method", ["signal", "thread"])
def test_virtual_waits_finish_long_before_the_timeout(suite, method):
    result = suite(
        TOOLS
        + """
def test_sleeps(virtual_clock):
    assert agent(sleeps, timeout_seconds=None).run("go").output == "ok"
    assert virtual_clock.sleeps == [3600]

@pytest.mark.inject_fault(tool="hangs", raises=ConnectionError("reset"))
def test_hangs(trace, virtual_clock):
    assert agent(hangs, timeout_seconds=30, max_retries=1).run("go").output == "ok"
    assert [e.error.type for e in trace.of("tool.error")] == ["ConnectionError", "ToolTimeoutError"]
"""
    ).runpytest("-p", "no:randomly", "--timeout=60", f"--timeout-method={method}")
    result.assert_outcomes(passed=2)


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGALRM"), reason="signal method: POSIX")
def test_a_timeout_in_a_blocked_tool_fails_the_test_and_leaves_nothing_patched(suite):
    result = suite(
        TOOLS
        + """
@pytest.mark.timeout(0.2, method="signal", func_only=True)  # the call alone: load-proof
@pytest.mark.inject_fault(tool="blocks", raises=ConnectionError("reset"))
def test_blocked(trace):
    agent(blocks, timeout_seconds=None, max_retries=3).run("go")

def test_z_nothing_left():
    assert time.sleep is REAL_SLEEP
    assert not any(type(i).__name__ == "PlanInterceptor" and i.plan.faults
                   and i.plan.faults[0].tool == "blocks" for i in hooks.active_interceptors())
"""
    ).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Failed: Timeout (>0.2s) from pytest-timeout*",
            "*tool.error*blocks  attempt 2  Failed: Timeout*",
            "*aborted: tool 'blocks' stopped in attempt 2, not retried: Failed: Timeout*",
        ]
    )
    assert "retries exhausted" not in result.stdout.str()  # 2 of its 4 attempts ran
