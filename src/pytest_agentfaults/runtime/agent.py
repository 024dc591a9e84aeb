"""`Agent`: the loop that calls the model, runs tools, and recovers from their failures.

```python
agent = af.Agent(name="bot", model=model, tools=[fetch],
                 resilience=af.ResilienceConfig(max_retries=2))
result = agent.run("Summarise https://example.com")
result.output, result.status, result.trace.retries("fetch")
```
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Generic, overload

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._components import (
    BUILTIN_TOOLS,
    as_model,
    check_builtins,
    observers,
    tool_table,
)
from pytest_agentfaults.runtime._drivers import Steps, adrive, drive, model_name
from pytest_agentfaults.runtime._log import logger
from pytest_agentfaults.runtime._override import Override, effective
from pytest_agentfaults.runtime._result import Budget, CancelToken, OutputT, RunResult, Usage
from pytest_agentfaults.runtime._run import fixer_steps, run_steps
from pytest_agentfaults.runtime.backoff import ResilienceConfig
from pytest_agentfaults.runtime.clock import Clock, RealClock, VirtualClock, default_clock
from pytest_agentfaults.runtime.decisions import LlmErrorDecision
from pytest_agentfaults.runtime.events import Observer, Trace
from pytest_agentfaults.runtime.models.base import Message, Model, ToolSpec
from pytest_agentfaults.runtime.output import OutputSpec
from pytest_agentfaults.runtime.policy import (
    OnError,
    Resolutions,
    check_on_tool_error,
    require_on_error,
)
from pytest_agentfaults.runtime.tools import Tool

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Agent", "Loop"]

LlmErrorHandler = Callable[[Exception, int], LlmErrorDecision]

#: the caps of an agent given no ``budget=``: `Budget` is frozen and holds only ints
_DEFAULT_BUDGET: Final = Budget()


class Agent(Generic[OutputT]):
    """An LLM agent with tools and a recovery policy for each kind of failure.

    ``run()`` and ``arun()`` share one implementation, so their semantics are identical.
    ``Agent(..., output_type=Plan)`` is an ``Agent[Plan]``: its ``run().output`` is a
    ``Plan`` for the type checker too; without ``output_type`` it is an ``Agent[str]``.
    """

    @overload
    def __init__(
        self: Agent[str],
        name: str = "agent",
        model: Model | str | None = None,
        *,
        instructions: str = "",
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        builtin_tools: Iterable[str] = (),
        resilience: ResilienceConfig | None = None,
        on_tool_error: Mapping[str, OnError] | None = None,
        tool_defaults: OnError | None = None,
        on_llm_error: LlmErrorHandler | None = None,
        budget: Budget | None = None,
        clock: Clock | None = None,
        observer: str | Observer | None = None,
        stream: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[OutputT],
        name: str = "agent",
        model: Model | str | None = None,
        *,
        instructions: str = "",
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        builtin_tools: Iterable[str] = (),
        resilience: ResilienceConfig | None = None,
        on_tool_error: Mapping[str, OnError] | None = None,
        tool_defaults: OnError | None = None,
        on_llm_error: LlmErrorHandler | None = None,
        output_type: type[OutputT],
        budget: Budget | None = None,
        clock: Clock | None = None,
        observer: str | Observer | None = None,
        stream: bool = False,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[Any],
        name: str = "agent",
        model: Model | str | None = None,
        *,
        instructions: str = "",
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        builtin_tools: Iterable[str] = (),
        resilience: ResilienceConfig | None = None,
        on_tool_error: Mapping[str, OnError] | None = None,
        tool_defaults: OnError | None = None,
        on_llm_error: LlmErrorHandler | None = None,
        output_type: Any = str,
        budget: Budget | None = None,
        clock: Clock | None = None,
        observer: str | Observer | None = None,
        stream: bool = False,
    ) -> None: ...

    def __init__(
        self,
        name: str = "agent",
        model: Model | str | None = None,
        *,
        instructions: str = "",
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        builtin_tools: Iterable[str] = (),
        resilience: ResilienceConfig | None = None,
        on_tool_error: Mapping[str, OnError] | None = None,
        tool_defaults: OnError | None = None,
        on_llm_error: LlmErrorHandler | None = None,
        output_type: Any = str,
        budget: Budget | None = None,
        clock: Clock | None = None,
        observer: str | Observer | None = None,
        stream: bool = False,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise UsageError(f"Agent(name={name!r}): give a non-empty name")
        self.name = name
        self.model = as_model(model) if model is not None else None
        self.instructions = instructions
        self.tools = tool_table(tools)
        self.builtin_tools = check_builtins(builtin_tools, self.tools)
        if resilience is not None and not isinstance(resilience, ResilienceConfig):
            raise UsageError(f"resilience must be af.ResilienceConfig(...), got {resilience!r}")
        self.resilience = resilience or ResilienceConfig()
        self.on_tool_error = check_on_tool_error(on_tool_error)
        unknown = (
            sorted(set(self.on_tool_error) - set(self.tools) - set(self.builtin_tools))
            if self.on_tool_error
            else None  # none named: three sets and a sort less for each agent built
        )
        if unknown:
            raise UsageError(
                f"on_tool_error names unknown tool(s) {', '.join(unknown)}; "
                f"the agent's tools are {', '.join(self.tools) or '(none)'}"
            )
        self.tool_defaults = require_on_error(tool_defaults, "tool_defaults")
        if on_llm_error is not None and not callable(on_llm_error):
            raise UsageError("on_llm_error must be a callable (exc, attempt) -> LlmErrorDecision")
        self.on_llm_error = on_llm_error
        self.output_type = output_type
        # How a final answer is checked; None for plain text.
        self.output_spec = None if output_type is str else OutputSpec(output_type)
        if budget is not None and not isinstance(budget, Budget):
            raise UsageError(f"budget must be af.Budget(...), got {budget!r}")
        # The default caps are one frozen model of plain ints, shared: building a pydantic
        # model for each agent costs as much as the rest of the agent.
        self.budget = budget or _DEFAULT_BUDGET
        if clock is not None and type(clock) not in _CLOCKS and not _is_clock(clock):
            raise UsageError(
                f"clock={clock!r} is not a clock: give af.RealClock(), af.VirtualClock(), or an "
                "object with now, sleep and asleep (af.Clock); None uses the default"
            )
        self._clock = clock
        self.observers = observers(observer)
        self.stream = stream
        self._function: Callable[[str], Any] | None = None
        #: internal: what this agent's runs work out on a tool failure and reuse (pure
        #: values, checked against what is in force before each use)
        self.run_memo = Resolutions()
        self.refresh_specs()

    def refresh_specs(self) -> None:
        """Recompute `tool_specs`, what the model is told of the tools (after an override)."""
        self.tool_specs: list[ToolSpec] = [t.spec for t in self.tools.values()] + [
            BUILTIN_TOOLS[n].spec for n in self.builtin_tools
        ]

    @property
    def fixer_function(self) -> Callable[[str], Any] | None:
        """The function of an `Agent.from_function` agent; None for a model-driven one."""
        return self._function

    def override(
        self,
        model: Model | str | None = None,
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] | None = None,
        instructions: str | None = None,
    ) -> Override:
        """Swap this agent's model, tools or instructions within a ``with`` block.

        ```python
        with app.agent.override(model=af.ScriptedModel([af.say("hi")])):
            assert app.answer("hello") == "hi"      # the app's own agent, scripted
        ```

        ``None`` keeps a part as it is; ``tools`` replaces the whole list. Works as ``with``
        and ``async with``; nested blocks restore in order. Only code in the same context
        sees it (the thread or task that entered the block, and tasks it starts), so
        concurrent tests and tasks never see each other's overrides. A run reads the
        overrides when it starts.
        """
        return Override(self, model, tools, instructions)

    @classmethod
    def from_function(cls, name: str, function: Callable[[str], Any]) -> Agent[Any]:
        """A deterministic agent that answers by calling ``function`` (zero LLM calls).

        As a fixer, ``function`` receives the raw arguments string and returns corrected
        arguments (a JSON string, or a dict). It may raise `EscalationError` (soft) or
        `ToolExecutionError` (hard).
        """
        if not callable(function):
            raise UsageError(f"Agent.from_function({name!r}, ...): give a callable")
        agent: Agent[Any] = cls(name)
        agent._function = function
        return agent

    def __repr__(self) -> str:
        model = model_name(self.model) if self.model is not None else None
        return f"<Agent {self.name!r} model={model!r} tools={list(self.tools)}>"

    @property
    def clock(self) -> Clock:
        """The clock this agent waits on: its own, or the default in force when it runs."""
        return self._clock if self._clock is not None else default_clock()

    # ------------------------------------------------------------------ running

    def run(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Message] | None = None,
        cancel: CancelToken | None = None,
    ) -> RunResult[OutputT]:
        """Run the agent to its answer (blocking)."""
        __tracebackhide__ = True
        return drive(run_steps(effective(self), prompt, messages, cancel, None))

    async def arun(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Message] | None = None,
        cancel: CancelToken | None = None,
    ) -> RunResult[OutputT]:
        """Run the agent to its answer without blocking the event loop."""
        __tracebackhide__ = True
        return await adrive(run_steps(effective(self), prompt, messages, cancel, None))

    def __call__(self, prompt: str) -> OutputT:
        """Shorthand for ``agent.run(prompt).output``."""
        __tracebackhide__ = True
        return self.run(prompt).output

    def loop_until(
        self,
        predicate: Callable[[RunResult[OutputT]], bool],
        max_iterations: int = 3,
        *,
        feedback: str = "That is not finished yet. Keep going.",
    ) -> Loop[OutputT]:
        """Run this agent again, in the same conversation, until ``predicate(result)`` holds.

        ```python
        result = agent.loop_until(lambda r: "DONE" in r.output, max_iterations=5).run("...")
        ```

        Each further iteration sends ``feedback`` as a user message. If the predicate never
        holds, the last result comes back with status ``"max_iterations"``.
        """
        return Loop(self, predicate, max_iterations, feedback)

    def fixer_steps(
        self, parent: Any, tool: Tool[Any, Any], error: Exception, raw: str
    ) -> Steps[Any]:
        """The steps of one round of this agent as an LLM fixer for ``tool`` (see `af.fix`)."""
        return fixer_steps(self, parent, tool, error, raw)


#: the clocks of this package: a clock of another class is checked by what it has
_CLOCKS: Final = (RealClock, VirtualClock)


def _is_clock(clock: object) -> bool:
    return all(callable(getattr(clock, name, None)) for name in ("now", "sleep", "asleep"))


class Loop(Generic[OutputT]):
    """An agent run repeated until a predicate holds; see `Agent.loop_until`."""

    def __init__(
        self,
        agent: Agent[OutputT],
        predicate: Callable[[RunResult[OutputT]], bool],
        max_iterations: int,
        feedback: str,
    ) -> None:
        if not callable(predicate):
            raise UsageError("loop_until(predicate, ...): predicate must be a callable(RunResult)")
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int):
            raise UsageError(f"loop_until(max_iterations={max_iterations!r}): give an int >= 1")
        if max_iterations < 1:
            raise UsageError(f"loop_until(max_iterations={max_iterations}): give an int >= 1")
        self.agent = agent
        self.predicate = predicate
        self.max_iterations = max_iterations
        self.feedback = feedback

    def run(self, prompt: str, *, cancel: CancelToken | None = None) -> RunResult[OutputT]:
        """Iterate synchronously."""
        __tracebackhide__ = True
        return drive(self._steps(prompt, cancel))

    async def arun(self, prompt: str, *, cancel: CancelToken | None = None) -> RunResult[OutputT]:
        """Iterate asynchronously."""
        __tracebackhide__ = True
        return await adrive(self._steps(prompt, cancel))

    def __call__(self, prompt: str) -> OutputT:
        """Shorthand for ``loop.run(prompt).output``."""
        __tracebackhide__ = True
        return self.run(prompt).output

    def _steps(self, prompt: str, cancel: CancelToken | None) -> Steps[RunResult[OutputT]]:
        __tracebackhide__ = True
        trace = Trace()
        messages: list[Message] | None = None
        usage = Usage()
        result: RunResult[OutputT] | None = None
        for iteration in range(1, self.max_iterations + 1):
            text = prompt if iteration == 1 else self.feedback
            agent = effective(self.agent)
            result = yield from run_steps(agent, text, messages, cancel, None, trace)
            usage.add(result.usage)
            result.usage = usage
            if result.status != "ok" or self._satisfied(result):
                return result
            messages = result.messages
        assert result is not None
        result.status = "max_iterations"
        return result

    def _satisfied(self, result: RunResult[OutputT]) -> bool:
        try:
            return bool(self.predicate(result))
        except Exception:
            # A callback never breaks a run: the failure is logged and counts as "not yet".
            logger.exception("loop_until predicate raised; treating it as not satisfied")
            return False
