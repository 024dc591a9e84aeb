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

import abc
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, ClassVar, Final, Literal, TypeAlias, cast, get_args

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelAuthError,
    ModelError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.models.base import (
    Message,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    ToolCall,
)
from pytest_agentfaults.testing import _current

__all__ = [
    "BadToolArgs",
    "BlockedAnswer",
    "CallTool",
    "CallTools",
    "ConnectionFailure",
    "EmptyAnswer",
    "FailSteps",
    "HTTPFailure",
    "MalformedSteps",
    "NotJSONBody",
    "OnExhausted",
    "RaiseError",
    "Say",
    "ScriptExhaustedError",
    "ScriptedModel",
    "Step",
    "StepFunction",
    "TimeoutFailure",
    "ToolCallStep",
    "TruncatedStream",
    "UnknownToolCall",
    "WithUsage",
    "call_tool",
    "call_tools",
    "fail",
    "malformed",
    "say",
]

OnExhausted: TypeAlias = Literal["raise", "repeat_last"]
"""What a `ScriptedModel` does once every step is used: raise, or repeat the last step."""

StepFunction: TypeAlias = Callable[[ModelRequest], "Step | str | Awaitable[Step | str]"]
"""What `ScriptedModel.from_function` takes: a request in, a step (or a text) out."""

_ON_EXHAUSTED: Final = get_args(OnExhausted)
_SHOWN_CHARS: Final = 200


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


# --------------------------------------------------------------------------- helpers


def _response(
    content: str,
    tool_calls: list[dict[str, str]],
    finish_reason: str,
    request: ModelRequest,
    model: str,
) -> ModelResponse:
    input_tokens = 0
    for sent in request.messages:
        input_tokens += len(sent.content.split())
        for call in sent.tool_calls:
            input_tokens += 1 + len(call.arguments.split())
    output_tokens = len(content.split())
    for made in tool_calls:
        output_tokens += 1 + len(made["arguments"].split())
    # One validated construction from plain dicts on purpose: pydantic-core builds the nested
    # models faster than model_construct() (or one constructor per model) would, and steps
    # sit on the hot path of benchmarks.
    return ModelResponse.model_validate(
        {
            "message": {"role": "assistant", "content": content, "tool_calls": tool_calls},
            "finish_reason": finish_reason,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "model": model,
        }
    )


class _CallIds:
    """Ids for a step answered outside a `ScriptedModel`: ``call_1``, ``call_2`` ..."""

    __slots__ = ("issued",)

    def __init__(self) -> None:
        self.issued = 0

    def __call__(self) -> str:
        self.issued += 1
        return f"call_{self.issued}"


def _show(text: str) -> str:
    if len(text) > _SHOWN_CHARS:
        text = f"{text[:_SHOWN_CHARS]}..."
    return repr(text)


def _describe(message: Message | None) -> str:
    if message is None:
        return "the request had no messages"
    if message.role == "tool":
        who = f"the result of tool {message.name!r}" if message.name else "a tool result"
        return f"the last message was {who}: {_show(message.content)}"
    if message.tool_calls:
        names = ", ".join(call.name for call in message.tool_calls)
        return f"the last message was an assistant call to {names}"
    return f"the last message was {message.role}: {_show(message.content)}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True, repr=False)
class Step(abc.ABC):
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
            _declared_usage({"input_tokens": input_tokens, "output_tokens": output_tokens}, self),
        )


@dataclass(frozen=True, slots=True, repr=False)
class WithUsage(Step):
    """``step``, with the token usage of its answer declared (see `Step.with_usage`)."""

    step: Step
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


def _declared_usage(usage: object, step: object) -> dict[str, int]:
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
class Say(Step):
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
        return _response(self.text, [], "stop", request, model)

    def __repr__(self) -> str:
        return f"say({self.text!r})"


