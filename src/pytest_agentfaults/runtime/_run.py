"""One run of an agent: the loop, model turns, output correction and fallback.

`Run.main` is a step generator (see `_drivers`): it yields effects, and `drive` or
`adrive` performs them. The tool calls of a turn go to the run's `ToolCalls` pipeline.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults.errors import (
    NEVER_RECOVERED,
    BudgetExceededError,
    MalformedResponseError,
    UsageError,
)
from pytest_agentfaults.runtime._budget import TOKEN_LIMITS, Meter, check_tokens
from pytest_agentfaults.runtime._components import BUILTIN_TOOLS, fallback_model_of
from pytest_agentfaults.runtime._drivers import Sleep, Steps, model_name
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.runtime._log import logger
from pytest_agentfaults.runtime._override import effective
from pytest_agentfaults.runtime._parallel import JitterTurn, Parallel, branch_jitter, with_jitter
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime._result import CancelToken, RunResult, RunStatus, Usage
from pytest_agentfaults.runtime._tool import BaseTool
from pytest_agentfaults.runtime._toolcalls import Cancelled, ToolCalls
from pytest_agentfaults.runtime._unrun import answer_unrun_calls
from pytest_agentfaults.runtime.backoff import jitter_rng
from pytest_agentfaults.runtime.decisions import LlmErrorDecision
from pytest_agentfaults.runtime.events import ErrorRecord, Trace
from pytest_agentfaults.runtime.hooks import ModelCall
from pytest_agentfaults.runtime.models.base import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    tool_message,
    user_message,
)
from pytest_agentfaults.runtime.output import (
    check_substitute,
    preview,
    read_answer,
    render_result,
)

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.agent import Agent

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Run", "fixer_steps", "initial_messages", "run_steps"]


def run_steps(
    agent: Agent[Any],
    prompt: str | None,
    messages: Sequence[Message] | None,
    cancel: CancelToken | None,
    parent: Recorder | None,
    trace: Trace | None = None,
) -> Steps[RunResult[Any]]:
    """The steps of one run of ``agent`` (overrides already applied)."""
    __tracebackhide__ = True
    history = initial_messages(agent, prompt, messages)
    # Positional (agent, clock, trace, observers, parent): keywords given to a class go
    # through a dict of them
    recorder = Recorder(agent.name, agent.clock, trace, agent.observers, parent)
    return Run(agent, history, recorder, cancel or CancelToken()).main()


def fixer_steps(
    fixer: Agent[Any], parent: ToolCalls, tool: BaseTool[Any, Any], error: Exception, raw: str
) -> Steps[Any]:
    """Run ``fixer`` (an LLM fixer) for ``tool`` inside ``parent``; returns its answer.

    A function fixer never comes here: `ToolCalls.run_function_fixer` calls it directly.
    """
    __tracebackhide__ = True
    agent = effective(fixer)
    if agent.model is None:
        raise UsageError(f"fixer agent {fixer.name!r} has no model and no function")
    prompt = (
        f"The tool {tool.name!r} failed.\n"
        f"Error: {type(error).__name__}: {exception_text(error)}\n"
        f"Raw arguments, as the model sent them:\n{raw}\n"
        f"The tool's argument schema:\n{json.dumps(tool.parameters)}\n"
        "Reply with only the corrected arguments as one JSON object."
    )
    clock = parent.clock
    recorder = Recorder(agent=fixer.name, clock=clock, observers=fixer.observers, parent=parent.rec)
    cancel = parent.cancel if parent.cancel is not None else CancelToken()
    run = Run(agent, initial_messages(agent, prompt, None), recorder, cancel)
    result = yield from run.main()
    parent.absorb(run.usage)
    return result.output


class Jitter:
    """A run's jitter draws in [0, 1): from its parallel call's stream, else the run's own."""

    __slots__ = ("_rng", "parallel")

    def __init__(self) -> None:
        self._rng: Any = None
        #: whether the run ever had a parallel turn (`Run.tool_turn`): only then may a
        #: draw come from a parallel call's own stream
        self.parallel = False

    def __call__(self) -> float:
        stream = (branch_jitter(self) if self.parallel else None) or self._rng or self.stream()
        return stream.random()

    def stream(self) -> Any:
        """The run's random stream for jitter, made on first use."""
        if self._rng is None:
            self._rng = jitter_rng()
        return self._rng


