"""The steps of a script: `ScriptStep` (the base), the answers, and their constructors.

A step is one model turn. `say`, `call_tool` and `call_tools` build the answers here;
`fail` (`_fail_steps`) and `malformed` (`_malformed_steps`) build the failures and the
unusable answers. Each step answers a request with a `ModelResponse`, or raises the error a
real client would raise.

Token usage is a rough, deterministic count: a message's tokens are the words of its
content plus, for each tool call, one for the name and the words of its arguments.
"""

from __future__ import annotations

import abc
import difflib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.models.base import (
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
    validate_response,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "CallTool",
    "CallTools",
    "OnExhausted",
    "Say",
    "ScriptStep",
    "Step",
    "StepFunction",
    "ToolCallStep",
    "WithUsage",
    "call_tool",
    "call_tools",
    "say",
]

OnExhausted: TypeAlias = Literal["raise", "repeat_last"]
"""What a `ScriptedModel` does once every step is used: raise, or repeat the last step."""

StepFunction: TypeAlias = Callable[[ModelRequest], "ScriptStep | str | Awaitable[ScriptStep | str]"]
"""What `ScriptedModel.from_function` takes: a request in, a step (or a text) out."""

_SHOWN_CHARS: Final = 200

#: ``json.dumps(arguments, ensure_ascii=False)`` with its encoder made once: `json.dumps`
#: makes a new encoder for each call given an option, the most of what `call_tool` costs
_arguments_json: Final = json.JSONEncoder(ensure_ascii=False).encode


#: The last tool call `scripted_call` made, with what it follows from: its id, name and
#: arguments text. A `ToolCall` is frozen and holds just those three strings, so answers
#: may share one. A script's call comes again with the same id in each test (each model
#: counts its ids from ``call_1``), and validating it again cost ~5k instructions a turn.
_last_call: Final[list[tuple[str, str, str, ToolCall] | None]] = [None]


def scripted_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """``ToolCall(id=call_id, name=name, arguments=arguments)``, shared with the last answer's.

    A step's name and arguments are the same objects at each of its turns (checked by
    identity, so a value that only compares equal is validated anew); ids are compared.
    """
    last = _last_call[0]
    if last is not None and last[1] is name and last[2] is arguments and last[0] == call_id:
        return last[3]
    made = ToolCall(id=call_id, name=name, arguments=arguments)
    _last_call[0] = (call_id, name, arguments, made)
    return made


def answer(
    content: str,
    tool_calls: list[dict[str, str]] | list[ToolCall],
    finish_reason: str,
    request: ModelRequest,
    model: str,
) -> ModelResponse:
    """The assistant's answer to ``request``, with token usage counted in words.

    ``tool_calls`` are dicts for the validator to build, or calls made already
    (`scripted_call`).
    """
    input_tokens = 0
    for sent in request.messages:
        input_tokens += len(sent.content.split())
        for call in sent.tool_calls:
            input_tokens += 1 + len(call.arguments.split())
    output_tokens = len(content.split())
    for made in tool_calls:
        text = made["arguments"] if type(made) is dict else made.arguments  # type: ignore[union-attr]
        output_tokens += 1 + len(text.split())
    # One validated construction from plain dicts on purpose: pydantic-core builds the nested
    # models faster than model_construct() (or one constructor per model) would, and steps
    # sit on the hot path of benchmarks. Through the model's validator itself: what
    # `model_validate` calls with no option given, less a fifth of the cost (its frame and
    # its keywords), and two answers a run.
    return validate_response(
        {
            "message": {"role": "assistant", "content": content, "tool_calls": tool_calls},
            "finish_reason": finish_reason,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "model": model,
        }
    )


class CallIds:
    """Ids for a step answered outside a `ScriptedModel`: ``call_1``, ``call_2`` ..."""

    __slots__ = ("issued",)

    def __init__(self) -> None:
        self.issued = 0

    def __call__(self) -> str:
        self.issued += 1
        return f"call_{self.issued}"


def shown(text: str) -> str:
    """``text`` quoted for a message, cut after 200 characters."""
    if len(text) > _SHOWN_CHARS:
        text = f"{text[:_SHOWN_CHARS]}..."
    return repr(text)


#: ``llm=`` kinds whose script step has another name than the kind
_STEP_OF_KIND: Final = {
    "server_error": "fail.http(503)",
    "malformed_tool_args": "malformed.tool_args()",
    "tool_args_malformed": "malformed.tool_args()",
}


