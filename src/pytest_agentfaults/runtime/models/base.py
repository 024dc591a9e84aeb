"""Messages, requests, responses and the `Model` protocol every model client follows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from pytest_agentfaults.runtime._budget import Meter
    from pytest_agentfaults.runtime._result import CancelToken
    from pytest_agentfaults.runtime.clock import Clock

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "Role",
    "TokenUsage",
    "ToolCall",
    "ToolSpec",
]

Role = Literal["system", "user", "assistant", "tool"]


class ToolCall(BaseModel):
    """One tool call the model asked for. ``arguments`` is the raw JSON text it sent."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"


class Message(BaseModel):
    """One chat message. A tool result is ``role="tool"`` with ``content`` as the model sees it."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # Reasoning blocks a provider wants back, verbatim, with the next turn (Anthropic's
    # ``thinking`` and ``redacted_thinking`` blocks: their signatures are checked).
    thinking: list[dict[str, Any]] = Field(default_factory=list)

    # The constructors below go to the model's validator itself: what ``cls(**fields)``
    # runs, less `BaseModel.__init__`'s frame and keywords (a run makes a user message and
    # a tool result per call, ~4k instructions each that way).

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls.__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
            {"role": "system", "content": content}
        )

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls.__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
            {"role": "user", "content": content}
        )

    @classmethod
    def assistant(
        cls,
        content: str = "",
        tool_calls: list[ToolCall] | None = None,
        *,
        thinking: list[dict[str, Any]] | None = None,
    ) -> Message:
        """An assistant message, with tool calls when it asks for tools."""
        return cls(
            role="assistant", content=content, tool_calls=tool_calls or [], thinking=thinking or []
        )

    @classmethod
    def tool_result(cls, content: str, *, tool_call_id: str, name: str) -> Message:
        """The result of one tool call, as fed back to the model."""
        return cls.__pydantic_validator__.validate_python(  # type: ignore[no-any-return]
            {"role": "tool", "content": content, "tool_call_id": tool_call_id, "name": name}
        )


class ToolSpec(BaseModel):
    """What the model is told about a tool: name, description, JSON schema of its arguments."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(BaseModel):
    """Tokens a model call consumed, when the provider says."""

    input_tokens: int = 0
    output_tokens: int = 0


class ModelResponse(BaseModel):
    """What a model returned for one request: the assistant message and its metadata."""

    message: Message
    finish_reason: str | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model: str | None = None

    @property
    def text(self) -> str:
        """The assistant's text."""
        return self.message.content

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the model asked for (empty for a final answer)."""
        return self.message.tool_calls


# Live views of the two models' own namespaces, for the constructors a run calls on every
# turn. A class attribute read of a pydantic model (``Message.user``, then
# ``cls.__pydantic_validator__``) goes through its metaclass's ``__getattr__`` hook, ~1,200
# instructions each, and a run made six. A key of the view is a dict lookup, and the view
# shows what the class holds now (a rebuilt model's new validator too): nothing is kept.
_MESSAGE: Final = vars(Message)
_RESPONSE: Final = vars(ModelResponse)


def user_message(content: str) -> Message:
    """``Message.user(content)``: the same validation, without the two class reads."""
    return _MESSAGE["__pydantic_validator__"].validate_python(  # type: ignore[no-any-return]
        {"role": "user", "content": content}
    )


def tool_message(content: str, tool_call_id: str, name: str) -> Message:
    """``Message.tool_result(...)``: the same validation, without the two class reads."""
    return _MESSAGE["__pydantic_validator__"].validate_python(  # type: ignore[no-any-return]
        {"role": "tool", "content": content, "tool_call_id": tool_call_id, "name": name}
    )


def validate_response(data: dict[str, Any]) -> ModelResponse:
    """``ModelResponse.model_validate(data)``: its validator, without the class read."""
    return _RESPONSE["__pydantic_validator__"].validate_python(data)  # type: ignore[no-any-return]


def _ignore_event(type: str, /, **fields: Any) -> None:
    return None


@dataclass(slots=True)
class ModelRequest:
    """One call to a model: the conversation so far and the tools on offer.

    ``clock`` and ``emit`` come from the running agent: a model client waits through the
    clock (transport backoff) and reports ``transport.retry`` events through ``emit``;
    ``jitter`` draws from the run's seeded random stream (a float in [0, 1)) for the
    backoff's jitter. Without them, the default clock and a seeded stream of its own.
    ``meter`` is the run's usage, for a combinator that makes more than one call
    (`count_call`, `count_unused`); without it those count nothing. ``cancel`` is the
    run's token: a client's transport-retry wait ends when it is cancelled.
    ``recorded``: the errors a model that asks others (`af.first_of`, `af.speculative`)
    has recorded as ``llm.error`` events already, each naming the model that failed; the
    run records one of them raised again as no second failure.
    """

    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    stream: bool = False
    output_schema: dict[str, Any] | None = None
    clock: Clock | None = None
    emit: Callable[..., object] = _ignore_event
    agent: str = ""
    jitter: Callable[[], float] | None = None
    meter: Meter | None = None
    cancel: CancelToken | None = None
    recorded: tuple[BaseException, ...] = ()

    def count_call(self) -> None:
        """Count one more model call made for this request (refused past a budget cap)."""
        if self.meter is not None:
            self.meter.call()

    def count_unused(self, response: ModelResponse) -> None:
        """Count the tokens of an answer drawn for this request but not returned."""
        if self.meter is not None:
            self.meter.unused(response)

    def snapshot(self) -> ModelRequest:
        """A copy whose message list later turns of the run cannot change."""
        # Positional, in field order: a scripted model snapshots every request it answers,
        # and binding ten keywords costs as much as the rest of the construction.
        return ModelRequest(
            list(self.messages),
            list(self.tools),
            self.stream,
            self.output_schema,
            self.clock,
            self.emit,
            self.agent,
            self.jitter,
            self.meter,
            self.cancel,
        )

    @property
    def last_message(self) -> Message | None:
        """The newest message of the conversation (None when there is none)."""
        return self.messages[-1] if self.messages else None

    def tool_names(self) -> list[str]:
        """The names of the tools on offer."""
        return [spec.name for spec in self.tools]


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a `ModelRequest`, synchronously and asynchronously.

    Raise the taxonomy's `ModelError` subclasses for failures so the runtime can tell a
    503 from a bad key.
    """

    @property
    def name(self) -> str:
        """A short name for traces, such as ``"openai:gpt-4o-mini"``."""
        ...

    def request(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``, blocking."""
        ...

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request`` without blocking the event loop."""
        ...
