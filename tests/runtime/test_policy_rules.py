"""The recovery policy's rules, as a user writes them: which action applies, what a retry
matches, how long it waits, and what a wrong policy is told."""

from __future__ import annotations

import pytest

import pytest_agentfaults as af
from pytest_agentfaults.runtime.policy import (
    FeedBack,
    PolicySources,
    RaiseError,
    Retry,
    check_on_tool_error,
)


class Flaky(ConnectionError):
    """A subclass of an error a policy names."""


def test_retry_on_an_exception_type_also_matches_its_subclasses():
    action = af.retry(3, retry_on=ConnectionError)
    assert action.should_retry(Flaky("reset"))
    assert action.should_retry(ConnectionError("reset"))
    assert not action.should_retry(ValueError("bad"))


def test_retry_on_several_types_matches_any_of_them():
    action = af.retry(3, retry_on=(KeyError, TimeoutError))
    assert action.should_retry(KeyError("k"))
    assert action.should_retry(TimeoutError())
    assert not action.should_retry(ConnectionError())


def test_retry_on_a_predicate_asks_the_predicate():
    action = af.retry(3, retry_on=lambda exc: "again" in str(exc))
    assert action.should_retry(ValueError("try again"))
    assert not action.should_retry(ConnectionError("reset"))


def test_without_retry_on_classify_decides_what_is_retried():
    action = af.retry(3)
    assert action.should_retry(ConnectionError("reset"))
    assert not action.should_retry(ValueError("bad input"))


def test_an_action_delay_takes_each_unset_field_from_the_config():
    config = af.ResilienceConfig(strategy="linear", base_delay=2, max_delay=7, jitter_factor=0)
    assert [af.retry(9).delay(n, config, 0.0) for n in (1, 2, 3, 4)] == [2, 4, 6, 7]
    # each field the action sets wins over the config's
    assert af.retry(9, strategy="fixed").delay(3, config, 0.0) == 2
    assert af.retry(9, base_delay=1).delay(3, config, 0.0) == 3
    assert af.retry(9, max_delay=5).delay(4, config, 0.0) == 5


def test_an_action_jitter_factor_wins_over_the_config():
    config = af.ResilienceConfig(strategy="exponential_jitter", base_delay=1, jitter_factor=0)
    assert af.retry(3).delay(1, config, 0.5) == 1.0
    assert af.retry(3, jitter_factor=1.0).delay(1, config, 0.5) == 1.5
    jittery = af.ResilienceConfig(strategy="exponential_jitter", base_delay=1, jitter_factor=1)
    assert af.retry(3, jitter_factor=0.0).delay(1, jittery, 0.5) == 1.0


def test_a_retry_strategy_is_case_insensitive():
    assert af.retry(2, strategy=" Fixed ").strategy == "fixed"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "retry(max_attempts=0): max_attempts counts the original call"),
        ({"max_attempts": True}, "retry(max_attempts=True): give an int >= 1"),
        ({"max_attempts": 2.0}, "retry(max_attempts=2.0): give an int >= 1"),
        ({"strategy": "fib"}, "retry(strategy='fib'): unknown strategy; use one of exponen"),
        ({"base_delay": -1}, "retry(base_delay=-1): must be a finite number >= 0"),
        ({"max_delay": float("inf")}, "retry(max_delay=inf): must be a finite number >= 0"),
        ({"jitter_factor": float("nan")}, "retry(jitter_factor=nan): must be a finite"),
        ({"jitter_factor": 1.5}, "retry(jitter_factor=1.5): must be <= 1"),
        ({"allow_non_idempotent": 1}, "retry(allow_non_idempotent=1): give True or False"),
        # Refused here, not at the first failure of a run (an AttributeError, a TypeError)
        ({"strategy": 5}, "retry(strategy=5): unknown strategy; use one of exponen"),
        ({"base_delay": "2"}, "retry(base_delay='2'): must be a finite number >= 0"),
        ({"max_delay": None, "base_delay": [1]}, "retry(base_delay=[1]): must be a finite"),
        (
            {"retry_on": "ConnectionError"},
            "retry(retry_on='ConnectionError'): give an exception class, a tuple of them, "
            "or a callable(exc) -> bool",
        ),
        ({"retry_on": (ValueError, "x")}, "retry(retry_on=(<class 'ValueError'>, 'x')): give"),
        ({"retry_on": (ValueError, int)}, "retry(retry_on=(<class 'ValueError'>, <class 'int'>"),
        ({"retry_on": ()}, "retry(retry_on=()): give an exception class"),
        (
            {"base_delay": 3, "max_delay": 2},
            "retry(base_delay=3, max_delay=2): max_delay must be >= base_delay",
        ),
    ],
)
def test_a_bad_retry_says_which_argument_and_the_fix(kwargs, message):
    kwargs = dict(kwargs)  # the parameter is shared by every run of this test in a process
    max_attempts = kwargs.pop("max_attempts", 3)
    with pytest.raises(af.UsageError) as info:
        af.retry(max_attempts, **kwargs)
    assert str(info.value).startswith(message)


