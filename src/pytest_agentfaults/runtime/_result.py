"""The data of one run: its `Budget`, what it used (`Usage`), its `CancelToken`, its result."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Final, Generic, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.runtime.models.base import Message

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Budget", "CancelToken", "OutputT", "RunResult", "RunStatus", "Usage"]

RunStatus = Literal["ok", "max_iterations", "cancelled", "budget_exceeded"]
OutputT = TypeVar("OutputT")


class Budget(BaseModel):
    """Caps on one run; reaching one ends the run softly (no exception).

    The run records a ``budget.exceeded`` event and ends with status ``"max_iterations"``
    for the turn and call caps, ``"budget_exceeded"`` for the token caps.

    ``max_turns`` counts model turns (answers used by the loop); ``max_llm_calls`` every
    model call, retries, fallbacks and combinators' calls included; ``max_tool_calls`` the
    tool calls the model asks for. ``max_input_tokens``, ``max_output_tokens`` and
    ``max_total_tokens`` count the tokens the model clients report (LLM fixers included);
    the run ends after the answer that crosses one, or before a call when one is already
    reached.

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
            if key not in _BUDGET_FIELDS:
                raise UsageError(
                    f"Budget({key}={value!r}): unknown field; the caps are "
                    f"{', '.join(_BUDGET_FIELDS)} (an int >= 1, or None for no cap)"
                )
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise UsageError(f"Budget({key}={value!r}): give an int >= 1, or None for no cap")
        try:
            super().__init__(**data)
        except ValueError as exc:
            raise UsageError(f"invalid Budget: {exc}") from exc


_BUDGET_FIELDS: Final = tuple(Budget.model_fields)


@dataclass(slots=True)
class Usage:
    """What one run consumed.

    ``llm_calls`` counts every model call (retries, fallbacks, LLM fixers and each call a
    `first_of` or `speculative` makes included; their unused answers' tokens count too);
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

    # The runtime reads ``_cancelled`` at each step of a run: a property read is a call.
    # ``_wakers`` is set only while a run waits on this token (not built for every run).
    __slots__ = ("_cancelled", "_wakers", "reason")
    _wakers: list[Callable[[], object]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "cancelled" in cls.__dict__:
            # A subclass that decides by itself (a deadline, an outside event): the
            # runtime's inline reads of the flag ask its ``cancelled`` instead.
            cls._cancelled = property(_ask, _FLAG.__set__)  # type: ignore[misc,assignment]

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """Whether `cancel` was called."""
        return bool(_FLAG.__get__(self, CancelToken))  # the flag, whatever a subclass reads

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop at its next step; a backoff it is waiting out ends now.

        Safe to call from any thread. A wait in real time (`af.RealClock`) ends at once;
        a virtual one is instant anyway.
        """
        self.reason = reason
        self._cancelled = True
        try:
            wakers = self._wakers
        except AttributeError:  # no run is waiting on this token
            return
        for wake in tuple(wakers):
            wake()

    def _on_cancel(self, wake: Callable[[], object]) -> None:
        """Call ``wake`` when the token is cancelled (a wait of the run; see `_forget`)."""
        try:
            self._wakers.append(wake)
        except AttributeError:
            self._wakers = [wake]

    def _forget(self, wake: Callable[[], object]) -> None:
        with contextlib.suppress(AttributeError, ValueError):
            self._wakers.remove(wake)


#: the token's own flag, the slot, read and set past any subclass's ``_cancelled``
_FLAG: Final = CancelToken.__dict__["_cancelled"]


def _ask(token: CancelToken) -> bool:
    return bool(token.cancelled)


@dataclass(slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of one run: output, status, trace, messages and usage.

    ``output`` has the agent's ``output_type``: ``RunResult[Plan]`` for
    ``Agent(..., output_type=Plan)``, ``RunResult[str]`` by default.
    """

    output: OutputT
    status: RunStatus
    trace: Trace
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    run_id: str = ""

    @property
    def ok(self) -> bool:
        """True when the run finished normally."""
        return self.status == "ok"

    def __await__(self) -> NoReturn:
        """``await agent.run(...)``: say what to write instead (a `TypeError`, as before)."""
        __tracebackhide__ = True
        raise TypeError(
            "agent.run(...) is blocking and has already returned its RunResult: drop the "
            "`await`, or write `await agent.arun(...)`"
        )
