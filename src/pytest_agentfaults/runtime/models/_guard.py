"""Our model clients refuse real hosts in a test that does not use the kit.

As pydantic-ai's ``ALLOW_MODEL_REQUESTS = False`` does for its models: under the pytest
plugin, ``af.OpenAIModel`` and the rest never reach a non-loopback host by accident. In a
test that uses the kit the test kit's guard on httpx does this job (it also sees the
test's routes and faults); this check covers the other tests, where the plugin only sets
`pytest_agentfaults._network_policy.CURRENT`. Outside pytest it costs one ContextVar read.
"""

from __future__ import annotations

import sys

import httpx

from pytest_agentfaults._network_policy import CURRENT, blocked_message, is_loopback
from pytest_agentfaults.errors import NetworkBlockedError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["refuse_real_hosts"]


def refuse_real_hosts(client: httpx.Client | httpx.AsyncClient, url: str) -> None:
    """Raise `NetworkBlockedError` if a POST to ``url`` would leave the machine in a test.

    Only when the request would go to the network: a client with its own transport (an
    ``httpx.MockTransport``, pytest-httpx, respx) answers for itself.
    """
    policy = CURRENT.get()
    if policy is None or policy.guarded:
        return
    target = httpx.URL(url)
    if is_loopback(target.host) or not _sends_to_network(client, target):
        return
    raise NetworkBlockedError(
        blocked_message(f"POST {target}", target.host, policy.test),
        host=target.host,
        test=policy.test,
    )


def _sends_to_network(client: httpx.Client | httpx.AsyncClient, url: httpx.URL) -> bool:
    transport = client._transport_for_url(url)
    method: object
    if isinstance(transport, httpx.HTTPTransport):
        method = type(transport).handle_request
    elif isinstance(transport, httpx.AsyncHTTPTransport):
        method = type(transport).handle_async_request
    else:
        return False
    if not str(getattr(method, "__module__", "")).startswith("httpx."):
        return False  # patched by pytest-httpx: its mock answers
    # a respx router of the test patches the connection pool below the transport; read,
    # never imported here (the runtime does not depend on respx)
    mocks = sys.modules.get("respx.mocks")
    mocker = getattr(mocks, "HTTPCoreMocker", None)
    return not getattr(mocker, "routers", None)
