"""``plan.inject_fault(**kwargs)``: the marker's arguments as a call, and faults added late.

The marker, ``faults.tool(...)`` and ``faults.http(...)`` all reach a running plan. A fault
given as the marker's arguments (a hypothesis ``http_faults()`` spec, a table of cases)
goes on a plan through ``plan.inject_fault(**spec)``; ``plan.add(fault)`` takes a ready
`Fault`. Added to a plan already active (the ``faults`` fixture's is, all through the
test), either must fire as a fault declared before activation does.
"""

from __future__ import annotations

import httpx
import httpx2
import pytest

import pytest_agentfaults as af
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing.faults import FaultPlan

API = "https://api.example.com/v1/things"


def _status(library) -> int:
    transport = library.MockTransport(lambda request: library.Response(200))
    with library.Client(transport=transport) as client:
        return client.get(API).status_code


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_an_http_fault_added_to_the_tests_running_plan_fires(faults, library):
    faults.add(FaultPlan().http(url=API).status(503).fault)  # a ready-made fault
    assert _status(library) == 503
    assert [str(fired) for fired in faults.fired] == [f"http:GET {API} 503 (occurrence 1)"]


@pytest.mark.parametrize("library", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_inject_fault_takes_the_markers_arguments(faults, library):
    fault = faults.inject_fault(http=503, url=API, times=1)
    assert fault.url == API
    assert _status(library) == 503
    assert _status(library) == 200  # times=1, as the marker would
    assert len(faults.fired) == 1


def test_inject_fault_on_a_plan_activated_later():
    plan = FaultPlan()
    plan.inject_fault(http="connect_error", url=API)
    with plan.active(), pytest.raises(httpx.ConnectError):
        _status(httpx)
    assert len(plan.fired) == 1


def test_inject_fault_reaches_a_tool_as_the_marker_does():
    @af.tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return "page"

    plan = FaultPlan()
    plan.inject_fault(tool="fetch", raises=ConnectionError("reset"), times=2)
    model = af.ScriptedModel([af.call_tool("fetch", url="x"), af.say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    with plan.active():
        result = agent.run("go")
    assert result.output == "done"
    assert result.trace.count("tool.retry") == 2


def test_a_function_fault_added_to_an_active_plan_is_patched_and_undone():
    import json

    plan = FaultPlan()
    with plan.active():
        plan.inject_fault(function="json:loads", returns={"patched": True})
        assert json.loads("[]") == {"patched": True}
        plan.add(FaultPlan().function("json:dumps").returns("patched").fault)
        assert json.dumps([]) == "patched"
    assert json.loads("[]") == []
    assert json.dumps([]) == "[]"
    assert len(plan.fired) == 2


def test_bad_arguments_name_the_call_not_the_marker():
    plan = FaultPlan()
    with pytest.raises(UsageError) as caught:
        plan.inject_fault(http=503, nope=1)
    message = str(caught.value)
    assert message.startswith("faults.inject_fault(http=503, nope=1)")
    assert "@pytest.mark" not in message
    assert "'nope'" in message


def test_positional_arguments_are_refused_by_python():
    plan = FaultPlan()
    with pytest.raises(TypeError):
        plan.inject_fault("fetch")  # type: ignore[misc]
