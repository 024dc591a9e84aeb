"""`Agent.override(model=, tools=, instructions=)`: swap parts of an agent built elsewhere."""

from __future__ import annotations

import asyncio
import threading

import pytest

import pytest_agentfaults as af
from pytest_agentfaults import ScriptedModel, call_tool, say


@af.tool
def real_lookup(city: str) -> str:
    """The real weather service."""
    raise AssertionError("the real service must not be called in a test")


def build_app_agent() -> af.Agent:
    """Stands in for application code that builds its agent deep inside."""
    return af.Agent(
        "app",
        # stands in for a real model, which a test may never call
        model=ScriptedModel([say("from the production model")], name="prod", strict=False),
        instructions="You are the production bot.",
        tools=[real_lookup],
    )


APP_AGENT = build_app_agent()


def answer(question: str) -> str:
    """Application code: it only knows its own agent."""
    return APP_AGENT.run(question).output


def test_a_test_puts_a_scripted_model_into_the_apps_agent():
    fake = ScriptedModel([say("from the test")])
    with APP_AGENT.override(model=fake):
        assert answer("hi") == "from the test"
    assert len(fake.requests) == 1
    assert APP_AGENT.model.name == "prod"  # the agent itself is untouched


def test_the_override_ends_with_the_block_even_when_it_raises():
    with pytest.raises(RuntimeError), APP_AGENT.override(model=ScriptedModel([])):
        raise RuntimeError("boom")
    fresh = build_app_agent()
    with fresh.override(instructions="changed"):
        pass
    assert fresh.run("hi").output == "from the production model"


def test_tools_and_instructions_are_swapped_too():
    calls = []

    @af.tool
    def real_lookup(city: str) -> str:  # the same name as the app's tool: a stand-in
        """A fake weather service."""
        calls.append(city)
        return "sunny"

    fake = ScriptedModel([call_tool("real_lookup", city="Paris"), say("done")])
    with APP_AGENT.override(model=fake, tools=[real_lookup], instructions="Test bot."):
        assert answer("weather?") == "done"
    assert calls == ["Paris"]
    first = fake.requests[0].messages
    assert first[0].role == "system"
    assert first[0].content == "Test bot."


def test_nested_overrides_restore_in_order():
    outer = ScriptedModel([say("outer")] * 3)
    inner = ScriptedModel([say("inner")])
    agent = build_app_agent()
    with agent.override(model=outer):
        with agent.override(instructions="inner instructions"):
            assert agent.run("a").output == "outer"  # the outer model is kept
            assert outer.requests[-1].messages[0].content == "inner instructions"
            with agent.override(model=inner):
                assert agent.run("b").output == "inner"
            assert agent.run("c").output == "outer"
        assert agent.run("d").output == "outer"
        assert outer.requests[-1].messages[0].content == "You are the production bot."
    assert agent.run("e").output == "from the production model"


@pytest.mark.asyncio
async def test_concurrent_tasks_see_only_their_own_override():
    agent = af.Agent("shared", model=ScriptedModel([say("default")]))
    both_inside = asyncio.Barrier(2)

    async def run_with(text: str) -> str:
        async with agent.override(model=ScriptedModel([say(text)])):
            await both_inside.wait()  # both overrides are active at once
            result = await agent.arun("hi")
            return result.output

    assert await asyncio.gather(run_with("one"), run_with("two")) == ["one", "two"]
    assert (await agent.arun("hi")).output == "default"


def test_another_thread_does_not_see_the_override():
    agent = af.Agent("shared", model=ScriptedModel([say("default")]))
    seen = []
    with agent.override(model=ScriptedModel([say("overridden")], strict=False)):  # unseen
        thread = threading.Thread(target=lambda: seen.append(agent.run("hi").output))
        thread.start()
        thread.join()
    assert seen == ["default"]


def test_bad_overrides_are_usage_errors():
    agent = build_app_agent()
    with pytest.raises(af.UsageError, match="override"):
        agent.override(model=42)
    with pytest.raises(af.UsageError, match="override"):
        agent.override(instructions=3)
    with pytest.raises(af.UsageError, match="tools"):
        agent.override(tools="real_lookup")
