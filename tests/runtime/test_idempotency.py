"""Tools that must not run twice: `@af.tool(idempotent=False)`, through the public API."""

from __future__ import annotations

import json

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say
from pytest_agentfaults.errors import is_ambiguous


def payment_tool(failure: BaseException | None, *, idempotent: bool = False, fail_times: int = 1):
    """A `charge` tool that fails ``fail_times`` times with ``failure`` (a timeout when
    None: it hangs past its deadline on the virtual clock), then charges."""
    clock = af.VirtualClock()
    charges: list[int] = []

    @af.tool(idempotent=idempotent)
    def charge(amount: int) -> str:
        """Charge the card."""
        charges.append(amount)
        if len(charges) <= fail_times:
            if failure is None:
                clock.sleep(90)  # the gateway hangs past the attempt's timeout
            else:
                raise failure
        return f"charged {amount}"

    return charge, charges, clock


def run(tool, clock, *, strict=True, **kwargs):
    model = ScriptedModel([call_tool("charge", amount=30), say("done")], strict=strict)
    kwargs.setdefault(
        "resilience",
        af.ResilienceConfig(timeout_seconds=5, max_retries=2, strategy="fixed", base_delay=1),
    )
    agent = af.Agent("shop", model=model, tools=[tool], clock=clock, **kwargs)
    return agent.run("pay 30"), model


def fed_back(model) -> dict:
    """The tool message of the model's second request: what the failure was turned into."""
    return json.loads(model.requests[1].messages[-1].content)


def test_default_policy_does_not_rerun_after_a_timeout_and_tells_the_model_to_check():
    charge, charges, clock = payment_tool(None)
    result, model = run(charge, clock)
    assert charges == [30]  # one attempt: the card may have been charged
    assert result.trace.retries("charge") == 0
    payload = fed_back(model)
    assert payload["error"].startswith("ToolTimeoutError")
    assert payload["may_have_taken_effect"] is True
    assert "check the state first" in payload["recommendations"][0]
    call, error = result.trace.of("tool.call")[0], result.trace.of("tool.error")[0]
    assert call.field("idempotent") is False
    assert error.field("ambiguous") is True
    assert result.trace.verdict().passed


def test_connection_reset_after_sending_is_ambiguous_too():
    charge, charges, clock = payment_tool(ConnectionResetError("reset by peer"))
    _, model = run(charge, clock)
    assert charges == [30]
    assert fed_back(model)["may_have_taken_effect"] is True


def test_explicit_opt_in_reruns_and_the_verdict_flags_it():
    charge, charges, clock = payment_tool(None)
    policy = af.OnError(timeout=af.retry(3, strategy="fixed", allow_non_idempotent=True))
    result, _ = run(charge, clock, on_tool_error={"charge": policy})
    assert charges == [30, 30]  # charged twice, maybe
    assert result.trace.retries("charge") == 1
    verdict = result.trace.verdict()
    assert verdict.codes == ["retried_non_idempotent"]
    finding = verdict.of("retried_non_idempotent")[0]
    assert "'charge' must not run twice" in finding.message
    assert "ToolTimeoutError" in finding.message
    assert "allow_non_idempotent" in finding.advice
    assert result.trace.verdict(ignore=("retried_non_idempotent",)).passed


def test_retry_on_alone_does_not_opt_in():
    charge, charges, clock = payment_tool(None)
    policy = af.OnError(timeout=af.retry(3, retry_on=TimeoutError))
    _, model = run(charge, clock, on_tool_error={"charge": policy})
    assert charges == [30]
    assert fed_back(model)["may_have_taken_effect"] is True


def test_idempotent_tools_are_retried_as_before():
    charge, charges, clock = payment_tool(None, idempotent=True)
    result, _ = run(charge, clock)
    assert charges == [30, 30]
    assert result.trace.retries("charge") == 1
    assert [m.content for m in result.messages if m.role == "tool"] == ["charged 30"]
    assert result.trace.of("tool.call")[0].field("idempotent") is None  # events unchanged
    assert result.trace.verdict().passed


def test_a_failure_before_sending_is_retried_even_for_a_non_idempotent_tool():
    # The connection was refused: nothing was charged, so running it again is safe.
    charge, charges, clock = payment_tool(ConnectionRefusedError("refused"))
    result, _ = run(charge, clock)
    assert charges == [30, 30]
    assert result.trace.retries("charge") == 1
    assert result.trace.of("tool.error")[0].field("ambiguous") is False
    assert result.trace.verdict().passed