def test_the_edges_of_a_valid_retry_are_accepted():
    assert af.retry(1).max_attempts == 1
    assert af.retry(2, retry_on=KeyError).retry_on == (KeyError,)
    assert af.retry(2, retry_on=(KeyError, af.ModelError)).retry_on == (KeyError, af.ModelError)
    assert Retry(2, retry_on=[KeyError]).retry_on == (KeyError,)  # type: ignore[arg-type]
    assert af.retry(2, base_delay=1, max_delay=2.5).max_delay == 2.5
    edge = af.retry(2, base_delay=0, max_delay=0, jitter_factor=1)
    assert (edge.base_delay, edge.max_delay, edge.jitter_factor) == (0, 0, 1)
    assert af.retry(2, base_delay=2, max_delay=2).max_delay == 2
    assert af.retry(2, allow_non_idempotent=True).allow_non_idempotent is True


def test_a_bad_fix_says_what_it_needs():
    with pytest.raises(af.UsageError, match=r"fix\(retries=0\): give an int >= 1"):
        af.fix(af.Agent.from_function("f", lambda raw: raw), retries=0)
    with pytest.raises(af.UsageError, match=r"fix\(retries=True\)"):
        af.fix(af.Agent.from_function("f", lambda raw: raw), retries=True)
    with pytest.raises(af.UsageError, match=r"fix\(\) needs an af.Agent"):
        af.fix("not an agent")  # type: ignore[arg-type]
    assert af.fix(af.Agent.from_function("f", lambda raw: raw)).retries == 1


def test_a_timeout_without_its_own_action_uses_the_execution_action():
    execution = af.retry(4)
    policy = af.OnError(execution=execution)
    assert policy.action_for("timeout") is execution
    own = af.raise_error()
    assert af.OnError(execution=execution, timeout=own).action_for("timeout") is own
    assert af.OnError(timeout=own).action_for("execution") is None
    feed = af.feed_back()
    assert af.OnError(invalid_args=feed, execution=execution).action_for("invalid_args") is feed


def test_the_most_specific_level_with_an_action_wins():
    tool_level = af.OnError(execution=af.raise_error())
    agent_level = af.OnError(execution=af.retry(5), invalid_args=af.feed_back())
    sources = PolicySources(levels=[None, tool_level, agent_level])
    assert sources.resolve("execution") is tool_level.execution
    assert sources.resolve("invalid_args") is agent_level.invalid_args
    assert sources.resolve("timeout") is tool_level.execution


def test_without_any_action_the_config_retries_and_invalid_args_go_back_to_the_model():
    sources = PolicySources(config=af.ResilienceConfig(max_retries=4))
    action = sources.resolve("execution")
    assert isinstance(action, Retry)
    assert action.max_attempts == 5
    # the same object every time, so attempts are counted across the whole call
    assert sources.resolve("timeout") is action
    assert isinstance(sources.resolve("invalid_args"), FeedBack)


def test_on_error_refuses_what_is_not_an_action_naming_the_slot():
    with pytest.raises(af.UsageError) as caught:
        af.OnError(timeout=3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "OnError(timeout=3): use af.retry(), af.fix(), af.feed_back(), af.raise_error() or "
        "af.respond_with()"
    )
    with pytest.raises(af.UsageError) as caught:
        af.OnError(invalid_args=af.retry(2))
    assert str(caught.value) == (
        "OnError(invalid_args=retry(...)): rerunning a call with the same invalid arguments "
        "cannot succeed; use af.fix(fixer) or af.feed_back()"
    )


def test_on_tool_error_must_map_names_to_on_error():
    assert check_on_tool_error(None) == {}
    policy = af.OnError(execution=af.retry(2))
    assert check_on_tool_error({"fetch": policy}) == {"fetch": policy}
    with pytest.raises(af.UsageError, match="on_tool_error must map tool names.*got list"):
        check_on_tool_error([policy])  # type: ignore[arg-type]
    with pytest.raises(af.UsageError, match=r"on_tool_error\['fetch'\] must be af.OnError"):
        check_on_tool_error({"fetch": af.retry(2)})  # type: ignore[dict-item]


