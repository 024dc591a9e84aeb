"""Retries made below our runtime, read off the ``http.request`` events: an SDK's own.

The official SDKs retry inside their client, where no ``transport.retry`` or
``llm.retry`` event is written; the only sign is the request sent again. So an
``http.request`` counts as a retry when it says so (the SDK's ``x-stainless-retry-count``
header, kept as ``retry_count``, above 0), or, for a client that says nothing, when it
repeats an earlier request of the test to the same route with the same body. Requests
made inside one of our agent runs are left to that run's own retry events.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_agentfaults.runtime.events import Event

__all__ = ["OUTSIDE_RUNS", "http_retries"]

#: the run id of the HTTP events recorded outside any agent run (`TestState`)
OUTSIDE_RUNS = "http"


def http_retries(events: Iterable[Event]) -> int:
    """How many of ``events``' ``http.request`` attempts were retries (see the module docs)."""
    retries = 0
    seen: set[tuple[object, ...]] = set()
    for event in events:
        if event.type != "http.request":
            continue
        retry_count = event.field("retry_count")
        if isinstance(retry_count, int):
            retries += retry_count > 0
            continue
        if event.run_id != OUTSIDE_RUNS:
            continue  # our own client, in a run: counted by transport.retry / llm.retry
        route = (event.field("method"), event.field("url"), event.field("body_sha"))
        if route in seen:
            retries += 1
        else:
            seen.add(route)
    return retries
