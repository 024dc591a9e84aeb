"""Provider error bodies and the retry headers that go with them: the one home of both.

The shapes follow each API's documented error format: OpenAI ``{"error": {"message",
"type", "param", "code"}}``, Anthropic ``{"type": "error", "error": {"type", "message"}}``
(with a ``request_id`` when one is given), Ollama ``{"error": "..."}``, Gemini
``{"error": {"code", "message", "status"}}``. The loopback server, the in-process http
faults and `AgentFaultsProvider.provider_error_body` all build theirs here.
"""

from __future__ import annotations

from http.client import responses as _phrases
from typing import Any, Final

from pytest_agentfaults.testing._wire._base import Provider, encode
from pytest_agentfaults.testing._wire._gemini import gemini_status

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "error_body",
    "error_payload",
    "error_type",
    "retry_after_headers",
    "status_phrase",
]

_ANTHROPIC_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    # the documented type (docs.claude.com/en/api/errors: Cloudflare sends it, in front of
    # the API), though the SDK's typed ErrorObject union does not list it
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
# OpenAI: status -> (error type, the default code)
_OPENAI_TYPES: Final[dict[int, tuple[str, str | None]]] = {
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
}
_DEFAULT: Final = object()


def retry_after_headers(seconds: float | None) -> list[tuple[str, str]]:
    """``Retry-After`` (whole seconds, rounded up) and ``retry-after-ms`` for ``seconds``."""
    if seconds is None:
        return []
    whole = int(seconds) if float(seconds).is_integer() else int(seconds) + 1
    return [("retry-after", str(whole)), ("retry-after-ms", str(round(seconds * 1000)))]


def status_phrase(status: int) -> str:
    """The reason phrase of ``status`` (``"Overloaded"`` for Anthropic's 529)."""
    phrase = _phrases.get(status)  # HTTPStatus(status).phrase, without the enum's lookup
    if phrase is not None:
        return phrase
    return "Overloaded" if status == 529 else "Error"


def error_type(provider: Provider | None, status: int) -> str:
    """The error ``type`` ``provider`` reports with ``status`` (Ollama has none: ``""``)."""
    if provider == "ollama":
        return ""
    if provider == "gemini":
        return gemini_status(status)
    if provider == "anthropic":
        fallback = "api_error" if status >= 500 else "invalid_request_error"
        return _ANTHROPIC_TYPES.get(status, fallback)
    if status in _OPENAI_TYPES:
        return _OPENAI_TYPES[status][0]
    return "server_error" if status >= 500 else "invalid_request_error"


def error_payload(
    provider: Provider | None,
    status: int,
    message: str,
    *,
    code: Any = _DEFAULT,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The JSON error object ``provider`` answers ``status`` with (OpenAI's for None).

    ``code`` is OpenAI's ``error.code`` (by default what OpenAI sends for the status:
    ``"rate_limit_exceeded"`` for a 429, ``"invalid_api_key"`` for a 401, else null);
    ``request_id`` is Anthropic's top-level ``request_id``.
    """
    kind = error_type(provider, status)
    if provider == "ollama":
        return {"error": message}
    if provider == "gemini":
        return {"error": {"code": status, "message": message, "status": kind}}
    if provider == "anthropic":
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        if request_id is not None:
            payload["request_id"] = request_id
        return payload
    if code is _DEFAULT:
        code = _OPENAI_TYPES.get(status, (kind, None))[1]
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_body(
    provider: Provider | None, status: int, message: str = "", *, request_id: str | None = None
) -> bytes:
    """A provider-shaped JSON error body for ``status``, as compact bytes.

    ``request_id`` goes in Anthropic's body (the others send it in a header only).
    """
    message = message or f"agentfaults: injected HTTP {status} {status_phrase(status)}"
    return encode(error_payload(provider, status, message, request_id=request_id)).encode()
