"""anyio's pytest plugin beside the kit, on its asyncio and trio backends.

On asyncio, ``agent.arun`` recovers from a fault with its backoff in virtual time. The
runtime's async side (backoff, tool deadlines, parallel tool calls) is asyncio's: under
trio it refuses at once with a `UsageError` naming the fix, instead of failing at its
first backoff with trio's "unrecognized yield message". (Under trio, ``anyio.sleep`` in
the test itself is virtual: tests/plugin/test_virtual_time_trio.py.)
"""

from __future__ import annotations

import pytest

pytest.importorskip("trio")
pytest.importorskip("anyio")

BODY = """
import time

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param

@af.tool
async def afetch(url: str) -> str:
    \"\"\"Fetch.\"\"\"
    return "page"

def agent(**options):
    model = ScriptedModel([call_tool("afetch", url="u"), say("done")], **options)
    return af.Agent("bot", model=model, tools=[afetch])

@pytest.mark.anyio
@pytest.mark.inject_fault(tool="afetch", raises=ConnectionError("reset"), times=2, strict=False)
async def test_arun(anyio_backend, trace, virtual_clock):
    if anyio_backend == "trio":
        with pytest.raises(af.UsageError) as raised:
            await agent(strict=False).arun("go")
        assert "asyncio event loop" in str(raised.value)
        assert "anyio_backend" in str(raised.value)
        assert len(trace) == 0                   # refused before the run started
        return
    started = time.perf_counter()
    assert (await agent().arun("go")).output == "done"
    assert trace.retries("afetch") == 2
    assert virtual_clock.sleeps == trace.delays()
    assert time.perf_counter() - started < 1    # the backoff waited in virtual time

@pytest.mark.anyio
async def test_a_sync_run_inside_a_trio_test(anyio_backend, trace):
    @af.tool
    def fetch(url: str) -> str:
        \"\"\"Fetch.\"\"\"
        return "page"
    model = ScriptedModel([call_tool("fetch", url="u"), say("done")])
    assert af.Agent("bot", model=model, tools=[fetch]).run("go").output == "done"
"""


def test_arun_under_anyio_asyncio_and_trio(suite):
    result = suite(BODY).runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=4)