@dataclass(frozen=True, slots=True, repr=False)
class ToolCallStep(Step):
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
        call = {"id": (next_call_id or _CallIds())(), "name": name, "arguments": arguments}
        return _response("", [call], "tool_calls", request, model)


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
class BadToolArgs(ToolCallStep):
    """The model calls a tool with arguments ``raw`` that are not what its schema wants.

    ``tool=None`` calls the first tool the request offers.
    """

    raw: str
    tool: str | None = None

    def target(self, request: ModelRequest) -> tuple[str, str]:
        """The tool (named, or the first on offer) and ``raw``, verbatim."""
        name = self.tool
        if name is None:
            if not request.tools:
                raise UsageError(
                    f"{self!r} calls the first tool on offer, but the request offers no "
                    "tools; name one: malformed.tool_args(raw, tool='...')"
                )
            name = request.tools[0].name
        return name, self.raw

    def __repr__(self) -> str:
        tool = "" if self.tool is None else f", tool={self.tool!r}"
        return f"malformed.tool_args({self.raw!r}{tool})"


@dataclass(frozen=True, slots=True, repr=False)
class UnknownToolCall(ToolCallStep):
    """The model calls ``name``, a tool that the request does not offer."""

    name: str = "nonexistent_tool"

    def target(self, request: ModelRequest) -> tuple[str, str]:
        """The missing tool, with no arguments."""
        for spec in request.tools:
            if spec.name == self.name:
                raise UsageError(
                    f"{self!r}: the request does offer a tool named {self.name!r}, so the "
                    "call would not be unknown; pick a name the agent does not have"
                )
        return self.name, "{}"

    def __repr__(self) -> str:
        return f"malformed.unknown_tool({self.name!r})"


@dataclass(frozen=True, slots=True, repr=False)
class CallTools(Step):
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
        ids = next_call_id or _CallIds()
        made = []
        for call in self.calls:
            name, arguments = call.target(request)
            made.append({"id": ids(), "name": name, "arguments": arguments})
        return _response("", made, "tool_calls", request, model)

    def __repr__(self) -> str:
        return f"call_tools([{', '.join(map(repr, self.calls))}])"


@dataclass(frozen=True, slots=True, repr=False)
class RaiseError(Step):
    """The model call raises ``error``.

    An exception instance is raised itself, every time (its identity is kept); an exception
    class is instantiated anew for every call.
    """

    error: BaseException | type[BaseException]

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise the error."""
        error = self.error
        if isinstance(error, BaseException):
            # The traceback of an earlier raise would keep growing with every repeat.
            raise error.with_traceback(None)
        raise _instantiate(error, model)

    def __repr__(self) -> str:
        error = self.error
        return f"fail({error.__name__ if isinstance(error, type) else repr(error)})"


_CLASS_STATUSES: Final = ((RateLimitError, 429), (ModelAuthError, 401), (ModelServerError, 503))


def _instantiate(error: type[BaseException], model: str) -> BaseException:
    message = f"scripted model {model!r} raised {error.__name__}"
    if issubclass(error, ModelHTTPError):
        status = 400
        for family, family_status in _CLASS_STATUSES:
            if issubclass(error, family):
                status = family_status
                break
        return error(message, status=status, model=model)
    if issubclass(error, ModelError):
        return error(message, model=model)
    return error(message)


@dataclass(frozen=True, slots=True, repr=False)
class HTTPFailure(Step):
    """The provider answers with an error status; raised as the matching `ModelHTTPError`.

    429 is a `RateLimitError` (with ``retry_after``), 401/403 a `ModelAuthError`, 5xx (529
    included) a `ModelServerError`, anything else a plain `ModelHTTPError`. A
    ``retry_after`` is also sent as a ``retry-after`` header.
    """

    status: int
    body: str = ""
    retry_after: float | None = None

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise the HTTP error, a new one for every call."""
        raise self.error(model)

    def error(self, model: str = "scripted") -> ModelHTTPError:
        """The exception this step raises for the model named ``model``."""
        status = self.status
        try:
            phrase = f" {HTTPStatus(status).phrase}"
        except ValueError:
            phrase = ""
        message = f"scripted model {model!r} answered HTTP {status}{phrase}"
        headers = {} if self.retry_after is None else {"retry-after": f"{self.retry_after:g}"}
        if status == 429:
            return RateLimitError(
                message, body=self.body, headers=headers, model=model, retry_after=self.retry_after
            )
        kind: type[ModelHTTPError] = ModelHTTPError
        if status in (401, 403):
            kind = ModelAuthError
        elif status >= 500:
            kind = ModelServerError
        return kind(message, status=status, body=self.body, headers=headers, model=model)

    def __repr__(self) -> str:
        retry_after = "" if self.retry_after is None else f"retry_after={self.retry_after!r}"
        if self.status == 429 and not self.body:
            return f"fail.rate_limit({retry_after})"
        options = [repr(self.status)]
        if self.body:
            options.append(repr(self.body))
        if retry_after:
            options.append(retry_after)
        return f"fail.http({', '.join(options)})"


