"""A broken on_llm_error handler is logged with what happened and what the run did."""

from __future__ import annotations

import logging

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, fail


def _agent(handler):
    boom = af.ModelServerError("x", status=500)
    model = ScriptedModel([fail(boom)])
    return boom, af.Agent("bot", model=model, clock=af.VirtualClock(), on_llm_error=handler)


def _run_logged(agent, caplog) -> af.ModelServerError:
    with (
        caplog.at_level(logging.ERROR, logger="pytest_agentfaults"),
        pytest.raises(af.ModelServerError) as caught,
    ):
        agent.run("x")
    return caught.value


def test_a_handler_that_raises_is_logged_as_re_raising_the_original_error(caplog):
    def bad_handler(exc, attempt):
        raise RuntimeError("handler bug")

    boom, agent = _agent(bad_handler)
    assert _run_logged(agent, caplog) is boom
    assert "on_llm_error raised; the original error is re-raised" in caplog.messages


def test_a_handler_returning_no_decision_is_logged_as_a_rethrow(caplog):
    boom, agent = _agent(lambda exc, attempt: "retry please")
    assert _run_logged(agent, caplog) is boom
    assert caplog.messages == [
        "on_llm_error returned 'retry please', not an af.LlmErrorDecision; treating it as rethrow"
    ]
