"""Fixtures ``openai_client`` and ``anthropic_client``, sync and async.

The official SDKs' clients, built once per session and put back as built (or copied)
for each test (`pytest_agentfaults.testing._sdk_clients`). A plugin of its own, registered by
``plugin.py`` at configure time; light like it: the SDKs load on a fixture's first use.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_agentfaults._plugin_hooks import _state

if TYPE_CHECKING:
    from pytest_agentfaults.testing._sdk_clients import SdkClients

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "anthropic_client",
    "async_anthropic_client",
    "async_openai_client",
    "openai_client",
]


@pytest.fixture(scope="session")
def _agentfaults_sdk_clients() -> Generator[SdkClients, None, None]:
    """The session's official SDK clients, each built on its first use."""
    from pytest_agentfaults.testing._sdk_clients import SdkClients  # noqa: PLC0415 - the kit loads on first use

    clients = SdkClients()
    try:
        yield clients
    finally:
        clients.close()


def _sdk_client(request: pytest.FixtureRequest, clients: SdkClients) -> Any:
    _state(request.node)  # the test uses the kit: its faults, routes and network guard
    name = str(request.fixturename)
    url = None
    if "llm_server" in request.fixturenames:
        provider = "anthropic" if "anthropic" in name else "openai"
        url = request.getfixturevalue("llm_server").base_url(provider)
    return clients.for_test(name, url)


@pytest.fixture
def openai_client(request: pytest.FixtureRequest, _agentfaults_sdk_clients: SdkClients) -> Any:
    """An ``openai.OpenAI``, built once per session, as built for each test.

    It points at ``https://api.openai.com/v1``, answered in-process by the test's http
    faults and ``http_faults`` routes (nothing else leaves the machine), or at
    ``llm_server`` when the test asks for that too. Options the test changes stay in it.
    """
    return _sdk_client(request, _agentfaults_sdk_clients)


@pytest.fixture
def async_openai_client(
    request: pytest.FixtureRequest, _agentfaults_sdk_clients: SdkClients
) -> Any:
    """An ``openai.AsyncOpenAI``, like `openai_client`."""
    return _sdk_client(request, _agentfaults_sdk_clients)


@pytest.fixture
def anthropic_client(request: pytest.FixtureRequest, _agentfaults_sdk_clients: SdkClients) -> Any:
    """An ``anthropic.Anthropic`` pointed at ``https://api.anthropic.com``, like `openai_client`."""
    return _sdk_client(request, _agentfaults_sdk_clients)


@pytest.fixture
def async_anthropic_client(
    request: pytest.FixtureRequest, _agentfaults_sdk_clients: SdkClients
) -> Any:
    """An ``anthropic.AsyncAnthropic``, like `anthropic_client`."""
    return _sdk_client(request, _agentfaults_sdk_clients)
