"""The retry rules of each HTTP client the verdict knows, as data.

Read from the installed SDK sources (``openai/_base_client.py`` and
``anthropic/_base_client.py``: ``_should_retry``, ``_parse_retry_after_header``,
``_calculate_retry_timeout``, ``DEFAULT_MAX_RETRIES``) and from our own
`pytest_agentfaults.runtime.models._retry.TransportRetry`. The verdict judges a request by
the rules of the client that sent it (the ``client`` field of its ``http.request`` events,
from the user-agent), so a client is never faulted for doing what its own policy says.

================  ==========================  ==========================  ===================
rule              openai / anthropic SDKs     this runtime (TransportRetry)  other clients
================  ==========================  ==========================  ===================
statuses retried  408, 409, 429, every 5xx    408, 429, 500, 502, 503,    408, 409, 429, 5xx
                                              504, 529
x-should-retry    obeyed, both ways           obeyed, both ways           obeyed
timeouts          retried                     not retried (on_llm_error)  retried
Retry-After       > 0 waited: openai up to    > 0 waited up to max_delay  > 0 waited; over
                  120 s (above: no retry),    (60 s; above: no retry);    60 s may give up
                  anthropic any; 0: backoff   0: backoff
backoff           min(0.5 * 2**n, 8) s less   0.25 * 2**n s less up to    -
                  up to 25 % jitter           25 % jitter (seeded)
attempts          max_retries + 1 (3)         max_attempts (3)            5 (the verdict's)
================  ==========================  ==========================  ===================

google-genai (``google/genai/_api_client.py``, ``retry_args``) retries nothing unless its
client is given ``HttpRetryOptions``: then 408, 429, 500, 502, 503, 504, timeouts and
failed connects, ``attempts`` (5) times on tenacity's backoff, never reading Retry-After;
it raises ``json.JSONDecodeError`` on any 2xx body that is not JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["GENAI_AGENT", "RULES", "ClientRules", "client_rules"]

#: the ``client`` of a request google-genai sent (its user-agent's product)
GENAI_AGENT: Final = "google-genai-sdk"

_TIMEOUTS: Final = frozenset(
    {
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TimeoutException",
        "TimeoutError",
        "ModelTimeoutError",
        "APITimeoutError",
    }
)


@dataclass(frozen=True, slots=True)
class ClientRules:
    """How one kind of client retries, and the setting that changes it."""

    kind: str  # "openai", "anthropic", "agentfaults", "httpx", "other"
    name: str  # as a finding names it: "the official openai SDK"
    statuses: frozenset[int]  # statuses below 500 it retries
    any_5xx: bool  # every status >= 500 is retried (else only those in ``statuses``)
    retries_timeouts: bool
    retry_after_cap: float | None  # a longer Retry-After is not waited out (None: any is)
    max_attempts: int | None  # its declared attempt cap; None: its own setting, not judged
    run_decides: bool = False  # a cut stream is left to the run's on_llm_error
    #: the 2xx faults whose body it raises on (not hands back): `json.JSONDecodeError`
    raises_on: frozenset[str] = frozenset()
    #: the same, for a request that asked for a stream (None: as ``raises_on``)
    raises_on_stream: frozenset[str] | None = None

    def retries_status(self, status: int) -> bool:
        """Whether this client retries ``status`` when the server says nothing more."""
        return status in self.statuses or (self.any_5xx and status >= 500)

    def retries_error(self, error_type: str) -> bool:
        """Whether this client retries a transport error of type ``error_type``."""
        return self.retries_timeouts or error_type not in _TIMEOUTS


_SDK_STATUSES: Final = frozenset({408, 409, 429})
_NOT_JSON: Final = frozenset({"not_json"})

RULES: Final[dict[str, ClientRules]] = {
    "openai": ClientRules(
        kind="openai",
        name="the official openai SDK",
        statuses=_SDK_STATUSES,
        any_5xx=True,
        retries_timeouts=True,
        retry_after_cap=120.0,
        max_attempts=None,
        raises_on=_NOT_JSON,
        # its SSE decoder: an event that is not JSON raises; a body with no event, nothing
        raises_on_stream=frozenset({"malformed_body"}),
    ),
    "anthropic": ClientRules(
        kind="anthropic",
        name="the official anthropic SDK",
        statuses=_SDK_STATUSES,
        any_5xx=True,
        retries_timeouts=True,
        retry_after_cap=None,
        max_attempts=None,
        raises_on=_NOT_JSON,
        raises_on_stream=frozenset(),  # a stream of either is handed back empty
    ),
    # google-genai (``_api_client.retry_args``): no retry at all unless the client is given
    # ``HttpRetryOptions``; then these statuses, timeouts and failed connects, on tenacity's
    # backoff, never reading Retry-After (so no cap), ``attempts`` (5) its own setting
    "genai": ClientRules(
        kind="genai",
        name="the google-genai SDK",
        statuses=frozenset({408, 429, 500, 502, 503, 504}),
        any_5xx=False,
        retries_timeouts=True,
        retry_after_cap=None,
        max_attempts=None,
        raises_on=frozenset({"not_json", "malformed_body"}),
    ),
    "agentfaults": ClientRules(
        kind="agentfaults",
        name="this runtime's model client",
        statuses=frozenset({408, 429, 500, 502, 503, 504, 529}),
        any_5xx=False,
        retries_timeouts=False,
        retry_after_cap=60.0,
        max_attempts=3,
        run_decides=True,
    ),
    "httpx": ClientRules(
        kind="httpx",
        name="plain httpx",
        statuses=_SDK_STATUSES,
        any_5xx=True,
        retries_timeouts=True,
        retry_after_cap=60.0,
        max_attempts=5,
    ),
    "other": ClientRules(
        kind="other",
        name="the client",
        statuses=_SDK_STATUSES,
        any_5xx=True,
        retries_timeouts=True,
        retry_after_cap=60.0,
        max_attempts=5,
    ),
}


def client_rules(client: object) -> ClientRules:
    """The rules for an ``http.request``'s ``client`` field (``"openai.OpenAI"``, ...)."""
    if not isinstance(client, str):
        return RULES["other"]
    package = client.split(".", 1)[0]
    if package in ("openai", "anthropic"):
        return RULES[package]
    if client in ("httpx", "httpx2"):
        return RULES["httpx"]
    if client == "agentfaults":
        return RULES["agentfaults"]
    if client == GENAI_AGENT:
        return RULES["genai"]
    return RULES["other"]


def describe_client(client: object) -> str:
    """The client as a finding names it: ``the official openai SDK (openai.OpenAI)``."""
    rules = client_rules(client)
    if rules.kind in ("openai", "anthropic"):
        return f"{rules.name} ({client})" if client != rules.kind else rules.name
    if rules.kind == "genai":
        return f"{rules.name} (genai.Client)"
    if rules.kind == "other" and isinstance(client, str):
        return f"the client {client!r}"
    return rules.name
