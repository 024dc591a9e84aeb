"""`ScriptedModel`: a model that answers from a script, so a test decides every turn.

```python
model = ScriptedModel([
    call_tool("fetch", url="https://example.com"),   # turn 1: ask for a tool
    fail.http(503),                                   # turn 2: the provider fails
    say("The page says hello."),                      # turn 3: the final answer
])
```

Each model call (``request`` or ``arequest``, which behave the same) uses up one step, and
``model.requests`` keeps a copy of every request, so a test can assert what the agent fed
back. Steps that answer build a `ModelResponse`; failure steps raise the taxonomy error a
real client would raise (`RateLimitError`, `ModelTimeoutError`, `MalformedResponseError`
...). When the script runs out the model raises `ScriptExhaustedError`, an
`AssertionError`: a test-setup mistake that no retry policy will ever retry. Steps left
over when the test ends fail it too (``strict=True``, the default; see `ScriptedModel`).

Tool-call ids are ``call_1``, ``call_2`` ... counted per model, so traces are the same on
every run. Token usage is a rough, deterministic count: a message's tokens are the words of
its content plus, for each tool call, one for the name and the words of its arguments.

Scripts can also live in files (`ScriptedModel.from_file`); see that method for the format.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.base import Message, ModelRequest, ModelResponse
from pytest_agentfaults.testing import _current
from pytest_agentfaults.testing._script_file import ON_EXHAUSTED, read_script
from pytest_agentfaults.testing.steps import OnExhausted, Say, ScriptStep, StepFunction, shown

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ScriptExhaustedError", "ScriptedModel"]


class ScriptExhaustedError(AssertionError):
    """The model was called once more than its script allows.

    An `AssertionError` on purpose: a script that is too short is a mistake in the test, and
    nothing in the runtime treats it as a transient failure worth retrying.
    ``model`` names the model, ``steps`` is how many steps its script had, and ``request``
    is the request that found no step.
    """

    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, model: str, steps: int, request: ModelRequest) -> None:
        super().__init__(message)
        self.model = model
        self.steps = steps
        self.request = request


def _describe(message: Message | None) -> str:
    if message is None:
        return "the request had no messages"
    if message.role == "tool":
        who = f"the result of tool {message.name!r}" if message.name else "a tool result"
        return f"the last message was {who}: {shown(message.content)}"
    if message.tool_calls:
        names = ", ".join(call.name for call in message.tool_calls)
        return f"the last message was an assistant call to {names}"
    return f"the last message was {message.role}: {shown(message.content)}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _as_step(value: object, where: str) -> ScriptStep:
    if isinstance(value, ScriptStep):
        return value
    if isinstance(value, str):
        return Say(value)
    hint = " (did it forget to return?)" if value is None else ""
    raise UsageError(
        f"{where} is {value!r}{hint}; a step is say(...), call_tool(...), call_tools(...), "
        "fail..., malformed..., or a str (short for say)"
    )


class ScriptedModel:
    """A `Model` that answers each call with the next step of a script.

    ```python
    model = ScriptedModel([call_tool("fetch", url="https://x.test"), say("done")])
    agent = af.Agent(model=model, tools=[fetch])
    assert agent("go") == "done"
    assert model.requests[1].messages[-1].role == "tool"   # what the agent fed back
    ```

    ``steps`` are steps (a plain ``str`` is short for `say`). ``on_exhausted="raise"``
    (the default) raises `ScriptExhaustedError` when a call finds no step left;
    ``"repeat_last"`` answers every further call with the last step.

    ``strict=True`` (the default): steps left over when the test ends fail it, naming the
    first one, as unused mocks do. The model is checked at the end of the test it was
    built in (it registers with the fault plan active then: the test's, under pytest, or
    a ``with plan.active():`` block's, checked by ``plan.check()``); a model built
    outside any active plan is not checked, call `assert_all_used` yourself. A
    ``"repeat_last"`` model never has leftovers. ``strict=False`` allows them.
    """

    __slots__ = (
        "_function",
        "_issued_ids",
        "_position",
        "_steps",
        "name",
        "on_exhausted",
        "requests",
        "strict",
    )

    def __init__(
        self,
        steps: Iterable[ScriptStep | str],
        *,
        name: str = "scripted",
        on_exhausted: OnExhausted = "raise",
        strict: bool = True,
    ) -> None:
        # A list (the usual script) is neither: no check through `ScriptStep`'s ABC machinery.
        if steps.__class__ is not list and isinstance(steps, ScriptStep | str):
            raise UsageError(f"ScriptedModel() takes a list of steps, got one: [{steps!r}]")
        if on_exhausted not in ON_EXHAUSTED:
            raise UsageError(
                f"ScriptedModel(on_exhausted={on_exhausted!r}); use one of "
                + ", ".join(map(repr, ON_EXHAUSTED))
            )
        script: list[ScriptStep] = []
        for index, step in enumerate(steps):
            # A step made by say(), call_tool() ... is one by its class: `isinstance` through
            # the ABC machinery, and the message that names the step, only for the others.
            if ScriptStep not in step.__class__.__mro__:
                step = _as_step(step, f"ScriptedModel(): step {index}")  # noqa: PLW2901
            script.append(step)
        self._steps: tuple[ScriptStep, ...] = tuple(script)
        if on_exhausted == "repeat_last" and not self._steps:
            raise UsageError('ScriptedModel([], on_exhausted="repeat_last") has no step to repeat')
        self.name = name
        """The model's name in traces and errors."""
        self.on_exhausted: OnExhausted = on_exhausted
        """What happens once every step is used: ``"raise"`` or ``"repeat_last"``."""
        self.requests: list[ModelRequest] = []
        """Every request received, in order, copied so later turns cannot change them."""
        if not isinstance(strict, bool):
            raise UsageError(f"ScriptedModel(strict={strict!r}): give True or False")
        self.strict = strict
        """Leftover steps fail the test (see the class docs); False allows them."""
        self._function: StepFunction | None = None
        self._position = 0
        self._issued_ids = 0
        if strict and self._steps and on_exhausted == "raise":
            _current.add_check(self._check_at_the_end)

    @classmethod
    def from_function(cls, fn: StepFunction, *, name: str = "scripted") -> ScriptedModel:
        """A model that asks ``fn(request)`` for each turn's step (a ``str`` is short for `say`).

        ```python
        def reply(request):
            last = request.messages[-1]
            return say("done") if last.role == "tool" else call_tool("fetch", url="x")
        model = ScriptedModel.from_function(reply)
        ```

        ``fn`` may be ``async``; the model must then be called with ``arequest`` (an agent's
        ``arun``). The model never runs out; ``fn`` may raise to fail a call.
        """
        if not callable(fn):
            raise UsageError(f"ScriptedModel.from_function() takes a callable, got {fn!r}")
        model = cls((), name=name)
        model._function = fn
        return model

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        name: str | None = None,
        on_exhausted: OnExhausted | None = None,
        strict: bool = True,
    ) -> ScriptedModel:
        """A model whose script is read from a JSON or YAML file (YAML needs PyYAML).

        The file holds an object (or just the list of steps)::

            {"name": "analyst", "on_exhausted": "raise", "description": "free text",
             "steps": [
               "a plain string is say",
               {"say": "hi"},
               {"call_tool": "fetch", "args": {"url": "https://x.test"}},
               {"call_tool": "parse", "raw_args": "{bad"},
               {"call_tools": [{"call_tool": "a"}, ["b", {"n": 1}]]},
               {"fail": "http", "status": 503, "body": "busy"},   or {"fail": 503}
               {"fail": "rate_limit", "retry_after": 2},
               {"fail": "timeout"}, {"fail": "connection"},
               {"malformed": "tool_args", "raw": "{bad", "tool": "parse"},
               {"malformed": "unknown_tool", "name": "rm_rf"},
               {"malformed": "empty"}, {"malformed": "blocked", "finish_reason": "safety"},
               {"malformed": "not_json", "text": "<html>"}, {"malformed": "truncated"}
             ]}

        Each step has one action key (``say``, ``call_tool``, ``call_tools``, ``fail``,
        ``malformed``) mirroring the Python constructor of that name (``{"fail":
        "rate_limit", "retry_after": 2}`` is ``fail.rate_limit(retry_after=2)``); its other
        keys are that constructor's arguments, and a call's arguments go under ``args``.
        ``name`` defaults to ``"scripted:<file stem>"``; the ``name`` and
        ``on_exhausted`` arguments override the file's; ``strict`` is the constructor's. A
        bad file raises `UsageError` naming the file, the step and the valid keys.
        """
        script = read_script(Path(path))
        return cls(
            script.steps,
            name=name or script.name,
            on_exhausted=on_exhausted or script.on_exhausted,
            strict=strict,
        )

    # ----------------------------------------------------------------- Model protocol

    def request(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and answer it with the next step (or raise that step's error)."""
        __tracebackhide__ = True
        self.requests.append(request.snapshot())
        if self._function is None:
            step = self._next_step(request)
        else:
            result = self._function(request)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited: close it so no warning leaks
                raise UsageError(
                    f"ScriptedModel {self.name!r} runs an async function; call it with "
                    "arequest(), i.e. run the agent with `await agent.arun(...)`"
                )
            step = _as_step(result, f"the step function's result for request {len(self.requests)}")
        return step.respond(request, model=self.name, next_call_id=self._next_call_id)

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """The same as `request`, for async agents; an async step function is awaited."""
        __tracebackhide__ = True
        self.requests.append(request.snapshot())
        if self._function is None:
            step = self._next_step(request)
        else:
            result = self._function(request)
            if inspect.isawaitable(result):
                result = await result
            step = _as_step(result, f"the step function's result for request {len(self.requests)}")
        return step.respond(request, model=self.name, next_call_id=self._next_call_id)

    def substitute(self, request: ModelRequest, step: ScriptStep) -> ModelResponse:
        """Answer ``request`` with ``step`` in place of the script (fault injection).

        The request is recorded and the script is left alone: whatever the fault answers
        (a 429, a timeout, an empty or malformed answer), the scripted step stays for the
        next call, so a fault never eats a step the test wrote.
        """
        self.requests.append(request.snapshot())
        return step.respond(request, model=self.name, next_call_id=self._next_call_id)

    # ----------------------------------------------------------------- conveniences

    @property
    def steps(self) -> tuple[ScriptStep, ...]:
        """The script (empty for a model built by `from_function`)."""
        return self._steps

    @property
    def calls(self) -> int:
        """How many times the model was called (failed and exhausted calls included)."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        """How many steps are still unused (0 for a model built by `from_function`)."""
        return len(self._steps) - self._position

    def assert_all_used(self) -> None:
        """Raise `AssertionError` naming the first leftover step, if any step is unused.

        Under pytest a strict model is checked at the end of its test; call this yourself
        for a model used outside pytest. A ``"repeat_last"`` model never has leftovers.
        """
        __tracebackhide__ = True
        left = self.leftover()
        if left is not None:
            raise AssertionError(
                f"ScriptedModel {self.name!r} has {left}. Remove the steps the test does "
                "not need, or pass strict=False where the model is built (ScriptedModel(..., "
                "strict=False), or scripted_model([...], strict=False)) to allow leftovers."
            )

    def leftover(self) -> str | None:
        """``"2 steps left over: step 2 of 3: say('done')"``, or None when none is left."""
        if self.on_exhausted == "repeat_last" or self._function is not None:
            return None
        position, steps = self._position, self._steps
        if position >= len(steps):
            return None
        return (
            f"{_plural(len(steps) - position, 'step')} left over: step {position + 1} of "
            f"{len(steps)}: {steps[position]!r}"
        )

    def reset(self) -> None:
        """Start the script again: first step, ids from ``call_1``, no recorded requests."""
        self._position = 0
        self._issued_ids = 0
        self.requests.clear()

    def __repr__(self) -> str:
        source = "function" if self._function is not None else f"steps={len(self._steps)}"
        return f"ScriptedModel(name={self.name!r}, {source}, calls={self.calls})"

    # ----------------------------------------------------------------- internals

    def _check_at_the_end(self) -> None:
        if self.strict:  # read now: `model.strict = False` later in the test still counts
            self.assert_all_used()

    def _next_call_id(self) -> str:
        self._issued_ids += 1
        return f"call_{self._issued_ids}"

    def _next_step(self, request: ModelRequest) -> ScriptStep:
        __tracebackhide__ = True
        position = self._position
        steps = self._steps
        if position < len(steps):
            self._position = position + 1
            return steps[position]
        if self.on_exhausted == "repeat_last":
            return steps[-1]
        raise ScriptExhaustedError(
            f"ScriptedModel {self.name!r} has no step for call {len(self.requests)}: its "
            f"script had {_plural(len(steps), 'step')}; {_describe(request.last_message)}. "
            'Add a step to the script, or pass on_exhausted="repeat_last".',
            model=self.name,
            steps=len(steps),
            request=request.snapshot(),
        )


def peek_answer(model: ScriptedModel, request: ModelRequest) -> ModelResponse | None:
    """What ``model``'s next step answers ``request``, the step left in place (a cut stream).

    A stream cut mid-way sends the start of this answer; the request asked again takes
    the step and gets it in full, with the same tool-call ids. None when no step answers:
    a model built by `from_function` (its function is called once per request), no step
    left, or a failure step (it raises when taken; a cut has no answer to cut).
    """
    if model._function is not None:  # noqa: SLF001 - this module's own model
        return None
    position, steps = model._position, model._steps  # noqa: SLF001
    if position < len(steps):
        step = steps[position]
    elif model.on_exhausted == "repeat_last":
        step = steps[-1]
    else:
        return None
    issued = model._issued_ids  # noqa: SLF001

    def next_call_id() -> str:
        nonlocal issued
        issued += 1
        return f"call_{issued}"

    try:
        return step.respond(request, model=model.name, next_call_id=next_call_id)
    except Exception:  # the step's failure is its answer, served when the step is taken
        return None


def cut_texts(requests: list[ModelRequest], cap: int) -> None:
    """Cut each message text and tool-call arguments of ``requests`` to ``cap`` characters."""

    def cut(text: str) -> str:
        return text if len(text) <= cap else f"{text[:cap]}...[{len(text) - cap} more characters]"

    for request in requests:
        request.messages[:] = [
            message.model_copy(
                update={
                    "content": cut(message.content),
                    "tool_calls": [
                        call.model_copy(update={"arguments": cut(call.arguments)})
                        for call in message.tool_calls
                    ],
                }
            )
            for message in request.messages
        ]
