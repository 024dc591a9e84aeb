"""Where the kit and the test's own HTTP mocks cannot compose: refused at setup.

HTTP faults compose with any mock (see `pytest_agentfaults.testing.http`): they fire where
the client hands a request to its transport, before any mock. One pairing cannot work:
``llm_server`` is a real server that must receive requests over its socket, and
pytest-httpx's ``httpx_mock`` answers every httpx request in the test by default, those to
the server included. The server would never see them, its script and its faults would
never run, and the test would fail far from the cause; so it fails at setup instead.
"""

from __future__ import annotations

from typing import Any

from pytest_agentfaults.errors import UsageError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["check_llm_server_mocks"]

_LET_LOOPBACK_THROUGH = (
    '@pytest.mark.httpx_mock(should_mock=lambda request: request.url.host != "127.0.0.1")'
)


def check_llm_server_mocks(
    test: str, fixturenames: list[str], markers: list[Any], url: str
) -> None:
    """Raise `UsageError` when pytest-httpx would answer the requests meant for ``url``.

    ``markers`` are the test's ``httpx_mock`` markers, closest first (pytest-httpx merges
    their keyword arguments, the closest winning); ``url`` is the server's OpenAI URL.
    """
    __tracebackhide__ = True
    if "httpx_mock" not in fixturenames:
        return
    options: dict[str, Any] = {}
    for marker in markers:
        options = {**marker.kwargs, **options}
    should_mock = options.get("should_mock")
    if should_mock is not None:
        import httpx  # noqa: PLC0415 # lazy: httpx loads only when both fixtures meet

        try:
            swallowed = bool(should_mock(httpx.Request("POST", url)))
        except Exception:  # the user's predicate cannot judge this request: trust it
            return
        if not swallowed:
            return
    raise UsageError(
        f"{test} uses llm_server and pytest-httpx's httpx_mock: httpx_mock answers the "
        f"httpx requests to llm_server ({url}) itself, so the server would never receive "
        "them, and its script and http faults would never run. Let loopback requests "
        f"through to the server with {_LET_LOOPBACK_THROUGH} on the test, or use only one "
        "of the two fixtures. (httpx2 clients, such as the official SDKs, are not mocked "
        "by pytest-httpx.)"
    )