def test_a_non_idempotent_tool_records_the_same_events_as_any_tool_plus_its_marks():
    # The marks are added to the tool events a tool records anyway: nothing else differs.
    def events(idempotent: bool) -> list[dict]:
        charge, _, clock = payment_tool(ConnectionRefusedError("refused"), idempotent=idempotent)
        result, _ = run(charge, clock)
        return [e.model_dump(exclude={"run_id"}) for e in result.trace]

    marked, plain = events(False), events(True)
    calls = [e for e in marked if e["type"] == "tool.call"]
    errors = [e for e in marked if e["type"] == "tool.error"]
    assert [e.pop("idempotent") for e in calls] == [False, False]
    assert [(e.pop("idempotent"), e.pop("ambiguous")) for e in errors] == [(False, False)]
    assert marked == plain
    assert [e["attempt"] for e in calls] == [1, 2]
    assert errors[0]["call_id"] == calls[0]["call_id"] == "call_1"


def test_a_non_ambiguous_error_is_retried_per_policy():
    # The tool raised: it failed, it did not lose an answer. The policy applies as usual.
    charge, charges, clock = payment_tool(RuntimeError("gateway rejected the request"))
    result, _ = run(charge, clock)
    assert charges == [30, 30]
    assert result.trace.verdict().passed
    charge, charges, clock = payment_tool(ValueError("bad card number"))
    policy = af.OnError(execution=af.retry(3, strategy="fixed", retry_on=ValueError))
    result, _ = run(charge, clock, on_tool_error={"charge": policy})
    assert charges == [30, 30]
    assert "retried_non_idempotent" not in result.trace.verdict().codes


def test_on_exhaustion_raise_raises_instead_of_rerunning():
    charge, charges, clock = payment_tool(None)
    config = af.ResilienceConfig(timeout_seconds=5, on_exhaustion="raise")
    with pytest.raises(af.ToolExecutionError) as caught:
        run(charge, clock, resilience=config, strict=False)  # the raise leaves "done"
    assert charges == [30]
    assert isinstance(caught.value.__cause__, af.ToolTimeoutError)


@pytest.mark.parametrize(
    ("error", "ambiguous"),
    [
        (TimeoutError(), True),
        (af.ToolTimeoutError("slow", timeout=1.0), True),
        (ConnectionResetError(), True),
        (BrokenPipeError(), True),
        (ConnectionError("dropped"), True),
        (ConnectionRefusedError(), False),
        (ValueError("bad"), False),
        (KeyError("x"), False),
    ],
)
def test_which_failures_are_ambiguous(error, ambiguous):
    assert is_ambiguous(error) is ambiguous


def test_an_exception_may_say_whether_it_is_ambiguous():
    class Declined(Exception):
        ambiguous = False

    class Lost(RuntimeError):
        ambiguous = True

    assert is_ambiguous(Declined()) is False
    assert is_ambiguous(Lost()) is True
    exc = TimeoutError()
    exc.ambiguous = False  # type: ignore[attr-defined]
    assert is_ambiguous(exc) is False


def test_bad_idempotent_values_are_usage_errors():
    with pytest.raises(af.UsageError, match="idempotent="):
        af.tool(idempotent="no")(lambda: None)  # type: ignore[call-overload]
    with pytest.raises(af.UsageError, match="allow_non_idempotent="):
        af.retry(allow_non_idempotent="yes")  # type: ignore[arg-type]


def test_the_advice_to_check_first_names_the_tool():
    charge, _, clock = payment_tool(None)
    _, model = run(charge, clock)
    assert fed_back(model)["recommendations"] == [
        "The call to 'charge' may have taken effect before it failed, and 'charge' must not "
        "run twice: check the state first (look the result up), and call it again only if it "
        "did not happen."
    ]


def test_only_an_ambiguous_failure_of_a_non_idempotent_tool_asks_to_check_first():
    feed = {"charge": af.OnError(execution=af.feed_back(), timeout=af.feed_back())}
    # non-idempotent, but it surely failed
    charge, _, clock = payment_tool(ValueError("bad card number"))
    _, model = run(charge, clock, on_tool_error=feed)
    assert "may_have_taken_effect" not in fed_back(model)
    # ambiguous, but the tool may run twice
    charge, _, clock = payment_tool(None, idempotent=True)
    _, model = run(charge, clock, on_tool_error=feed)
    assert "may_have_taken_effect" not in fed_back(model)
