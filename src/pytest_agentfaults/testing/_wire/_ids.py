"""Request ids: the ``x-request-id`` (OpenAI) and ``request-id`` (Anthropic) of every answer.

The official SDKs read them (``response._request_id``, ``APIStatusError.request_id``), and
Anthropic also puts the id in its error body (``request_id``). Real ids are random; the
kit's count per test (``req_agentfaults000001``, ``...000002``), so a test's answers are
the same bytes on every run and a snapshot of them does not change.

One `RequestIds` per fault plan, that is per test: the in-process faults and the scripted
route of a test draw from the same one (their ids never repeat within the test), and
the loopback server uses the one of the plan it is bound to.
"""

from __future__ import annotations

import itertools
import weakref
from typing import TYPE_CHECKING, Final

from pytest_agentfaults.testing._current import current_plan

if TYPE_CHECKING:
    from pytest_agentfaults.testing._wire._base import Provider

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["ID_HEADERS", "RequestIds", "draw_id", "id_headers", "request_ids"]

#: the header each provider sends its request id in (Gemini and Ollama send none)
ID_HEADERS: Final[dict[str | None, str]] = {
    "openai": "x-request-id",
    "openai-responses": "x-request-id",
    "anthropic": "request-id",
}


class RequestIds:
    """``req_agentfaults000001``, ``req_agentfaults000002`` ... (thread-safe: one `next`)."""

    __slots__ = ("_numbers",)

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    def __call__(self) -> str:
        return f"req_agentfaults{next(self._numbers):06d}"


# weak: a plan's ids go with the plan, never kept alive past its test
_by_plan: weakref.WeakKeyDictionary[object, RequestIds] = weakref.WeakKeyDictionary()
#: outside any plan (an unbound server, a request with no test context)
_outside: Final = RequestIds()


def request_ids(plan: object | None) -> RequestIds:
    """The ids of ``plan``'s test (of no test for None)."""
    if plan is None:
        return _outside
    ids = _by_plan.get(plan)
    if ids is None:
        ids = _by_plan.setdefault(plan, RequestIds())
    return ids


def draw_id(provider: Provider | None, ids: RequestIds | None = None) -> str | None:
    """The next id of ``ids`` for an answer of ``provider`` (None: it sends no id).

    Drawn only for a provider that sends ids, so the numbers are the same whichever way a
    test's answers come. Without ``ids``, those of the plan active in the calling context
    (an in-process fault runs in its test's context; the server hands in its binding's).
    """
    if provider not in ID_HEADERS:
        return None
    return (ids if ids is not None else request_ids(current_plan()))()


def id_headers(provider: Provider | None, request_id: str | None) -> list[tuple[str, str]]:
    """The request-id header ``provider`` sends (none for Gemini, Ollama, or no id)."""
    name = ID_HEADERS.get(provider)
    return [(name, request_id)] if name is not None and request_id is not None else []