@dataclass(frozen=True, slots=True, repr=False)
class TimeoutFailure(Step):
    """The model call times out: raises `ModelTimeoutError` (a `TimeoutError`)."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelTimeoutError`."""
        raise ModelTimeoutError(f"scripted model {model!r} timed out", model=model)

    def __repr__(self) -> str:
        return "fail.timeout()"


@dataclass(frozen=True, slots=True, repr=False)
class ConnectionFailure(Step):
    """The connection fails: raises `ModelTransportError` (a `ConnectionError`)."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelTransportError`."""
        raise ModelTransportError(f"scripted model {model!r}: connection refused", model=model)

    def __repr__(self) -> str:
        return "fail.connection()"


@dataclass(frozen=True, slots=True, repr=False)
class EmptyAnswer(Step):
    """The model answers ``""`` with no tool call and finish reason ``"stop"``."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """An empty assistant message; the agent turns it into `MalformedResponseError`."""
        return _response("", [], "stop", request, model)

    def __repr__(self) -> str:
        return "malformed.empty()"


@dataclass(frozen=True, slots=True, repr=False)
class BlockedAnswer(Step):
    """The provider withholds the answer: empty content and ``finish_reason``."""

    finish_reason: str = "content_filter"

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """An empty assistant message with the blocking finish reason."""
        return _response("", [], self.finish_reason, request, model)

    def __repr__(self) -> str:
        return f"malformed.blocked({self.finish_reason!r})"


@dataclass(frozen=True, slots=True, repr=False)
class NotJSONBody(Step):
    """A 2xx answer whose body is not JSON: raises `MalformedResponseError` holding it."""

    text: str = "<html><body><h1>502 Bad Gateway</h1></body></html>"

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise `MalformedResponseError` whose ``body`` is ``text``."""
        raise MalformedResponseError(
            f"scripted model {model!r} answered a body that is not JSON: {_show(self.text)}",
            body=self.text,
            model=model,
        )

    def __repr__(self) -> str:
        return f"malformed.not_json({self.text!r})"


@dataclass(frozen=True, slots=True, repr=False)
class TruncatedStream(Step):
    """The answer stream breaks off: raises `ModelStreamError`."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelStreamError`."""
        raise ModelStreamError(
            f"scripted model {model!r}: stream ended before the response was complete",
            model=model,
        )

    def __repr__(self) -> str:
        return "malformed.truncated()"


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
    return WithUsage(Say(text), _declared_usage(usage, f"say({text!r})"))


def call_tool(name: str, /, raw_args: str | None = None, **args: Any) -> CallTool:
    """The model calls tool ``name``; keyword arguments become its JSON arguments.

    ```python
    call_tool("fetch", url="https://example.com")     # arguments '{"url": "https://example.com"}'
    call_tool("count_keys", json="{name: world}")     # the argument named json holds that text
    call_tool("parse", raw_args="{bad")               # arguments sent verbatim, even unparseable
    ```
    """
    return _call_tool(name, raw_args, args)


