"""The framework tool attempts in progress in this context, and what a call inside one read.

An attempt claims the names its tool goes by. A call of one of those names made inside it
(an adapter hooked at two levels, an Agents SDK agent's MCP tool calling the MCP client's
``call_tool``, pydantic-ai's MCP toolset doing the same, an adapter installed twice by
nested sessions) is the same attempt, counted once, by the outermost framework.

That inner call may still see what the outer one cannot: the Agents SDK turns an MCP
``is_error`` result into the text the model reads and returns it as the tool's output, so
only the MCP client's call knows the server reported a failure. The inner call's reading
of its result (an `Outcome`) is kept on the claim, for the outer attempt to record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, TypeVar

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Claim", "Outcome", "claim", "claim_of", "release"]

T = TypeVar("T")

#: An adapter's reading of a value its tool path returned: the text the caller reads, and
#: the error it reports (an MCP ``is_error`` result), else None; None: nothing to say.
Outcome = Callable[[Any], tuple[str, BaseException | None] | None]


@dataclass(slots=True)
class Claim:
    """One attempt in progress: the names its tool goes by, and the last inner reading."""

    names: tuple[str, ...]
    read: tuple[str, BaseException | None] | None = None

    async def inside(self, call: Callable[[], Awaitable[T]], outcome: Outcome | None) -> T:
        """Run ``call``, a call made inside this attempt, and keep its reading if any.

        The last one wins: a framework that calls again after a raised error (the Agents
        SDK's ``max_retry_attempts``) ends with what its last call returned.
        """
        __tracebackhide__ = True
        result = await call()
        read = None if outcome is None else outcome(result)
        if read is not None:
            self.read = read
        return result

    def error(self) -> BaseException | None:
        """The failure a call inside this attempt read in its result, if any."""
        return None if self.read is None else self.read[1]


# Tasks an attempt starts copy the context: the claims they see are the same objects, so a
# reading kept in a task reaches the attempt that started it.
_claims: ContextVar[tuple[Claim, ...]] = ContextVar("agentfaults_fw_inside", default=())


def claim_of(tool: str) -> Claim | None:
    """The innermost attempt in progress here that goes by ``tool``, if any."""
    for held in reversed(_claims.get()):
        if tool in held.names:
            return held
    return None


def claim(names: tuple[str, ...]) -> tuple[Claim, Token[tuple[Claim, ...]]]:
    """Claim ``names`` for an attempt starting here; `release` the token when it ends."""
    held = Claim(names)
    return held, _claims.set((*_claims.get(), held))


def release(token: Token[tuple[Claim, ...]]) -> None:
    """End the claim `claim` returned ``token`` for."""
    _claims.reset(token)