def steps_of(namespace: object) -> list[str]:
    """The public step constructors of a step namespace (`fail` or `malformed`)."""
    return sorted(n for n in dir(type(namespace)) if not n.startswith("_"))


def no_step(where: str, name: str, own: list[str], other: tuple[str, list[str]]) -> AttributeError:
    """The error for ``where.name`` (``malformed.emtpy``), a step the namespace lacks.

    It names the fix: the step of an ``llm=`` kind named otherwise (``fail.server_error`` is
    ``fail.http(503)``), the same step on the other namespace (``fail.empty`` is
    ``malformed.empty()``), or the closest of its own; and lists its steps.
    """
    other_where, other_steps = other
    if name in _STEP_OF_KIND:
        fix: str | None = _STEP_OF_KIND[name]
    elif name in other_steps:
        fix = f"{other_where}.{name}()"
    else:
        close = difflib.get_close_matches(name, own, n=1) or difflib.get_close_matches(
            name, other_steps, n=1
        )
        owner = where if close and close[0] in own else other_where
        fix = f"{owner}.{close[0]}()" if close else None
    hint = f"; did you mean {fix}?" if fix else ""
    listed = ", ".join(f".{step}()" for step in own)
    # name=None: Python 3.12+ would append its own "Did you mean: ...?" to ours
    message = f"{where} has no step .{name}(){hint} (its steps: {listed})"
    return AttributeError(message, name=None, obj=None)


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True, repr=False)
class ScriptStep(abc.ABC):
    """One scripted model turn: it answers a request, or raises what a real client would.

    Build steps with `say`, `call_tool`, `call_tools`, `fail` and `malformed`. Subclass it
    (a frozen dataclass) for a step of your own; `respond` is the only method to write.
    """

    @abc.abstractmethod
    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Answer ``request`` as the model named ``model``, or raise its failure.

        ``next_call_id`` hands out tool-call ids; a `ScriptedModel` passes its own counter,
        and without one the ids start at ``call_1``.
        """

    def with_usage(
        self, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> WithUsage:
        """This step, reporting the token usage given instead of its word counts.

        ```python
        call_tool("fetch", url="a").with_usage(input_tokens=1200, output_tokens=40)
        ```

        A field left out keeps the counted value. Token budgets (`af.Budget`) count it.
        """
        return WithUsage(
            self,
            declared_usage({"input_tokens": input_tokens, "output_tokens": output_tokens}, self),
        )


@dataclass(frozen=True, slots=True, repr=False)
class WithUsage(ScriptStep):
    """``step``, with the token usage of its answer declared (see `ScriptStep.with_usage`)."""

    step: ScriptStep
    usage: Mapping[str, int]

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """The step's answer, with the declared usage."""
        response = self.step.respond(request, model=model, next_call_id=next_call_id)
        counted = response.usage.model_dump()
        usage = TokenUsage(**{**counted, **self.usage})
        return response.model_copy(update={"usage": usage})

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.usage.items())
        return f"{self.step!r}.with_usage({shown})"


def declared_usage(usage: object, step: object) -> dict[str, int]:
    if isinstance(usage, TokenUsage):
        usage = usage.model_dump()
    if not isinstance(usage, Mapping):
        raise UsageError(
            f"{step!r}: usage must be af.TokenUsage(...) or a dict with input_tokens / "
            f"output_tokens, got {usage!r}"
        )
    declared: dict[str, int] = {}
    for key, value in usage.items():
        if key not in ("input_tokens", "output_tokens"):
            raise UsageError(
                f"{step!r}: usage has an unknown field {key!r}; use input_tokens, output_tokens"
            )
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{step!r}: usage {key}={value!r}; give an int >= 0")
        declared[key] = value
    return declared


@dataclass(frozen=True, slots=True, repr=False)
class Say(ScriptStep):
    """The model answers with ``text`` and asks for no tool (finish reason ``"stop"``)."""

    text: str

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """An assistant message holding ``text``."""
        return answer(self.text, [], "stop", request, model)

    def __repr__(self) -> str:
        return f"say({self.text!r})"


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallStep(ScriptStep):
    """A step that asks for exactly one tool call; these are what `call_tools` combines."""

    @abc.abstractmethod
    def target(self, request: ModelRequest) -> tuple[str, str]:
        """The tool name and the arguments text this step sends in answer to ``request``."""

    def tool_call(self, request: ModelRequest, call_id: str) -> ToolCall:
        """The tool call this step makes in answer to ``request``, with id ``call_id``."""
        name, arguments = self.target(request)
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """An assistant message with this one tool call (finish reason ``"tool_calls"``)."""
        name, arguments = self.target(request)
        call = scripted_call((next_call_id or CallIds())(), name, arguments)
        return answer("", [call], "tool_calls", request, model)