def _call_tool(name: object, raw_args: object, args: Mapping[str, Any]) -> CallTool:
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
        arguments = json.dumps(dict(args), ensure_ascii=False)
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
            steps.append(_call_tool(item[0], None, item[1]))
        else:
            raise UsageError(
                f"call_tools(): item {index} is {item!r}; each item must be a call_tool(...) "
                "step, malformed.tool_args(...), malformed.unknown_tool(...) or a "
                "(name, arguments_dict) pair"
            )
    if not steps:
        raise UsageError("call_tools() needs at least one call")
    return CallTools(tuple(steps))


class FailSteps:
    """Steps that make the model call fail; used through the single instance `fail`.

    ```python
    fail(ConnectionError("reset"))       # raise this very exception
    fail.http(503)                       # ModelServerError
    fail.rate_limit(retry_after=2)       # RateLimitError, retry_after=2.0
    fail.timeout(); fail.connection()    # ModelTimeoutError; ModelTransportError
    ```
    """

    __slots__ = ()

    def __call__(self, error: BaseException | type[BaseException]) -> RaiseError:
        """The call raises ``error``: this very instance every time, or a new one of a class."""
        if isinstance(error, BaseException):
            return RaiseError(error)
        if isinstance(error, type) and issubclass(error, BaseException):
            try:
                _instantiate(error, "scripted")
            except Exception as exc:
                raise UsageError(
                    f"fail({error.__name__}): the class cannot be built from a message alone "
                    f"({exc}); pass an instance instead: fail({error.__name__}(...))"
                ) from exc
            return RaiseError(error)
        raise UsageError(
            f"fail() takes an exception or an exception class, got {type(error).__name__}: "
            f"{error!r}; for an HTTP status use fail.http({error!r})"
        )

    def http(self, status: int, body: str = "", *, retry_after: float | None = None) -> HTTPFailure:
        """The provider answers HTTP ``status`` (4xx or 5xx) with ``body``."""
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise UsageError(
                f"fail.http() takes an error status from 400 to 599, got {status!r}; "
                "script a 2xx answer with say()/call_tool(), or a bad one with malformed.*"
            )
        if not isinstance(body, str):
            raise UsageError(f"fail.http({status}): body must be a str, got {body!r}")
        return HTTPFailure(status, body, _seconds(retry_after, f"fail.http({status})"))

    def rate_limit(self, retry_after: float | None = None, *, body: str = "") -> HTTPFailure:
        """HTTP 429: a `RateLimitError` whose ``retry_after`` is the given seconds (or None)."""
        return self.http(429, body, retry_after=retry_after)

    def timeout(self) -> TimeoutFailure:
        """The model call times out (`ModelTimeoutError`)."""
        return TimeoutFailure()

    def connection(self) -> ConnectionFailure:
        """The connection to the provider fails (`ModelTransportError`)."""
        return ConnectionFailure()

    def __repr__(self) -> str:
        return "fail"