class Run:
    """The state of one run, and the generator methods that make it progress.

    It owns its tool-call pipeline (`ToolCalls`), which shares its usage counters, clock,
    recorder and cancel token.
    """

    def __init__(
        self, agent: Agent[Any], messages: list[Message], rec: Recorder, cancel: CancelToken
    ) -> None:
        self.agent = agent
        self.messages = messages
        self.rec = rec
        self.clock = clock = rec.clock
        self.cancel = cancel
        self.usage = usage = Usage()
        self.meter = Meter(agent.budget, usage)  # a combinator's further calls, in the budget
        # Not a bound method of the run: the pipeline and every model request hold it, and
        # a run held by what it holds is freed by the garbage collector, not at once.
        self.uniform = uniform = Jitter()
        # Positional, in parameter order (tools, resilience, clock, rec, uniform, builtins,
        # on_tool_error, tool_defaults, usage, cancel, memo): keywords given to a class
        # go through a dict of them, ~450 instructions each.
        self.calls = ToolCalls(
            agent.tools,
            agent.resilience,
            clock,
            rec,
            uniform,
            {name: BUILTIN_TOOLS[name] for name in agent.builtin_tools}
            if agent.builtin_tools
            else None,
            agent.on_tool_error,
            agent.tool_defaults,
            usage,
            cancel,
            agent.run_memo,
        )
        self.turns = 0
        self.corrections = 0
        self.fell_back = False
        # The budget's caps, read once: a pydantic model's field values are its __dict__,
        # and each attribute read of a model goes the slow way (the run checks a cap at
        # every turn, model call and tool call).
        self.caps = caps = agent.budget.__dict__
        self.token_caps = (
            caps["max_input_tokens"] is not None
            or caps["max_output_tokens"] is not None
            or caps["max_total_tokens"] is not None
        )

    # ------------------------------------------------------------------ the loop

    def main(self) -> Steps[RunResult[Any]]:
        __tracebackhide__ = True
        agent, rec, cancel = self.agent, self.rec, self.cancel
        # `initial_messages` refuses an empty history: the last message is the prompt.
        prompt = self.messages[-1].content
        rec.run_start(redact(preview(prompt)), agent.tools)
        try:
            if agent.fixer_function is not None:
                output = agent.fixer_function(prompt)
                return self.finish("ok", output)
            if agent.model is None:
                raise UsageError(f"agent {agent.name!r} has no model; pass model=... to Agent()")  # noqa: TRY301
            # The token's flag and the budget's cap, read here: a property and a method call
            # cost more than the check itself, at every turn.
            tool_cap = self.caps["max_tool_calls"]
            while True:
                if cancel._cancelled:  # noqa: SLF001 - `stopping()`, inline
                    return self.cancelled()
                response = yield from self.model_turn()
                message = response.message  # a pydantic model: each read costs a lookup
                self.messages.append(message)
                calls = message.tool_calls
                if not calls:
                    if agent.output_spec is None:
                        return self.finish("ok", message.content)
                    checked = yield from self.check_output(response)
                    if isinstance(checked, RunResult):
                        return checked
                    continue
                if len(calls) > 1:
                    yield from self.tool_turn(calls)
                    continue
                # One call (the usual turn): run inline, without the parallel machinery.
                call = calls[0]
                if self.cancel._cancelled:  # noqa: SLF001 - (not `cancel`: mypy narrowed that)
                    return self.cancelled()
                usage = self.usage
                if tool_cap is not None and usage.tool_calls >= tool_cap:
                    self.over_budget("max_tool_calls")
                usage.tool_calls += 1
                outcome = yield from self.calls.tool_call(call)
                self.messages.append(tool_message(outcome.content, call.id, call.name))
        except BudgetExceededError as exc:
            rec.emit("budget.exceeded", reason=str(exc), status=exc.limit, detail=str(exc.value))
            answer_unrun_calls(self.messages, f"the run stopped: {exc}")
            status: RunStatus = "budget_exceeded" if exc.limit in TOKEN_LIMITS else "max_iterations"
            return self.finish(status, self.last_text() if agent.output_spec is None else None)
        except Cancelled:
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
        __tracebackhide__ = True
        turn = JitterTurn(self.uniform.stream)
        self.uniform.parallel = True  # its calls draw from their own streams (`with_jitter`)
        branches = [
            with_jitter(self.uniform, turn, index, self.counted_call(call))
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
        __tracebackhide__ = True
        if self.stopping():
            raise Cancelled
        self.check_budget("max_tool_calls", self.usage.tool_calls)
        self.usage.tool_calls += 1
        return (yield from self.calls.tool_call(call))

    def finish(self, status: RunStatus, output: Any) -> RunResult[Any]:
        rec = self.rec
        shown = None if output is None else preview(render_result(output))
        rec.run_end(status, None if shown is None else redact(shown))
        # Positional, in field order (output, status, trace, messages, usage, run_id)
        return RunResult(output, status, rec.trace, self.messages, self.usage, rec.run_id)

    def check_output(self, response: ModelResponse) -> Steps[RunResult[Any] | None]:
        """Validate a final answer against ``output_type``; correct, fall back, or give up.

        Returns the finished `RunResult`, or None after sending a correction message.
        """
        __tracebackhide__ = True
        agent, rec = self.agent, self.rec
        spec = agent.output_spec
        assert spec is not None
        try:
            return self.finish("ok", spec.parse(response.message.content))
        except MalformedResponseError as exc:
            failure = exc
        config = agent.resilience
        rec.emit("llm.error", error=ErrorRecord.from_exception(failure), detail="output_type")
        if self.corrections < config.max_retries:
            # A correction is another turn and another call: none is announced (or its
            # message sent) that the budget leaves no room for.
            self.check_budget("max_turns", self.turns)
            self.check_budget("max_llm_calls", self.usage.llm_calls)
            self.corrections += 1
            self.usage.retries += 1
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
            self.check_budget("max_llm_calls", self.usage.llm_calls)  # before the message
            # The fallback is told why: its request ends with the failure and the schema
            # expected, never with the bad answer (Anthropic would continue it as a prefill).
            self.messages.append(Message.user(spec.correction(failure)))
            fallback = yield from self.call_fallback(failure)
            self.messages.append(fallback.message)
            try:
                return self.finish("ok", spec.parse(fallback.message.content))
            except MalformedResponseError as exc:
                rec.emit("llm.error", error=ErrorRecord.from_exception(exc), detail="output_type")
                failure = exc
        if config.on_exhaustion == "raise":
            raise failure
        return self.finish("max_iterations", None)

    def cancelled(self) -> RunResult[Any]:
        reason = self.cancel.reason
        self.rec.emit("run.cancelled", reason=reason)
        answer_unrun_calls(self.messages, f"the run was cancelled ({reason or 'no reason given'})")
        return self.finish("cancelled", self.last_text())

    def last_text(self) -> str | None:
        for message in reversed(self.messages):
            if message.role == "assistant" and message.content:
                return message.content
        return None

    def stopping(self) -> bool:
        return self.cancel.cancelled

    def check_cancel(self) -> None:
        self.calls.check_cancel()

    def check_budget(self, limit: str, used: int) -> None:
        cap = self.caps[limit]
        if cap is not None and used >= cap:
            self.over_budget(limit)

    def over_budget(self, limit: str) -> NoReturn:
        """Raise the `BudgetExceededError` of ``limit``, a cap reached."""
        cap = self.caps[limit]
        raise BudgetExceededError(f"budget {limit}={cap} reached", limit=limit, value=cap)

    # ------------------------------------------------------------------ model turns

    def model_turn(self) -> Steps[ModelResponse]:
        __tracebackhide__ = True
        agent, rec, caps = self.agent, self.rec, self.caps
        # `check_budget`, inline: each turn and each model call checks a cap
        cap = caps["max_turns"]
        if cap is not None and self.turns >= cap:
            self.over_budget("max_turns")
        cap = caps["max_llm_calls"]
        attempt = 1
        while True:
            if cap is not None and self.usage.llm_calls >= cap:
                self.over_budget("max_llm_calls")
            try:
                response = yield from self.call_model(agent.model, attempt)  # type: ignore[arg-type]
            except NEVER_RECOVERED:
                raise
            except Exception as exc:
                self.check_cancel()  # cancelled during the call (its retry wait): no decision
                decision = self.decide(exc, attempt)
                delay = decision.delay(attempt, exc) if decision.action == "retry" else None
                if delay is not None and attempt < decision.max_attempts:
                    if cap is not None and self.usage.llm_calls >= cap:
                        # No call left for the retry: no retry announced, no wait for it.
                        self.over_budget("max_llm_calls")
                    rec.emit(
                        "llm.retry",
                        attempt=attempt + 1,
                        max_attempts=decision.max_attempts,
                        delay=delay,
                        error=ErrorRecord.from_exception(exc),
                    )
                    self.usage.retries += 1
                    self.check_cancel()  # a cancelled run waits for nothing
                    yield Sleep(self.clock, delay, self.cancel)
                    self.check_cancel()
                    attempt += 1
                    continue
                if decision.action == "retry" and attempt >= decision.max_attempts > 1:
                    rec.emit(
                        "llm.exhausted",
                        attempt=attempt,
                        max_attempts=decision.max_attempts,
                        error=ErrorRecord.from_exception(exc),
                    )
                if decision.action == "respond_with":
                    check_substitute(agent.name, agent.output_spec, decision.output, exc)
                    response = ModelResponse(
                        message=Message.assistant(render_result(decision.output)),
                        finish_reason="stop",
                        model="on_llm_error",
                    )
                    rec.emit("llm.response", attempt=attempt, detail="respond_with: substituted")
                    self.turns += 1
                    return response
                if self.agent.resilience.fallback_model is not None:
                    response = yield from self.call_fallback(exc)
                    self.turns += 1
                    return response
                raise
            self.turns += 1
            return response

    def call_model(self, model: Model, attempt: int) -> Steps[ModelResponse]:
        __tracebackhide__ = True
        agent, rec = self.agent, self.rec
        spec = agent.output_spec
        # Positional, in field order (messages, tools, stream, output_schema, clock, emit,
        # agent, jitter, meter, cancel): keywords cost as much as the rest of the construction.
        request = ModelRequest(
            list(self.messages),
            agent.tool_specs,
            agent.stream,
            spec.schema if spec is not None else None,
            self.clock,
            rec.emit,
            agent.name,
            self.uniform,
            self.meter,
            self.cancel,
        )
        name = model_name(model)
        if self.token_caps:
            check_tokens(agent.budget, self.usage, before_call=True)
        rec.llm_request(attempt, redact(name))
        self.usage.llm_calls += 1
        response: ModelResponse | None = None
        try:
            response = yield ModelCall(model, request)
            finish, input_tokens, output_tokens, shown = read_answer(response, name)
        except Exception as exc:
            if response is not None:  # an empty or blocked answer: its tokens were spent
                self.meter.unused(response)
            # A combinator's model that failed has its own `llm.error` already (`recorded`)
            if not any(exc is done for done in request.recorded):
                rec.emit("llm.error", attempt=attempt, error=ErrorRecord.from_exception(exc))
            raise
        usage = self.usage
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens
        rec.llm_response(attempt, finish, redact(shown))
        if self.token_caps:
            check_tokens(agent.budget, self.usage, before_call=False)
        return response

    def call_fallback(self, primary_error: Exception) -> Steps[ModelResponse]:
        __tracebackhide__ = True
        # The fallback's call is a model call like any other: within ``max_llm_calls``.
        self.check_budget("max_llm_calls", self.usage.llm_calls)
        model = fallback_model_of(self.agent.resilience)
        self.rec.emit(
            "fallback",
            detail=model_name(model),
            error=ErrorRecord.from_exception(primary_error),
        )
        try:
            return (yield from self.call_model(model, 1))
        except NEVER_RECOVERED:
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


def initial_messages(
    agent: Agent[Any], prompt: str | None, messages: Sequence[Message] | None
) -> list[Message]:
    history = list(messages or [])
    if agent.instructions and not any(m.role == "system" for m in history):
        history.insert(0, Message.system(agent.instructions))
    if prompt is not None:
        history.append(user_message(prompt))
    if not history or history[-1].role not in ("user", "tool"):
        raise UsageError("run() needs a prompt (or messages ending with a user message)")
    return history
