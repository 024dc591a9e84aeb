"""Leftover script steps, outside pytest: `assert_all_used`, the plan's checks, `current_plan`.

The plugin's own plan is active in every test here, so the models that should not be
checked at this test's teardown are built with ``strict=False`` or inside a fresh context.
"""

from __future__ import annotations

import contextvars

import pytest

from pytest_agentfaults.testing import FaultPlan, ScriptedModel, call_tool, say
from pytest_agentfaults.testing.faults import current_plan
from pytest_agentfaults.testing.server import LLMServer


def _outside_any_plan(fn):  # type: ignore[no-untyped-def]
    return contextvars.Context().run(fn)


def test_assert_all_used_names_the_first_leftover_step_and_the_fix() -> None:
    model = ScriptedModel([call_tool("fetch", url="u"), say("done"), say("spare")], strict=False)
    model.request(_request())
    with pytest.raises(AssertionError) as caught:
        model.assert_all_used()
    message = str(caught.value)
    assert "ScriptedModel 'scripted' has 2 steps left over: step 2 of 3: say('done')" in message
    assert "ScriptedModel(..., strict=False)" in message


def test_assert_all_used_passes_when_every_step_ran_or_the_model_repeats() -> None:
    model = ScriptedModel([say("done")], strict=False)
    model.request(_request())
    model.assert_all_used()
    ScriptedModel([say("a"), say("b")], on_exhausted="repeat_last").assert_all_used()
    ScriptedModel.from_function(lambda request: say("x")).assert_all_used()


def test_current_plan_is_the_active_plan_and_is_reset_after_it() -> None:
    def body() -> None:
        assert current_plan() is None
        outer, inner = FaultPlan(), FaultPlan()
        with outer.active():
            assert current_plan() is outer
            with inner.active():
                assert current_plan() is inner
            assert current_plan() is outer
        assert current_plan() is None

    _outside_any_plan(body)


def test_a_model_built_under_an_active_plan_is_checked_by_plan_check() -> None:
    def body() -> FaultPlan:
        plan = FaultPlan()
        with plan.active():
            ScriptedModel([say("a"), say("b")], name="left")
            ScriptedModel([say("c")], name="allowed", strict=False)
        return plan

    plan = _outside_any_plan(body)
    with pytest.raises(AssertionError) as caught:
        plan.check()
    message = str(caught.value)
    assert "ScriptedModel 'left' has 2 steps left over: step 1 of 2: say('a')" in message
    assert "allowed" not in message


def test_a_model_built_outside_any_plan_is_not_checked() -> None:
    plan = FaultPlan()
    _outside_any_plan(lambda: ScriptedModel([say("a")]))
    plan.check()


def test_plan_check_reports_every_failure_together() -> None:
    plan = FaultPlan()
    plan.tool("fetch").raises(ConnectionError())

    def first() -> None:
        raise AssertionError("first check")

    def second() -> None:
        raise AssertionError("second check")

    plan.add_check(first)
    plan.add_check(second)
    with pytest.raises(AssertionError) as caught:
        plan.check()
    assert str(caught.value).splitlines() == [
        "fault on tool 'fetch' never fired: faults.tool('fetch').raises(ConnectionError())",
        "  what happened: fetch was called 0 times: the agent never called a tool",
        "  fix: make the agent call it, or add .strict(False) if the fault may go unused",
        "  the fault watches the tools of: af.Agent",
        "first check",
        "second check",
    ]


def test_the_server_check_names_a_leftover_step() -> None:
    with LLMServer() as server:
        server.script([say("one"), say("two")])
        with pytest.raises(AssertionError, match=r"step 1 of 2: say\('one'\)"):
            server.check()
        server.script([say("one")], strict=False)
        server.check()


def _request():  # type: ignore[no-untyped-def]
    from pytest_agentfaults.runtime.models.base import Message, ModelRequest

    return ModelRequest(messages=[Message.user("go")])