@dataclass(frozen=True, slots=True, repr=False)
class CallTool(ToolCallStep):
    """The model calls tool ``name`` with ``arguments``, the JSON text exactly as sent."""

    name: str
    arguments: str = "{}"

    def target(self, request: ModelRequest) -> tuple[str, str]:
        """``name`` and ``arguments``."""
        return self.name, self.arguments

    def __repr__(self) -> str:
        return f"call_tool({self.name!r}, {self.arguments!r})"


@dataclass(frozen=True, slots=True, repr=False)
class CallTools(ScriptStep):
    """The model asks for several tool calls in one turn (parallel tool calls)."""

    calls: tuple[ToolCallStep, ...]

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """One assistant message holding every call, in order, each with its own id."""
        ids = next_call_id or CallIds()
        made = []
        for call in self.calls:
            name, arguments = call.target(request)
            made.append({"id": ids(), "name": name, "arguments": arguments})
        return answer("", made, "tool_calls", request, model)

    def __repr__(self) -> str:
        return f"call_tools([{', '.join(map(repr, self.calls))}])"


Step: TypeAlias = ScriptStep
"""The contract's name for `ScriptStep`."""


# --------------------------------------------------------------------------- constructors


def say(text: str, *, usage: TokenUsage | Mapping[str, int] | None = None) -> Say | WithUsage:
    """The model answers ``text`` (a final answer: no tool call).

    ```python
    ScriptedModel([say("Paris")])
    say("Paris", usage={"input_tokens": 1200, "output_tokens": 3})   # declared token usage
    ```

    Without ``usage`` the answer reports its word counts as tokens. Any step takes
    ``.with_usage(input_tokens=..., output_tokens=...)`` (``call_tool``'s keywords are the
    tool's arguments, so use that there).
    """
    if not isinstance(text, str):
        raise UsageError(f"say() takes a str, got {type(text).__name__}: {text!r}")
    if usage is None:
        return Say(text)
    return WithUsage(Say(text), declared_usage(usage, f"say({text!r})"))


def call_tool(name: str, /, raw_args: str | None = None, **args: Any) -> CallTool:
    """The model calls tool ``name``; keyword arguments become its JSON arguments.

    ```python
    call_tool("fetch", url="https://example.com")     # arguments '{"url": "https://example.com"}'
    call_tool("count_keys", json="{name: world}")     # the argument named json holds that text
    call_tool("parse", raw_args="{bad")               # arguments sent verbatim, even unparseable
    ```
    """
    return make_call_tool(name, raw_args, args)


def make_call_tool(name: object, raw_args: object, args: Mapping[str, Any]) -> CallTool:
    if not isinstance(name, str) or not name:
        raise UsageError(f"call_tool() needs a tool name (a non-empty str), got {name!r}")
    if raw_args is not None:
        if args:
            raise UsageError(
                f"call_tool({name!r}) got raw_args and keyword arguments; use one or the other"
            )
        if not isinstance(raw_args, str):
            raise UsageError(
                f"call_tool({name!r}): raw_args is the JSON text sent verbatim, a str; "
                f"got {type(raw_args).__name__}"
            )
        return CallTool(name, raw_args)
    try:
        arguments = _arguments_json(dict(args))
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"call_tool({name!r}): the arguments cannot be written as JSON ({exc}); "
            "pass raw_args='...' to send a text verbatim"
        ) from exc
    return CallTool(name, arguments)


def call_tools(calls: Iterable[ToolCallStep | tuple[str, Mapping[str, Any]]]) -> CallTools:
    """The model makes several tool calls in one turn.

    Each item is a `call_tool(...)` step (or `malformed.tool_args` /
    `malformed.unknown_tool`), or a ``(name, arguments_dict)`` pair.

    ```python
    call_tools([call_tool("fetch", url="a"), ("fetch", {"url": "b"})])
    ```
    """
    steps: list[ToolCallStep] = []
    for index, item in enumerate(calls):
        if isinstance(item, ToolCallStep):
            steps.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
            steps.append(make_call_tool(item[0], None, item[1]))
        else:
            raise UsageError(
                f"call_tools(): item {index} is {item!r}; each item must be a call_tool(...) "
                "step, malformed.tool_args(...), malformed.unknown_tool(...) or a "
                "(name, arguments_dict) pair"
            )
    if not steps:
        raise UsageError("call_tools() needs at least one call")
    return CallTools(tuple(steps))
