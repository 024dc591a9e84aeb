"""`malformed`: the steps where the model answers, but not usably.

```python
malformed.tool_args('{"url": '); malformed.unknown_tool("rm_rf"); malformed.empty()
malformed.blocked("content_filter"); malformed.not_json("<html>..."); malformed.truncated()
```
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults.errors import MalformedResponseError, ModelStreamError, UsageError
from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse
from pytest_agentfaults.testing._fail_steps import fail
from pytest_agentfaults.testing.steps import (
    ScriptStep,
    ToolCallStep,
    answer,
    no_step,
    shown,
    steps_of,
)

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "BadToolArgs",
    "BlockedAnswer",
    "EmptyAnswer",
    "MalformedSteps",
    "NotJSONBody",
    "TruncatedStream",
    "UnknownToolCall",
    "malformed",
]


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
        offered = [spec.name for spec in request.tools]
        if name is not None and offered and name not in offered:
            # else the call is an unknown tool's, and the test passes on the wrong path
            close = difflib.get_close_matches(name, offered, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"{self!r}: the request offers no tool {name!r}{hint} (it offers: "
                f"{', '.join(offered)}); for a call to a tool the agent does not have, use "
                f"malformed.unknown_tool({name!r})"
            )
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
class EmptyAnswer(ScriptStep):
    """The model answers ``""`` with no tool call and finish reason ``"stop"``."""

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """An empty assistant message; the agent turns it into `MalformedResponseError`."""
        return answer("", [], "stop", request, model)

    def __repr__(self) -> str:
        return "malformed.empty()"


@dataclass(frozen=True, slots=True, repr=False)
class BlockedAnswer(ScriptStep):
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
        return answer("", [], self.finish_reason, request, model)

    def __repr__(self) -> str:
        return f"malformed.blocked({self.finish_reason!r})"


@dataclass(frozen=True, slots=True, repr=False)
class NotJSONBody(ScriptStep):
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
            f"scripted model {model!r} answered a body that is not JSON: {shown(self.text)}",
            body=self.text,
            model=model,
        )

    def __repr__(self) -> str:
        return f"malformed.not_json({self.text!r})"


@dataclass(frozen=True, slots=True, repr=False)
class TruncatedStream(ScriptStep):
    """The answer breaks off: a cut stream, or a cut body on a call that does not stream.

    A call that does not stream has no stream to cut: what breaks off there is the body,
    half a JSON document, which a client reports as a malformed answer. Raising the
    stream's error there would let a test pass a scenario its client cannot meet.
    """

    def respond(
        self,
        request: ModelRequest,
        *,
        model: str = "scripted",
        next_call_id: Callable[[], str] | None = None,
    ) -> ModelResponse:
        """Raise a new `ModelStreamError` (streamed) or `MalformedResponseError` (not)."""
        if not request.stream:
            raise MalformedResponseError(
                f"scripted model {model!r}: the response body ended before it was complete "
                "(the call does not stream: its body was cut)",
                body=_CUT_BODY,
                model=model,
            )
        raise ModelStreamError(
            f"scripted model {model!r}: stream ended before the response was complete",
            model=model,
        )

    def __repr__(self) -> str:
        return "malformed.truncated()"


#: what a cut answer body looks like: a JSON document broken off mid-way
_CUT_BODY = '{"id": "resp_1", "choices": [{"message": {"role": "assistant", "content": "Th'


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

    if not TYPE_CHECKING:  # a type checker still flags a typo: to it, there is no such hook

        def __getattr__(self, name: str) -> Any:
            __tracebackhide__ = True
            if name.startswith("_"):
                raise AttributeError(name)
            raise no_step("malformed", name, steps_of(self), ("fail", steps_of(fail)))

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


malformed: Final = MalformedSteps()
"""Unusable answers: ``malformed.tool_args()``, ``.unknown_tool()``, ``.empty()``,
``.blocked()``, ``.not_json()``, ``.truncated()``."""
