"""Which framework's tool attempt the current context is inside, so nested hooks count once.

An Agents SDK agent's MCP tools run through the SDK's tool invoker (hooked by the
``openai_agents`` adapter) and then through ``mcp.ClientSession.call_tool`` (hooked by the
``mcp`` adapter). One call of the model is one attempt: the outer framework, whose recovery
the test observes, owns it, and the inner hook lets the call through untouched. A
ContextVar, so it follows the attempt into the tasks and threads it starts and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["inside_attempt", "outer_framework"]

_outer: ContextVar[str | None] = ContextVar("agentfaults_outer_tool_attempt", default=None)


@contextmanager
def inside_attempt(framework: str) -> Iterator[None]:
    """Mark the block as the body of one of ``framework``'s tool attempts."""
    token = _outer.set(framework)
    try:
        yield
    finally:
        _outer.reset(token)


def outer_framework() -> str | None:
    """The framework whose tool attempt encloses this context, if any."""
    return _outer.get()
