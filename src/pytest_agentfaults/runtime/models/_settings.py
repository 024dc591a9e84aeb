"""A model client's settings, checked once: base URL, API key, secrets to scrub, clients."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Final

import httpx

from pytest_agentfaults._redact import REDACTED, redact_text
from pytest_agentfaults.errors import UsageError

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "api_key_for",
    "check_base_url",
    "check_setup",
    "scrubber",
    "user_agent",
    "wrong_client",
]


def check_base_url(value: str, *, cls: str, source: str, example: str) -> str:
    """``value`` without a trailing slash, once it is an absolute http(s) URL with a host.

    ``source`` says where the value came from (``"base_url"`` or an environment variable),
    ``example`` is a correct value for the message.
    """
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{cls}: {source} is empty; use e.g. {example!r}")
    text = value.strip().rstrip("/")
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise UsageError(
            f"{cls}: {source}={value!r} is not a URL ({exc}); use e.g. {example!r}"
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        if "://" not in value:
            raise UsageError(
                f"{cls}: {source}={value!r} has no scheme; write it with http:// or https://, "
                f"e.g. {'https://' + text if '.' in text.split('/')[0] else example!r}"
            )
        raise UsageError(
            f"{cls}: {source}={value!r} must be an http:// or https:// URL, e.g. {example!r}"
        )
    if url.query or url.fragment:
        raise UsageError(f"{cls}: {source}={value!r} must not have a query or fragment")
    return text


def api_key_for(
    cls: str, api_key: str | None, *, env: str, root: str, official_host: str
) -> str | None:
    """The key to send: ``api_key``, else ``$env``.

    Only the provider's own host requires one; a missing key there is a `UsageError` raised
    before any request is sent. Other servers (vLLM, llama.cpp, the loopback server) get
    none unless one is given.
    """
    key = api_key if api_key is not None else os.environ.get(env)
    if not key and httpx.URL(root).host == official_host:
        raise UsageError(
            f"{cls} needs an API key for {official_host}: set the {env} environment "
            "variable or pass api_key=... (a custom base_url needs none)"
        )
    return key


def scrubber(secrets: tuple[str, ...]) -> Callable[[str], str]:
    """Redact key-shaped text, and these exact secrets wherever they appear."""
    exact = tuple(s for s in secrets if len(s) >= 4)

    def scrub(text: str) -> str:
        for secret in exact:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact_text(text)

    return scrub


# An httpx2 client (the fork the official SDKs use) looks like an httpx one by its class name.
_HTTPX2_HINT: Final = (
    "; the model clients of this package are built on httpx, so pass an httpx client "
    "(httpx2 belongs to the official openai and anthropic SDKs, which http_faults reaches "
    "as they are)"
)


def wrong_client(rule: str, value: object) -> UsageError:
    """The error for a client of the wrong type, named with its library (``httpx2.Client``)."""
    kind = type(value)
    library = kind.__module__.split(".")[0]
    shown = kind.__qualname__ if library == "builtins" else f"{library}.{kind.__qualname__}"
    return UsageError(f"{rule}, not {shown}{_HTTPX2_HINT if library == 'httpx2' else ''}")


def check_setup(
    cls: str,
    model: object,
    http_client: object,
    async_http_client: object,
) -> None:
    """A `UsageError` when the model name or an injected httpx client is unusable."""
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"{cls}: model must be a model name such as 'gpt-4o-mini'")
    if http_client is not None and not isinstance(http_client, httpx.Client | httpx.AsyncClient):
        raise wrong_client(
            f"{cls}: http_client must be an httpx.Client or httpx.AsyncClient", http_client
        )
    if async_http_client is not None:
        if not isinstance(async_http_client, httpx.AsyncClient):
            raise wrong_client(
                f"{cls}: async_http_client must be an httpx.AsyncClient", async_http_client
            )
        if isinstance(http_client, httpx.AsyncClient):
            raise UsageError(
                f"{cls}: both http_client and async_http_client are httpx.AsyncClient; "
                "pass the httpx.Client as http_client"
            )


@functools.cache
def user_agent() -> str:
    """``pytest-agentfaults/<version>``, the user-agent our model clients send.

    The resilience verdict tells their requests from an SDK's by it (a user's own
    ``headers={"user-agent": ...}`` wins).
    """
    try:
        return f"pytest-agentfaults/{version('pytest-agentfaults')}"
    except PackageNotFoundError:  # a source tree that is not installed: the name alone
        return "pytest-agentfaults/0"
