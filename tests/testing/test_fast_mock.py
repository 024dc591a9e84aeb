"""http_faults starts respx's mockers by setattr: the same patches, undone exactly."""

from __future__ import annotations

import httpcore
import httpx
import pytest
import respx
from respx.mocks import HTTPCoreMocker

from pytest_agentfaults.testing._fast_mock import start_mocker

TARGETS = [
    (httpcore.ConnectionPool, "handle_request"),
    (httpcore.HTTPProxy, "handle_request"),  # inherited: patched on the subclass, then removed
    (httpcore.AsyncConnectionPool, "handle_async_request"),
]


def test_start_then_respx_stop_restores_every_attribute():
    before = [
        (owner, name, name in owner.__dict__, getattr(owner, name)) for owner, name in TARGETS
    ]
    router = respx.Router(assert_all_mocked=False)
    HTTPCoreMocker.register(router)
    try:
        start_mocker(HTTPCoreMocker)
        for owner, name in TARGETS:
            assert getattr(owner, name).__name__ in ("mock", "amock")
        start_mocker(HTTPCoreMocker)  # already started: nothing added
        assert len(HTTPCoreMocker._patches) == len({id(p) for p in HTTPCoreMocker._patches})
    finally:
        HTTPCoreMocker.unregister(router)
        HTTPCoreMocker.stop()
    after = [(owner, name, name in owner.__dict__, getattr(owner, name)) for owner, name in TARGETS]
    assert after == before


@pytest.mark.allow_network
def test_routes_answer_and_a_users_respx_mock_still_works_after(http_faults):
    http_faults.get("https://api.example.com/a").respond(201)
    with httpx.Client() as client:
        assert client.get("https://api.example.com/a").status_code == 201
    with respx.mock(assert_all_called=True) as mock:
        mock.get("https://api.example.com/b").respond(202)
        assert httpx.get("https://api.example.com/b").status_code == 202
