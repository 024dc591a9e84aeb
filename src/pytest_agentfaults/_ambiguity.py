"""Which failures leave it unknown whether the failed call took effect (``is_ambiguous``).

Kept apart from the taxonomy in `errors`, which re-exports it: the lists are matched by
class name, so they need no import of the libraries whose errors they name.
"""

from __future__ import annotations

from typing import Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["AMBIGUOUS_ERROR_NAMES", "UNSENT_ERROR_NAMES", "is_ambiguous"]

# Ambiguous failures: the request may have reached the other side and done its work, only
# the answer was lost. Matched by class name (in the MRO) so that httpx, requests, urllib3
# and http.client errors are known without importing them, and so a trace (which keeps type
# names only) can be judged by the same list.
AMBIGUOUS_ERROR_NAMES: Final = frozenset(
    {
        "TimeoutError",  # builtin, asyncio's, ToolTimeoutError, ModelTimeoutError
        "ToolTimeoutError",
        "ModelTimeoutError",
        "ReadTimeout",  # httpx, requests: the request was sent, no answer came
        "WriteTimeout",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",  # httpx: the server hung up without an answer
        "ConnectionError",  # builtin (refused aside, below); requests' after-send failures
        "ConnectionResetError",
        "ConnectionAbortedError",
        "BrokenPipeError",
        "RemoteDisconnected",
        "IncompleteRead",
        "ProtocolError",  # urllib3
        "ChunkedEncodingError",  # requests
    }
)
# Failures known to happen before anything was sent: the call surely did not take effect.
# They win over the list above (requests' ConnectTimeout is also a ConnectionError).
UNSENT_ERROR_NAMES: Final = frozenset(
    {
        "ConnectionRefusedError",
        "ConnectError",  # httpx
        "ConnectTimeout",  # httpx, requests
        "PoolTimeout",  # httpx: no connection was free
        "NetworkBlockedError",
        "gaierror",  # DNS
    }
)


def is_ambiguous(exc: object) -> bool:
    """Whether ``exc`` leaves it unknown if the failed call took effect.

    True for timeouts and for connections that broke after the request was sent (reset,
    aborted, a server that hung up); False for failures known to come before sending
    (refused, DNS, no connection) and for everything else a tool raises, which says the
    call failed. An exception may decide for itself with an ``ambiguous`` attribute.

    ```python
    >>> from pytest_agentfaults.errors import is_ambiguous
    >>> is_ambiguous(TimeoutError())
    True
    >>> is_ambiguous(ConnectionRefusedError())
    False
    ```
    """
    if not isinstance(exc, BaseException):
        return False  # a ToolFailure: the tool said what happened
    explicit = getattr(exc, "ambiguous", None)
    if isinstance(explicit, bool):
        return explicit
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & UNSENT_ERROR_NAMES:
        return False
    return bool(names & AMBIGUOUS_ERROR_NAMES)