def fetch_page(url: str) -> str:
    """Fetch a page."""
    return url


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (lambda action: af.tool(on_error=action)(fetch_page), "@af.tool(on_error=...)"),
        (lambda action: af.Agent("bot", tool_defaults=action), "tool_defaults"),
        (lambda action: af.Agent("bot", on_tool_error={"fetch": action}), "on_tool_error['fetch']"),
    ],
    ids=["tool-on_error", "tool_defaults", "on_tool_error"],
)
@pytest.mark.parametrize(
    ("action", "shown"),
    [(af.retry(max_attempts=2), "af.retry(...)"), (af.feed_back(), "af.feed_back(...)")],
    ids=["retry", "feed_back"],
)
def test_a_bare_action_where_a_policy_goes_says_how_to_wrap_it(build, where, action, shown):
    # @af.tool(on_error=af.retry(2)) was taken, and the tool's first failure crashed the run
    # with "AttributeError: 'Retry' object has no attribute 'action_for'"
    with pytest.raises(af.UsageError) as caught:
        build(action)
    message = str(caught.value)
    assert message.startswith(f"{where} must be af.OnError(...), got {type(action).__name__}(")
    assert f"af.OnError(execution={shown})" in message
    assert "invalid_args=" in message
    assert "timeout=" in message


def test_a_policy_of_another_type_is_refused_where_the_tool_is_made():
    with pytest.raises(
        af.UsageError, match=r"@af.tool\(on_error=...\) must be af.OnError\(...\), got 'retry'$"
    ):
        af.tool(on_error="retry")(fetch_page)  # type: ignore[arg-type]


def test_the_shorthands_build_their_actions():
    assert af.respond_with(7).value == 7
    assert isinstance(af.feed_back(), FeedBack)
    assert isinstance(af.raise_error(), RaiseError)
    assert af.retry(retry_on=KeyError).retry_on == (KeyError,)
    assert af.retry().max_attempts == 3


def _flaky_agent(fails: int) -> tuple[af.Agent, list[int]]:
    left = [fails]

    @af.tool
    def fetch() -> str:
        """Fetch; fails first."""
        if left[0]:
            left[0] -= 1
            raise ConnectionError("reset")
        return "ok"

    model = af.ScriptedModel([af.call_tool("fetch"), af.say("done")])
    agent = af.Agent("bot", model=model, tools=[fetch], clock=af.VirtualClock())
    return agent, left


def _run_again(agent: af.Agent, left: list[int], fails: int) -> af.RunResult:
    agent.model.reset()  # type: ignore[union-attr]
    left[0] = fails
    return agent.run("go")


def test_a_later_run_follows_the_policy_in_force_then_not_the_first_runs():
    # An agent's runs reuse what a failure resolved to, but only while the same policy
    # objects are in force: changing one between runs changes what the next run does.
    agent, left = _flaky_agent(1)
    assert _run_again(agent, left, 1).usage.retries == 1
    agent.tool_defaults = af.OnError(execution=af.feed_back())
    fed_back = _run_again(agent, left, 1)
    assert fed_back.usage.retries == 0
    assert fed_back.trace.of("tool.retry") == []
    agent.tool_defaults = None
    agent.resilience = af.ResilienceConfig(max_retries=0)
    assert _run_again(agent, left, 1).usage.retries == 0
    agent.resilience = af.ResilienceConfig(max_retries=2, strategy="fixed", base_delay=0.5)
    again = _run_again(agent, left, 2)
    assert again.usage.retries == 2
    assert [e.delay for e in again.trace.of("tool.retry")] == [0.5, 0.5]


def test_a_later_run_records_its_own_failures_message_not_an_earlier_ones():
    agent, left = _flaky_agent(0)
    messages = iter(["reset", "refused by peer"])

    def fetch() -> str:
        """Fetch; fails once with the next message."""
        if left[0]:
            left[0] -= 1
            raise ConnectionError(next(messages))
        return "ok"

    agent.tools["fetch"] = af.tool(fetch)
    first, second = _run_again(agent, left, 1), _run_again(agent, left, 1)
    assert first.trace.of("tool.error")[0].error.message == "reset"
    assert second.trace.of("tool.error")[0].error.message == "refused by peer"
