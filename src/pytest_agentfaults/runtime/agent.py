"""`Agent`: the loop that calls the model, runs tools, and recovers from their failures.

```python
agent = af.Agent(name="bot", model=model, tools=[fetch],
                 resilience=af.ResilienceConfig(max_retries=2))
result = agent.run("Summarise https://example.com")
result.output, result.status, result.trace.retries("fetch")
```
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict

from pytest_agentfaults.errors import (
    BudgetExceededError,
    MalformedResponseError,
    UsageError,
)
from pytest_agentfaults.runtime import _loop
from pytest_agentfaults.runtime._budget import TOKEN_LIMITS, check_tokens
from pytest_agentfaults.runtime._log import logger
from pytest_agentfaults.runtime._loop import ModelCall, Sleep, Steps
from pytest_agentfaults.runtime._override import Override, effective
from pytest_agentfaults.runtime._parallel import (
    JitterTurn,
    Parallel,
    branch_jitter,
    with_jitter,
)
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime._toolcalls import (
    _PASS_THROUGH,
    BUILTIN_TOOLS,
    ToolCalls,
    _Cancelled,
    _preview,
)
from pytest_agentfaults.runtime.backoff import ResilienceConfig, jitter_rng
from pytest_agentfaults.runtime.clock import Clock, default_clock
from pytest_agentfaults.runtime.decisions import LlmErrorDecision
from pytest_agentfaults.runtime.events import ErrorRecord, Observer, Trace
from pytest_agentfaults.runtime.models.base import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
)
from pytest_agentfaults.runtime.output import OutputSpec, check_substitute, soft_failure
from pytest_agentfaults.runtime.policy import (
    OnError,
    check_on_tool_error,
)
from pytest_agentfaults.runtime.tools import Tool, ToolFailure, as_tool, render_result

__all__ = [
    "BUILTIN_TOOLS",
    "Agent",
    "Budget",
    "CancelToken",
    "Loop",
    "RunResult",
    "RunStatus",
    "Usage",
]

RunStatus = Literal["ok", "max_iterations", "cancelled", "budget_exceeded"]
LlmErrorHandler = Callable[[Exception, int], LlmErrorDecision]


class Budget(BaseModel):
    """Caps on one run; reaching one ends the run softly (no exception).

    The run records a ``budget.exceeded`` event and ends with status ``"max_iterations"``
    for the turn and call caps, ``"budget_exceeded"`` for the token caps.

    ``max_turns`` counts model turns (answers used by the loop); ``max_llm_calls`` every
    model call, retries and fallbacks included; ``max_tool_calls`` the tool calls the model
    asks for. ``max_input_tokens``, ``max_output_tokens`` and ``max_total_tokens`` count the
    tokens the model clients report (LLM fixers included); the run ends after the answer
    that crosses one, or before a call when one is already reached.

    ```python
    budget = af.Budget(max_turns=10, max_total_tokens=20_000)
    ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int | None = 10
    max_llm_calls: int | None = None
    max_tool_calls: int | None = None
    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None

    def __init__(self, **data: Any) -> None:
        for key, value in data.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise UsageError(f"Budget({key}={value!r}): give an int >= 1, or None for no cap")
        try:
            super().__init__(**data)
        except ValueError as exc:
            raise UsageError(f"invalid Budget: {exc}") from exc


@dataclass(slots=True)
class Usage:
    """What one run consumed.

    ``llm_calls`` counts every model call (retries, fallbacks and LLM fixers included);
    ``tool_calls`` the tool calls the model asked for; ``retries`` every tool, LLM and
    output-correction retry; ``fixer_calls`` the fixer rounds. A plain dataclass: the loop
    bumps these counters on every step.
    """

    llm_calls: int = 0
    tool_calls: int = 0
    retries: int = 0
    fixer_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to these."""
        for name in _USAGE_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))


_USAGE_FIELDS: Final = tuple(f.name for f in fields(Usage))


class CancelToken:
    """Cancel a run from a callback, another thread or a tool.

    ```python
    token = af.CancelToken()
    result = agent.run("...", cancel=token)      # token.cancel() elsewhere -> "cancelled"
    ```
    """

    __slots__ = ("_cancelled", "reason")

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """Whether `cancel` was called."""
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop at its next step."""
        self.reason = reason
        self._cancelled = True


@dataclass(slots=True)
class RunResult:
    """The outcome of one run: output, status, trace, messages and usage."""

    output: Any
    status: RunStatus
    trace: Trace
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    run_id: str = ""

    @property
    def ok(self) -> bool:
        """True when the run finished normally."""
        return self.status == "ok"


# ---------------------------------------------------------------------------- built-ins


# ---------------------------------------------------------------------------- agent


class Agent:
    """An LLM agent with tools and a recovery policy for each kind of failure.

    ``run()`` and ``arun()`` share one implementation, so their semantics are identical.
    """

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
        self.tools = _tool_table(tools)
        self.builtin_tools = _check_builtins(builtin_tools, self.tools)
        if resilience is not None and not isinstance(resilience, ResilienceConfig):
            raise UsageError(f"resilience must be af.ResilienceConfig(...), got {resilience!r}")
        self.resilience = resilience or ResilienceConfig()
        self.on_tool_error = check_on_tool_error(on_tool_error)
        unknown = sorted(set(self.on_tool_error) - set(self.tools) - set(self.builtin_tools))
        if unknown:
            raise UsageError(
                f"on_tool_error names unknown tool(s) {', '.join(unknown)}; "
                f"the agent's tools are {', '.join(self.tools) or '(none)'}"
            )
        if tool_defaults is not None and not isinstance(tool_defaults, OnError):
            raise UsageError(f"tool_defaults must be af.OnError(...), got {tool_defaults!r}")
        self.tool_defaults = tool_defaults
        if on_llm_error is not None and not callable(on_llm_error):
            raise UsageError("on_llm_error must be a callable (exc, attempt) -> LlmErrorDecision")
        self.on_llm_error = on_llm_error
        self.output_type = output_type
        self._output = None if output_type is str else OutputSpec(output_type)
        if budget is not None and not isinstance(budget, Budget):
            raise UsageError(f"budget must be af.Budget(...), got {budget!r}")
        self.budget = budget or Budget()
        self._clock = clock
        self.observers = _observers(observer)
        self.stream = stream
        self._function: Callable[[str], Any] | None = None
        self._refresh_specs()

    def _refresh_specs(self) -> None:
        self._specs = [t.spec for t in self.tools.values()] + [
            BUILTIN_TOOLS[n].spec for n in self.builtin_tools
        ]

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
    def from_function(cls, name: str, function: Callable[[str], Any]) -> Agent:
        """A deterministic agent that answers by calling ``function`` (zero LLM calls).

        As a fixer, ``function`` receives the raw arguments string and returns corrected
        arguments (a JSON string, or a dict). It may raise `EscalationError` (soft) or
        `ToolExecutionError` (hard).
        """
        if not callable(function):
            raise UsageError(f"Agent.from_function({name!r}, ...): give a callable")
        agent = cls(name)
        agent._function = function
        return agent

    def __repr__(self) -> str:
        model = _loop._model_name(self.model) if self.model is not None else None
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
    ) -> RunResult:
        """Run the agent to its answer (blocking)."""
        return _loop.drive(effective(self)._steps(prompt, messages, cancel, None))

    async def arun(
        self,
        prompt: str | None = None,
        *,
        messages: Sequence[Message] | None = None,
        cancel: CancelToken | None = None,
    ) -> RunResult:
        """Run the agent to its answer without blocking the event loop."""
        return await _loop.adrive(effective(self)._steps(prompt, messages, cancel, None))

    def __call__(self, prompt: str) -> Any:
        """Shorthand for ``agent.run(prompt).output``."""
        return self.run(prompt).output

    def loop_until(
        self,
        predicate: Callable[[RunResult], bool],
        max_iterations: int = 3,
        *,
        feedback: str = "That is not finished yet. Keep going.",
    ) -> Loop:
        """Run this agent again, in the same conversation, until ``predicate(result)`` holds.

        ```python
        result = agent.loop_until(lambda r: "DONE" in r.output, max_iterations=5).run("...")
        ```

        Each further iteration sends ``feedback`` as a user message. If the predicate never
        holds, the last result comes back with status ``"max_iterations"``.
        """
        return Loop(self, predicate, max_iterations, feedback)

    def _steps(
        self,
        prompt: str | None,
        messages: Sequence[Message] | None,
        cancel: CancelToken | None,
        parent: Recorder | None,
        trace: Trace | None = None,
    ) -> Steps[RunResult]:
        history = _initial_messages(self, prompt, messages)
        clock = self._clock if self._clock is not None else default_clock()
        recorder = Recorder(
            agent=self.name, clock=clock, observers=self.observers, parent=parent, trace=trace
        )
        return _Run(self, history, recorder, cancel or CancelToken()).main()

    def _fixer_step(
        self, parent: ToolCalls, tool: Tool[Any, Any], error: Exception, raw: str
    ) -> Steps[Any]:
        """Run this agent (an LLM fixer) for ``tool``; returns corrected arguments.

        A function fixer never comes here: `ToolCalls.run_function_fixer` calls it directly.
        """
        agent = effective(self)
        if agent.model is None:
            raise UsageError(f"fixer agent {self.name!r} has no model and no function")
        prompt = (
            f"The tool {tool.name!r} failed.\n"
            f"Error: {type(error).__name__}: {error}\n"
            f"Raw arguments, as the model sent them:\n{raw}\n"
            f"The tool's argument schema:\n{json.dumps(tool.parameters)}\n"
            "Reply with only the corrected arguments as one JSON object."
        )
        clock = parent.clock
        recorder = Recorder(
            agent=self.name, clock=clock, observers=self.observers, parent=parent.rec
        )
        run = _Run(agent, _initial_messages(agent, prompt, None), recorder, parent.cancel)
        result = yield from run.main()
        parent.absorb(run)
        return result.output


class Loop:
    """An agent run repeated until a predicate holds; see `Agent.loop_until`."""

    def __init__(
        self,
        agent: Agent,
        predicate: Callable[[RunResult], bool],
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

    def run(self, prompt: str, *, cancel: CancelToken | None = None) -> RunResult:
        """Iterate synchronously."""
        return _loop.drive(self._steps(prompt, cancel))

    async def arun(self, prompt: str, *, cancel: CancelToken | None = None) -> RunResult:
        """Iterate asynchronously."""
        return await _loop.adrive(self._steps(prompt, cancel))

    def __call__(self, prompt: str) -> Any:
        """Shorthand for ``loop.run(prompt).output``."""
        return self.run(prompt).output

    def _steps(self, prompt: str, cancel: CancelToken | None) -> Steps[RunResult]:
        trace = Trace()
        messages: list[Message] | None = None
        usage = Usage()
        result: RunResult | None = None
        for iteration in range(1, self.max_iterations + 1):
            text = prompt if iteration == 1 else self.feedback
            agent = effective(self.agent)
            result = yield from agent._steps(text, messages, cancel, None, trace)
            usage.add(result.usage)
            result.usage = usage
            if result.status != "ok" or self._satisfied(result):
                return result
            messages = result.messages
        assert result is not None
        result.status = "max_iterations"
        return result

    def _satisfied(self, result: RunResult) -> bool:
        try:
            return bool(self.predicate(result))
        except Exception:
            # A callback never breaks a run: the failure is logged and counts as "not yet".
            logger.exception("loop_until predicate raised; treating it as not satisfied")
            return False


def invoke_tool(
    tool: Tool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    *,
    config: ResilienceConfig | None,
    clock: Clock | None,
) -> Any:
    """`Tool.invoke`: validate and run one tool through its recovery policy."""
    return _loop.drive(_standalone(tool, arguments, config, clock))


async def ainvoke_tool(
    tool: Tool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    *,
    config: ResilienceConfig | None,
    clock: Clock | None,
) -> Any:
    """`Tool.ainvoke`: the async twin of `invoke_tool`."""
    return await _loop.adrive(_standalone(tool, arguments, config, clock))


def _standalone(
    tool: Tool[Any, Any],
    arguments: str | Mapping[str, Any] | None,
    config: ResilienceConfig | None,
    clock: Clock | None,
) -> Steps[Any]:
    agent = Agent(f"tool:{tool.name}", tools=[tool], resilience=config, clock=clock)
    run = _Run(agent, [], Recorder(agent=agent.name, clock=agent.clock), CancelToken())
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    outcome = yield from run.tool_call(ToolCall(id="invoke", name=tool.name, arguments=raw))
    if outcome.error is not None and not isinstance(outcome.error, ToolFailure):
        raise outcome.error
    return outcome.value


# ---------------------------------------------------------------------------- one run


class _Run(ToolCalls):
    """The state of one run, and the generator methods that make it progress."""

    def __init__(
        self, agent: Agent, messages: list[Message], rec: Recorder, cancel: CancelToken
    ) -> None:
        self.agent = agent
        self.messages = messages
        self.rec = rec
        self.clock = rec.clock
        self.cancel = cancel
        self.usage = Usage()
        self.turns = 0
        self.corrections = 0
        self.fell_back = False
        budget = agent.budget
        self.token_caps = (
            budget.max_input_tokens is not None
            or budget.max_output_tokens is not None
            or budget.max_total_tokens is not None
        )
        self._rng: Any = None
        self._record: tuple[object, ErrorRecord] | None = None

    def absorb(self, child: _Run) -> None:
        """Count a nested run's model and tool use in this run's usage."""
        mine, theirs = self.usage, child.usage
        mine.llm_calls += theirs.llm_calls
        mine.input_tokens += theirs.input_tokens
        mine.output_tokens += theirs.output_tokens

    def uniform(self) -> float:
        stream = branch_jitter(self) or self.jitter()
        return float(stream.random())

    def jitter(self) -> Any:
        """The run's random stream for jitter, made on first use."""
        if self._rng is None:
            self._rng = jitter_rng()
        return self._rng

    # ------------------------------------------------------------------ the loop

    def main(self) -> Steps[RunResult]:
        agent, rec = self.agent, self.rec
        rec.emit("run.start", detail=_preview(self.messages[-1].content if self.messages else ""))
        try:
            if agent._function is not None:
                output = agent._function(self.messages[-1].content if self.messages else "")
                return self.finish("ok", output)
            if agent.model is None:
                raise UsageError(f"agent {agent.name!r} has no model; pass model=... to Agent()")
            while True:
                if self.stopping():
                    return self.cancelled()
                response = yield from self.model_turn()
                self.messages.append(response.message)
                calls = response.message.tool_calls
                if not calls:
                    if agent._output is None:
                        return self.finish("ok", response.message.content)
                    checked = yield from self.check_output(response)
                    if isinstance(checked, RunResult):
                        return checked
                    continue
                if len(calls) > 1:
                    yield from self.tool_turn(calls)
                    continue
                # One call (the usual turn): run inline, without the parallel machinery.
                call = calls[0]
                if self.stopping():
                    return self.cancelled()
                self.check_budget("max_tool_calls", self.usage.tool_calls)
                self.usage.tool_calls += 1
                outcome = yield from self.tool_call(call)
                self.messages.append(
                    Message.tool_result(outcome.content, tool_call_id=call.id, name=call.name)
                )
        except BudgetExceededError as exc:
            rec.emit("budget.exceeded", reason=str(exc), status=exc.limit, detail=str(exc.value))
            status: RunStatus = "budget_exceeded" if exc.limit in TOKEN_LIMITS else "max_iterations"
            return self.finish(status, self.last_text() if agent._output is None else None)
        except _Cancelled:
            return self.cancelled()
        except GeneratorExit:
            raise
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            # Task cancellation and Ctrl-C are recorded, then re-raised: swallowing them
            # would break the caller's task group or shutdown.
            rec.emit("run.cancelled", reason=type(exc).__name__)
            rec.emit("run.end", status="cancelled")
            raise
        except BaseException as exc:
            rec.emit("run.end", status="error", error=ErrorRecord.from_exception(exc))
            raise

    def tool_turn(self, calls: list[ToolCall]) -> Steps[None]:
        """Run several tool calls of one turn (together in ``arun``), in the model's order."""
        turn = JitterTurn(self.jitter)
        branches = [
            with_jitter(self, turn, index, self.counted_call(call))
            for index, call in enumerate(calls)
        ]
        outcomes: list[tuple[bool, Any]] = yield Parallel(branches, self.clock, self.rec.trace)
        for call, (ok, outcome) in zip(calls, outcomes, strict=False):
            if not ok:
                raise outcome
            self.messages.append(
                Message.tool_result(outcome.content, tool_call_id=call.id, name=call.name)
            )

    def counted_call(self, call: ToolCall) -> Steps[Any]:
        if self.stopping():
            raise _Cancelled
        self.check_budget("max_tool_calls", self.usage.tool_calls)
        self.usage.tool_calls += 1
        return (yield from self.tool_call(call))

    def finish(self, status: RunStatus, output: Any) -> RunResult:
        shown = None if output is None else _preview(render_result(output))
        self.rec.emit("run.end", status=status, detail=shown)
        return RunResult(
            output=output,
            status=status,
            trace=self.rec.trace,
            messages=self.messages,
            usage=self.usage,
            run_id=self.rec.run_id,
        )

    def check_output(self, response: ModelResponse) -> Steps[RunResult | None]:
        """Validate a final answer against ``output_type``; correct, fall back, or give up.

        Returns the finished `RunResult`, or None after sending a correction message.
        """
        agent, rec = self.agent, self.rec
        spec = agent._output
        assert spec is not None
        try:
            return self.finish("ok", spec.parse(response.message.content))
        except MalformedResponseError as exc:
            failure = exc
        config = agent.resilience
        rec.emit("llm.error", error=ErrorRecord.from_exception(failure), detail="output_type")
        if self.corrections < config.max_retries:
            self.corrections += 1
            rec.emit(
                "llm.retry",
                attempt=self.corrections + 1,
                max_attempts=config.max_retries + 1,
                detail="output correction",
                error=ErrorRecord.from_exception(failure),
            )
            self.messages.append(Message.user(spec.correction(failure)))
            return None
        if config.fallback_model is not None and not self.fell_back:
            self.fell_back = True
            self.check_budget("max_llm_calls", self.usage.llm_calls)
            # The fallback is told why: its request ends with the failure and the schema
            # expected, never with the bad answer (Anthropic would continue it as a prefill).
            self.messages.append(Message.user(spec.correction(failure)))
            fallback = yield from self.call_fallback(config.fallback_model, failure)
            self.messages.append(fallback.message)
            try:
                return self.finish("ok", spec.parse(fallback.message.content))
            except MalformedResponseError as exc:
                rec.emit("llm.error", error=ErrorRecord.from_exception(exc), detail="output_type")
                failure = exc
        if config.on_exhaustion == "raise":
            raise failure
        return self.finish("max_iterations", None)

    def cancelled(self) -> RunResult:
        self.rec.emit("run.cancelled", reason=self.cancel.reason)
        return self.finish("cancelled", self.last_text())

    def last_text(self) -> str | None:
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content:
                return message.content
        return None

    def stopping(self) -> bool:
        return self.cancel.cancelled

    def check_cancel(self) -> None:
        if self.stopping():
            raise _Cancelled

    def check_budget(self, limit: str, used: int) -> None:
        cap = getattr(self.agent.budget, limit)
        if cap is not None and used >= cap:
            raise BudgetExceededError(f"budget {limit}={cap} reached", limit=limit, value=cap)

    # ------------------------------------------------------------------ model turns

    def model_turn(self) -> Steps[ModelResponse]:
        agent, rec = self.agent, self.rec
        self.check_budget("max_turns", self.turns)
        attempt = 1
        while True:
            self.check_budget("max_llm_calls", self.usage.llm_calls)
            try:
                response = yield from self.call_model(agent.model, attempt)  # type: ignore[arg-type]
            except _PASS_THROUGH:
                raise
            except Exception as exc:
                decision = self.decide(exc, attempt)
                delay = decision.delay(attempt, exc) if decision.action == "retry" else None
                if delay is not None and attempt < decision.max_attempts:
                    rec.emit(
                        "llm.retry",
                        attempt=attempt + 1,
                        max_attempts=decision.max_attempts,
                        delay=delay,
                        error=ErrorRecord.from_exception(exc),
                    )
                    self.usage.retries += 1
                    yield Sleep(self.clock, delay)
                    self.check_cancel()
                    attempt += 1
                    continue
                if decision.action == "respond_with":
                    check_substitute(agent.name, agent._output, decision.output, exc)
                    response = ModelResponse(
                        message=Message.assistant(render_result(decision.output)),
                        finish_reason="stop",
                        model="on_llm_error",
                    )
                    rec.emit("llm.response", attempt=attempt, detail="respond_with: substituted")
                    self.turns += 1
                    return response
                fallback = self.agent.resilience.fallback_model
                if fallback is not None:
                    response = yield from self.call_fallback(fallback, exc)
                    self.turns += 1
                    return response
                raise
            self.turns += 1
            return response

    def call_model(self, model: Model, attempt: int) -> Steps[ModelResponse]:
        agent, rec = self.agent, self.rec
        request = ModelRequest(
            messages=list(self.messages),
            tools=agent._specs,
            stream=agent.stream,
            output_schema=agent._output.schema if agent._output is not None else None,
            clock=self.clock,
            emit=rec.emit,
            agent=agent.name,
        )
        name = _loop._model_name(model)
        if self.token_caps:
            check_tokens(agent.budget, self.usage, before_call=True)
        rec.emit("llm.request", attempt=attempt, detail=name)
        self.usage.llm_calls += 1
        try:
            response: ModelResponse = yield ModelCall(model, request)
            _check_soft_failure(response, name)
        except Exception as exc:
            rec.emit("llm.error", attempt=attempt, error=ErrorRecord.from_exception(exc))
            raise
        usage = response.usage
        self.usage.input_tokens += usage.input_tokens
        self.usage.output_tokens += usage.output_tokens
        rec.emit(
            "llm.response",
            attempt=attempt,
            status=response.finish_reason,
            detail=_describe_response(response),
        )
        if self.token_caps:
            check_tokens(agent.budget, self.usage, before_call=False)
        return response

    def call_fallback(self, fallback: Any, primary_error: Exception) -> Steps[ModelResponse]:
        model = as_model(fallback)
        self.rec.emit(
            "fallback",
            detail=_loop._model_name(model),
            error=ErrorRecord.from_exception(primary_error),
        )
        try:
            return (yield from self.call_model(model, 1))
        except _PASS_THROUGH:
            raise
        except Exception:
            raise primary_error from None

    def decide(self, exc: Exception, attempt: int) -> LlmErrorDecision:
        handler = self.agent.on_llm_error
        if handler is None:
            return LlmErrorDecision.rethrow()
        try:
            decision: object = handler(exc, attempt)
        except Exception:
            logger.exception("on_llm_error raised; the original error is re-raised")
            return LlmErrorDecision.rethrow()
        if not isinstance(decision, LlmErrorDecision):
            logger.error(
                "on_llm_error returned %r, not an af.LlmErrorDecision; treating it as rethrow",
                decision,
            )
            return LlmErrorDecision.rethrow()
        return decision

    # ------------------------------------------------------------------ tool calls


# ---------------------------------------------------------------------------- helpers


def _check_soft_failure(response: ModelResponse, model: str) -> None:
    error = soft_failure(response, model)
    if error is not None:
        raise error


def _describe_response(response: ModelResponse) -> str:
    calls = response.message.tool_calls
    if calls:
        return "tool calls: " + ", ".join(call.name for call in calls)
    return _preview(response.message.content)


def _initial_messages(
    agent: Agent, prompt: str | None, messages: Sequence[Message] | None
) -> list[Message]:
    history = list(messages or [])
    if agent.instructions and not any(m.role == "system" for m in history):
        history.insert(0, Message.system(agent.instructions))
    if prompt is not None:
        history.append(Message.user(prompt))
    if not history or history[-1].role not in ("user", "tool"):
        raise UsageError("run() needs a prompt (or messages ending with a user message)")
    return history


def _tool_table(tools: Iterable[Tool[Any, Any] | Callable[..., Any]]) -> dict[str, Tool[Any, Any]]:
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):  # type: ignore[unreachable]
        raise UsageError(f"tools must be a list of tools or functions, got {tools!r}")
    table: dict[str, Tool[Any, Any]] = {}
    for item in tools:
        made = as_tool(item)
        if made.name in table:
            raise UsageError(
                f"two tools are named {made.name!r}; give one of them another name with "
                "@af.tool(name=...)"
            )
        table[made.name] = made
    return table


def _check_builtins(names: Iterable[str], tools: Mapping[str, Tool[Any, Any]]) -> tuple[str, ...]:
    if isinstance(names, str):
        names = (names,)
    chosen: list[str] = []
    for name in names:
        if name not in BUILTIN_TOOLS:
            raise UsageError(
                f"builtin_tools: unknown built-in {name!r}; the built-ins are "
                f"{', '.join(BUILTIN_TOOLS)}"
            )
        if name in tools:
            raise UsageError(
                f"builtin_tools: {name!r} is also the name of one of your tools; rename yours"
            )
        if name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def _observers(observer: str | Observer | None) -> tuple[Observer, ...]:
    if observer is None:
        return ()
    if isinstance(observer, str):
        from pytest_agentfaults.runtime.observers import named_observer  # noqa: PLC0415

        return (named_observer(observer),)
    if callable(observer):
        return (observer,)
    raise UsageError(
        f"observer must be None, 'progress', 'detailed' or a callable(Event), got {observer!r}"
    )


def as_model(model: Model | str) -> Model:
    """``model`` itself when it is an `af.Model`; a model string resolved to its client."""
    if isinstance(model, str):
        try:
            from pytest_agentfaults.runtime.models.resolve import (  # noqa: PLC0415
                resolve_model,
            )
        except ImportError as exc:  # pragma: no cover - the module ships with the package
            raise UsageError(f"cannot resolve model string {model!r}: {exc}") from exc
        resolved: Model = resolve_model(model)
        return resolved
    has_sync = callable(getattr(model, "request", None))
    has_async = callable(getattr(model, "arequest", None))
    if not (has_sync or has_async):
        raise UsageError(
            f"model {model!r} is not an af.Model: it needs request(req) and/or arequest(req), "
            "or pass a string such as 'openai:gpt-4o-mini'"
        )
    return model
