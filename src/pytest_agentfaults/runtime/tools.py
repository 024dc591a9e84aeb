"""Tools: plain functions with a schema taken from their signature.

```python
@af.tool
def fetch(url: str) -> str:
    \"\"\"Fetch a URL.\"\"\"
    return httpx.get(url).text

fetch("https://example.com")                    # still the plain function
fetch.invoke('{"url": "https://example.com"}')  # validated, with recovery
```
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar, overload

from pytest_agentfaults.runtime._invoke import ainvoke, invoke
from pytest_agentfaults.runtime._tool import BaseTool

if TYPE_CHECKING:
    from types import FrameType

    from pytest_agentfaults.runtime.backoff import ResilienceConfig
    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.policy import OnError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Tool", "as_tool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


class Tool(BaseTool[P, R]):
    """A function the model may call, with its argument schema and recovery policy.

    Calling a `Tool` calls the plain function. `invoke` / `ainvoke` take the arguments as a
    model would send them (a dict or a JSON string), validate them, and run the tool through
    its recovery policy.

    ``idempotent=False`` says that running the tool twice may do its work twice (a payment,
    an email). After an ambiguous failure (a timeout, a connection broken after the request
    went out: see `pytest_agentfaults.errors.is_ambiguous`) such a tool is not re-run; the
    failure goes back to the model with the advice to check the state first, unless its
    policy opts in with ``af.retry(..., allow_non_idempotent=True)``.
    """

    def invoke(
        self,
        arguments: str | Mapping[str, Any] | None = None,
        *,
        config: ResilienceConfig | None = None,
        clock: Clock | None = None,
    ) -> Any:
        """Validate ``arguments`` and run the tool through its own recovery policy.

        Returns the tool's result, or raises the error that recovery could not cure.
        """
        __tracebackhide__ = True
        return invoke(self, arguments, config, clock)

    async def ainvoke(
        self,
        arguments: str | Mapping[str, Any] | None = None,
        *,
        config: ResilienceConfig | None = None,
        clock: Clock | None = None,
    ) -> Any:
        """The async twin of `invoke`: awaits async tools, waits through ``clock.asleep``."""
        __tracebackhide__ = True
        return await ainvoke(self, arguments, config, clock)


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    on_error: OnError | None = None,
    idempotent: bool = True,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...


def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    on_error: OnError | None = None,
    idempotent: bool = True,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a tool; usable as ``@tool`` or ``@tool(name=..., on_error=...)``.

    The argument schema comes from the type hints (pydantic validates), the description
    from the docstring. ``idempotent=False`` marks a tool that must not run twice: see
    `Tool`.
    """
    # The local names of the frame that decorates (`_local_names`), read when decorating,
    # not when `tool(...)` is called: a frame's f_locals is a snapshot on 3.11 and 3.12 and
    # a live view on 3.13 (PEP 667), and a class defined in between must resolve on each.
    if function is not None:
        return Tool(
            function,
            name=name,
            description=description,
            on_error=on_error,
            namespace=_local_names(sys._getframe(1)),  # noqa: SLF001 - as pydantic does
            idempotent=idempotent,
        )

    def decorate(fn: Callable[P, R]) -> Tool[P, R]:
        return Tool(
            fn,
            name=name,
            description=description,
            on_error=on_error,
            namespace=_local_names(sys._getframe(1)),  # noqa: SLF001
            idempotent=idempotent,
        )

    return decorate


#: A comprehension's own frame (Python 3.11; 3.12 runs them inline, PEP 709), called by the
#: frame that holds the comprehension: its locals are the enclosing function's, too.
_COMPREHENSIONS: Final = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


def _local_names(frame: FrameType) -> Mapping[str, Any]:
    """The local names a tool's hints may use, so a class defined inside a function resolves.

    The decorating frame's own, and from a comprehension the enclosing frame's under them,
    as one inline comprehension sees them on 3.12+.
    """
    names: Mapping[str, Any] = frame.f_locals
    while frame.f_code.co_name in _COMPREHENSIONS and frame.f_back is not None:
        frame = frame.f_back
        names = {**frame.f_locals, **names}
    return names


def as_tool(value: Tool[Any, Any] | Callable[..., Any]) -> Tool[Any, Any]:
    """A `Tool` as it is, or a plain callable made into one."""
    if isinstance(value, Tool):
        return value
    return Tool(value)