def _seconds(value: object, where: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise UsageError(
            f"{where}: retry_after must be seconds >= 0 (finite) or None, got {value!r}"
        )
    return float(value)


class MalformedSteps:
    """Steps where the model answers, but not usably; used through the single instance `malformed`.

    ```python
    malformed.tool_args('{"url": ')      # unparseable arguments for the first tool offered
    malformed.unknown_tool("rm_rf")      # a call to a tool the agent does not have
    malformed.empty(); malformed.blocked("content_filter")
    malformed.not_json("<html>..."); malformed.truncated()
    ```
    """

    __slots__ = ()

    def tool_args(self, raw: str = '{"arguments": ', tool: str | None = None) -> BadToolArgs:
        """A call whose arguments are ``raw``, verbatim; ``tool=None``: the first tool offered."""
        if not isinstance(raw, str):
            raise UsageError(f"malformed.tool_args(): raw must be a str, got {raw!r}")
        if tool is not None and (not isinstance(tool, str) or not tool):
            raise UsageError(f"malformed.tool_args(): tool must be a tool name, got {tool!r}")
        return BadToolArgs(raw, tool)

    def unknown_tool(self, name: str = "nonexistent_tool") -> UnknownToolCall:
        """A call to ``name``, a tool that the agent does not offer."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"malformed.unknown_tool(): name must be a tool name, got {name!r}")
        return UnknownToolCall(name)

    def empty(self) -> EmptyAnswer:
        """An assistant message with ``""`` and no tool calls (finish reason ``"stop"``)."""
        return EmptyAnswer()

    def blocked(self, finish_reason: str = "content_filter") -> BlockedAnswer:
        """An empty answer the provider blocked, with that ``finish_reason``."""
        if not isinstance(finish_reason, str) or not finish_reason:
            raise UsageError(
                f"malformed.blocked(): finish_reason must be a non-empty str, got {finish_reason!r}"
            )
        return BlockedAnswer(finish_reason)

    def not_json(
        self, text: str = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    ) -> NotJSONBody:
        """A 2xx answer whose body is ``text``, not JSON (`MalformedResponseError`)."""
        if not isinstance(text, str):
            raise UsageError(f"malformed.not_json(): text must be a str, got {text!r}")
        return NotJSONBody(text)

    def truncated(self) -> TruncatedStream:
        """A stream that ends before the response is complete (`ModelStreamError`)."""
        return TruncatedStream()

    def __repr__(self) -> str:
        return "malformed"


fail: Final = FailSteps()
"""Failure steps: ``fail(exc)``, ``fail.http(status)``, ``fail.rate_limit()``, ``fail.timeout()``,
``fail.connection()``."""

malformed: Final = MalformedSteps()
"""Unusable answers: ``malformed.tool_args()``, ``.unknown_tool()``, ``.empty()``,
``.blocked()``, ``.not_json()``, ``.truncated()``."""


# --------------------------------------------------------------------------- the model


def _as_step(value: object, where: str) -> Step:
    if isinstance(value, Step):
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
        steps: Iterable[Step | str],
        *,
        name: str = "scripted",
        on_exhausted: OnExhausted = "raise",
        strict: bool = True,
    ) -> None:
        if isinstance(steps, Step | str):
            raise UsageError(f"ScriptedModel() takes a list of steps, got one: [{steps!r}]")
        if on_exhausted not in _ON_EXHAUSTED:
            raise UsageError(
                f"ScriptedModel(on_exhausted={on_exhausted!r}); use one of "
                + ", ".join(map(repr, _ON_EXHAUSTED))
            )
        self._steps: tuple[Step, ...] = tuple(
            _as_step(step, f"ScriptedModel(): step {index}") for index, step in enumerate(steps)
        )
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
        script = _read_script(Path(path))
        return cls(
            script.steps,
            name=name or script.name,
            on_exhausted=on_exhausted or script.on_exhausted,
            strict=strict,
        )

    # ----------------------------------------------------------------- Model protocol

    def request(self, request: ModelRequest) -> ModelResponse:
        """Record ``request`` and answer it with the next step (or raise that step's error)."""
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
        self.requests.append(request.snapshot())
        if self._function is None:
            step = self._next_step(request)
        else:
            result = self._function(request)
            if inspect.isawaitable(result):
                result = await result
            step = _as_step(result, f"the step function's result for request {len(self.requests)}")
        return step.respond(request, model=self.name, next_call_id=self._next_call_id)

    def substitute(
        self, request: ModelRequest, step: Step, *, uses_step: bool = True
    ) -> ModelResponse:
        """Answer ``request`` with ``step`` in place of the script (fault injection).

        The request is recorded. With ``uses_step`` (a malformed answer) the scripted step
        it replaces is used up, as if the model had answered; without it (a transient
        failure of the call: a 429, a 503, a timeout, a dropped connection) the step stays
        for the next call. With the script already spent, nothing is used up.
        """
        self.requests.append(request.snapshot())
        if uses_step and self._function is None and self._position < len(self._steps):
            self._position += 1
        return step.respond(request, model=self.name, next_call_id=self._next_call_id)

    # ----------------------------------------------------------------- conveniences

    @property
    def steps(self) -> tuple[Step, ...]:
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
                "not need, or pass ScriptedModel(..., strict=False) to allow leftovers."
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

    def _next_step(self, request: ModelRequest) -> Step:
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


# --------------------------------------------------------------------------- script files

_ACTIONS: Final = ("call_tool", "call_tools", "fail", "malformed", "say")
_TOP_KEYS: Final = ("description", "name", "on_exhausted", "steps")
_FAIL_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "connection": (),
    "http": ("status", "body", "retry_after"),
    "rate_limit": ("retry_after", "body"),
    "timeout": (),
}
_MALFORMED_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "blocked": ("finish_reason",),
    "empty": (),
    "not_json": ("text",),
    "tool_args": ("raw", "tool"),
    "truncated": (),
    "unknown_tool": ("name",),
}


@dataclass(frozen=True, slots=True)
class _Script:
    steps: list[Step]
    name: str
    on_exhausted: OnExhausted = "raise"


@dataclass(slots=True)
class _ScriptReader:
    path: Path

    def error(self, where: str, problem: str) -> UsageError:
        return UsageError(f"script {self.path}: {where}: {problem}")

    def load(self) -> object:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read script {self.path}: {exc.strerror or exc}") from exc
        suffix = self.path.suffix.lower()
        if suffix == ".json":
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(
                    f"script {self.path} is not valid JSON: {exc.msg} "
                    f"(line {exc.lineno}, column {exc.colno})"
                ) from exc
        if suffix in (".yaml", ".yml"):
            try:
                import yaml  # noqa: PLC0415 - optional dependency, only for YAML scripts
            except ImportError as exc:
                raise UsageError(
                    f"script {self.path} is YAML, which needs PyYAML: pip install pyyaml "
                    "(or pip install 'pytest-agentfaults[yaml]'), or write the script as JSON"
                ) from exc
            try:
                return yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise UsageError(f"script {self.path} is not valid YAML: {exc}") from exc
        raise UsageError(
            f"script {self.path}: unknown file type {suffix or '(none)'!r}; "
            "use .json, .yaml or .yml"
        )

    def script(self, data: object) -> _Script:
        name = f"scripted:{self.path.stem}"
        on_exhausted: OnExhausted = "raise"
        if isinstance(data, list):
            entries: object = data
        elif isinstance(data, dict):
            self.check_keys(data, _TOP_KEYS, "top level")
            if "steps" not in data:
                raise self.error("top level", "no 'steps' list")
            entries = data["steps"]
            name = self.text(data, "name", "top level", default=name)
            value = data.get("on_exhausted", on_exhausted)
            if value not in _ON_EXHAUSTED:
                raise self.error(
                    "on_exhausted", f"{value!r}; use one of {', '.join(_ON_EXHAUSTED)}"
                )
            on_exhausted = cast("OnExhausted", value)
        else:
            raise self.error(
                "top level", f"expected an object with 'steps' (or a list of steps), got {data!r}"
            )
        if not isinstance(entries, list):
            raise self.error("steps", f"must be a list, got {entries!r}")
        steps = [self.step(entry, f"steps[{index}]") for index, entry in enumerate(entries)]
        if on_exhausted == "repeat_last" and not steps:
            raise self.error(
                "steps", 'the list is empty, so on_exhausted="repeat_last" has nothing'
            )
        return _Script(steps, name, on_exhausted)

    def check_keys(self, entry: Mapping[str, object], valid: tuple[str, ...], where: str) -> None:
        for key in entry:
            if key not in valid:
                raise self.error(
                    where, f"unknown key {key!r}; valid keys: {', '.join(sorted(valid))}"
                )

    def text(
        self, entry: Mapping[str, object], key: str, where: str, default: str | None = None
    ) -> str:
        value = entry.get(key, default)
        if not isinstance(value, str):
            raise self.error(where, f"{key!r} must be a string, got {value!r}")
        return value

    def step(self, entry: object, where: str) -> Step:
        if isinstance(entry, str):
            return Say(entry)
        if not isinstance(entry, dict):
            raise self.error(
                where, f'a step is an object such as {{"say": "hi"}} or a string, got {entry!r}'
            )
        actions = [key for key in _ACTIONS if key in entry]
        if len(actions) != 1:
            found = (
                f"has {' and '.join(map(repr, actions))}; one action per step"
                if actions
                else f"has no action key (keys: {', '.join(map(repr, entry)) or 'none'})"
            )
            raise self.error(where, f"{found}; the actions are: {', '.join(_ACTIONS)}")
        action = actions[0]
        try:
            if action == "say":
                self.check_keys(entry, ("say",), where)
                return say(self.text(entry, "say", where))
            if action == "call_tool":
                return self.call_tool(entry, where)
            if action == "call_tools":
                return self.call_tools(entry, where)
            if action == "fail":
                return self.fail(entry, where)
            return self.malformed(entry, where)
        except UsageError as exc:
            if str(exc).startswith(f"script {self.path}:"):
                raise
            raise self.error(where, str(exc)) from exc

    def call_tool(self, entry: Mapping[str, object], where: str) -> CallTool:
        self.check_keys(entry, ("call_tool", "args", "raw_args"), where)
        args = entry.get("args", {})
        if not isinstance(args, dict):
            raise self.error(where, f"'args' must be an object of arguments, got {args!r}")
        raw_args = entry.get("raw_args")
        if raw_args is not None and not isinstance(raw_args, str):
            raise self.error(
                where, f"'raw_args' must be a string (sent verbatim), got {raw_args!r}"
            )
        return _call_tool(self.text(entry, "call_tool", where), raw_args, args)

    def call_tools(self, entry: Mapping[str, object], where: str) -> CallTools:
        self.check_keys(entry, ("call_tools",), where)
        items = entry["call_tools"]
        if not isinstance(items, list) or not items:
            raise self.error(where, f"'call_tools' must be a non-empty list, got {items!r}")
        calls: list[ToolCallStep] = []
        for index, item in enumerate(items):
            item_where = f"{where}.call_tools[{index}]"
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], dict):
                calls.append(_call_tool(item[0], None, item[1]))
                continue
            step = self.step(item, item_where) if isinstance(item, dict) else None
            if not isinstance(step, ToolCallStep):
                raise self.error(
                    item_where,
                    f'{item!r} is not one tool call; use {{"call_tool": ...}}, '
                    '{"malformed": "tool_args" | "unknown_tool", ...} or a [name, {args}] pair',
                )
            calls.append(step)
        return call_tools(calls)

    def kind(
        self,
        entry: Mapping[str, object],
        action: str,
        options: Mapping[str, tuple[str, ...]],
        where: str,
    ) -> tuple[str, dict[str, Any]]:
        kind = entry[action]
        if not isinstance(kind, str) or kind not in options:
            raise self.error(
                where, f"unknown {action} kind {kind!r}; valid kinds: {', '.join(sorted(options))}"
            )
        self.check_keys(entry, (action, *options[kind]), where)
        return kind, {key: value for key, value in entry.items() if key != action}

    def fail(self, entry: Mapping[str, object], where: str) -> Step:
        if isinstance(entry["fail"], int) and not isinstance(entry["fail"], bool):
            self.check_keys(entry, ("fail", "body", "retry_after"), where)
            options: dict[str, Any] = {key: value for key, value in entry.items() if key != "fail"}
            return fail.http(entry["fail"], **options)
        kind, kwargs = self.kind(entry, "fail", _FAIL_OPTIONS, where)
        if kind == "http" and "status" not in kwargs:
            raise self.error(where, "a 'fail': 'http' step needs a 'status'")
        built: Step = getattr(fail, kind)(**kwargs)
        return built

    def malformed(self, entry: Mapping[str, object], where: str) -> Step:
        kind, kwargs = self.kind(entry, "malformed", _MALFORMED_OPTIONS, where)
        built: Step = getattr(malformed, kind)(**kwargs)
        return built


def _read_script(path: Path) -> _Script:
    reader = _ScriptReader(path)
    return reader.script(reader.load())
