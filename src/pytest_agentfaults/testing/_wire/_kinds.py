"""What the newer ``http=`` kinds answer, per provider: one description for both homes.

`Served` says what a fault puts on the wire: a status, headers, the body or the stream's
events, and what happens after them (the end, a cut, a stall), maybe after a slow first
chunk. The in-process layer (`_clients`) and the loopback server (`_serve`) each turn it
into their own answer, so a kind means the same thing in both.

The bodies are the providers' own: OpenAI's ``context_length_exceeded`` and ``tokens per
min (TPM)`` 429, Anthropic's ``prompt is too long`` and per-minute ``rate_limit_error``,
Ollama's ``the input length exceeds the context length``, Gemini's ``INVALID_ARGUMENT``
token count and ``RESOURCE_EXHAUSTED`` quota with its ``RetryInfo``.
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pytest_agentfaults.testing._wire._answers import truncated_events
from pytest_agentfaults.testing._wire._base import JSON_TYPE, Provider, content_type, encode
from pytest_agentfaults.testing._wire._errors import error_payload, status_phrase
from pytest_agentfaults.testing._wire._ids import RequestIds, draw_id, id_headers

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "QUOTA_WAIT",
    "RETRY_AFTER_FORMATS",
    "STATUS_KINDS",
    "Served",
    "kind_served",
    "retry_headers",
    "status_served",
]

RETRY_AFTER_FORMATS: Final = ("seconds", "ms", "date", "both")
#: the kinds that answer with an HTTP status (so take ``should_retry=``)
STATUS_KINDS: Final = frozenset({"proxy_html", "context_length", "quota"})
#: the wait a quota 429 asks for when the fault gives no ``retry_after=`` (body and headers)
QUOTA_WAIT: Final = 1.0

_NOT_JSON: Final = (
    b"upstream connect error or disconnect/reset before headers. "
    b"reset reason: connection termination"
)
_CONTEXT: Final[dict[str, tuple[str, str | None]]] = {
    "openai": (
        "This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131072 tokens. Please reduce the length of the messages.",
        "messages",
    ),
    "openai-responses": (
        "Your input exceeds the context window of this model. Please adjust your input "
        "and try again.",
        "input",
    ),
    "anthropic": ("prompt is too long: 208476 tokens > 200000 maximum", None),
    "ollama": ("the input length exceeds the context length", None),
    "gemini": (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        None,
    ),
}


@dataclass(slots=True)
class Served:
    """What a fault answers with (see the module docs)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes] = field(default_factory=list)
    stream: bool = False
    #: after the chunks: the answer ends, the connection is cut, or it stalls
    then: Literal["end", "cut", "stall"] = "end"
    #: seconds before the first chunk (``slow_first_token``)
    first_delay: float | None = None
    #: the wait the answer asks for (recorded with the request)
    retry_after: float | None = None


def retry_headers(
    seconds: float | None, fmt: str | None = None, *, now: float | None = None
) -> list[tuple[str, str]]:
    """The retry headers for ``seconds``, in ``fmt`` (default ``"both"``).

    ``"seconds"``: ``Retry-After`` in whole seconds (rounded up); ``"ms"``:
    ``retry-after-ms`` alone; ``"date"``: ``Retry-After`` as an HTTP date ``seconds`` from
    ``now`` (``time.time()``, as the SDKs compute it); ``"both"``: ``Retry-After`` and
    ``retry-after-ms``.
    """
    if seconds is None:
        return []
    whole = str(math.ceil(seconds))
    millis = str(round(seconds * 1000))
    if fmt == "seconds":
        return [("retry-after", whole)]
    if fmt == "ms":
        return [("retry-after-ms", millis)]
    if fmt == "date":
        moment = (time.time() if now is None else now) + seconds
        return [("retry-after", email.utils.formatdate(math.ceil(moment), usegmt=True))]
    return [("retry-after", whole), ("retry-after-ms", millis)]


def _json(
    status: int,
    payload: Any,
    extra: list[tuple[str, str]] | None = None,
    request_id: str | None = None,
    provider: Provider | None = None,
) -> Served:
    headers = [("content-type", JSON_TYPE), *id_headers(provider, request_id), *(extra or [])]
    return Served(status, headers, [encode(payload).encode()])


def status_served(
    provider: Provider | None,
    status: int,
    *,
    retry_after: float | None = None,
    retry_after_format: str | None = None,
    should_retry: bool | None = None,
    ids: RequestIds | None = None,
) -> Served:
    """An injected status: the provider's error body and the retry headers asked for.

    With the provider's request id, drawn from ``ids`` (by default the current test's).
    """
    request_id = draw_id(provider, ids)
    # the body holds the request id for Anthropic only: the others' is the same every time
    key = (provider, status, request_id if provider == "anthropic" else None)
    body = _status_bodies.get(key)
    if body is None:
        message = f"agentfaults: injected HTTP {status} {status_phrase(status)}"
        payload = error_payload(provider, status, message, request_id=request_id)
        body = encode(payload).encode()
        if key[2] is None:
            if len(_status_bodies) >= 256:  # bounded all the same
                _status_bodies.clear()
            _status_bodies[key] = body
    headers = [("content-type", JSON_TYPE), *id_headers(provider, request_id)]
    served = Served(status, headers, [body])
    _finish_status(served, retry_after, retry_after_format, should_retry)
    return served


# (provider, status, None) -> the body of an injected status (bytes: never changed)
_status_bodies: dict[tuple[Any, ...], bytes] = {}


def _finish_status(
    served: Served, retry_after: float | None, fmt: str | None, should_retry: bool | None
) -> None:
    served.headers += retry_headers(retry_after, fmt)
    served.retry_after = retry_after
    if should_retry is not None:
        served.headers.append(("x-should-retry", "true" if should_retry else "false"))


def _proxy_page(status: int) -> bytes:
    title = f"{status} {status_phrase(status)}"
    return (
        f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
        f"<center><h1>{title}</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    ).encode()


def _context_length(provider: Provider | None, request_id: str | None) -> Served:
    message, param = _CONTEXT[provider or "openai"]
    payload = error_payload(
        provider, 400, message, code="context_length_exceeded", request_id=request_id
    )
    if provider in (None, "openai", "openai-responses"):
        payload["error"]["param"] = param
    return _json(400, payload, None, request_id, provider)


def _quota(provider: Provider | None, model: str, wait: float, request_id: str | None) -> Served:
    if provider == "anthropic":
        message = (
            "This request would exceed the rate limit for your organization of 50,000 "
            "input tokens per minute. For details, refer to: "
            "https://docs.claude.com/en/api/rate-limits. You can see the response headers "
            "for current usage. Please reduce the prompt length or the maximum tokens "
            "requested, or try again later."
        )
        # when the limit refills, as Anthropic says it: an RFC 3339 time (the SDK waits by
        # the retry-after headers; an app may read this one)
        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(math.ceil(time.time() + wait)))
        extra = [
            ("anthropic-ratelimit-input-tokens-limit", "50000"),
            ("anthropic-ratelimit-input-tokens-remaining", "0"),
            ("anthropic-ratelimit-input-tokens-reset", reset),
        ]
        payload = error_payload(provider, 429, message, request_id=request_id)
        return _json(429, payload, extra, request_id, provider)
    if provider == "gemini":
        payload = error_payload(
            provider,
            429,
            "You exceeded your current quota, please check your plan and billing details. "
            "Quota exceeded for metric: generativelanguage.googleapis.com/"
            f"generate_content_free_tier_input_token_count, limit: 250000, model: {model}\n"
            f"Please retry in {wait:g}s.",
        )
        payload["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_input_token_count",
                        "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{wait:g}s"},
        ]
        return _json(429, payload)
    if provider == "ollama":
        return _json(429, error_payload(provider, 429, "too many requests per minute"))
    message = (
        f"Rate limit reached for {model} in organization org-agentfaults on tokens per min "
        "(TPM): Limit 200000, Used 199500, Requested 1200. Please try again in "
        f"{wait:g}s. Visit https://platform.openai.com/account/rate-limits to learn more."
    )
    payload = error_payload(provider, 429, message, code="rate_limit_exceeded")
    payload["error"]["type"] = "tokens"
    extra = [
        ("x-ratelimit-limit-tokens", "200000"),
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", f"{wait:g}s"),
    ]
    return _json(429, payload, extra, request_id, provider)


def kind_served(
    kind: str,
    provider: Provider | None,
    *,
    stream: bool,
    model: str,
    status: int | None = None,
    after: int | None = None,
    retry_after: float | None = None,
    retry_after_format: str | None = None,
    should_retry: bool | None = None,
    delay: float | None = None,
    ids: RequestIds | None = None,
    answer: list[bytes] | None = None,
) -> Served:
    """What the kind ``kind`` answers a request to ``provider`` with.

    For ``not_json``, ``proxy_html``, ``context_length``, ``quota``, ``stall`` and
    ``truncated_stream``. ``slow_first_token`` delays the real answer, so it has no body
    of its own here (`Served.first_delay` only). What the provider itself answers
    carries its request id, from ``ids`` (by default the current test's); what a proxy
    answers (``not_json``, ``proxy_html``) has none.

    A quota 429 with no ``retry_after`` asks for `QUOTA_WAIT` seconds, in its body and
    its headers alike, so a client waits what the body says.

    ``answer``: the events of the scripted answer a ``stall`` or ``truncated_stream``
    stream sends the start of (a step peeked, not taken); without it, the kit's own
    partial answer. A body (``stream=False``) is always the kit's own.
    """
    if kind == "not_json":
        return Served(200, [("content-type", JSON_TYPE)], [_NOT_JSON])
    if kind == "slow_first_token":
        return Served(200, [], first_delay=delay)
    if kind in ("stall", "truncated_stream"):
        if stream and answer:
            media_type, events = content_type(provider, stream), answer
        else:
            media_type, events = truncated_events(provider, stream=stream, model=model)
        if not stream:  # a body: half of it, cut; or, stalled, nothing after the headers
            sent = [] if kind == "stall" else [events[0][: len(events[0]) // 2]]
        elif after is None:
            sent = events[: max(1, len(events) // 2)]
        else:  # never the terminal event
            sent = events[: min(after, len(events) - 1)]
        then: Literal["cut", "stall"] = "stall" if kind == "stall" else "cut"
        headers = [("content-type", media_type), *id_headers(provider, draw_id(provider, ids))]
        return Served(200, headers, sent, stream, then)
    if kind == "proxy_html":
        code = 502 if status is None else status
        served = Served(code, [("content-type", "text/html")], [_proxy_page(code)])
    elif kind == "context_length":
        served = _context_length(provider, draw_id(provider, ids))
    elif kind == "quota":
        retry_after = QUOTA_WAIT if retry_after is None else retry_after
        served = _quota(provider, model, retry_after, draw_id(provider, ids))
    else:
        raise ValueError(f"no wire answer for the http kind {kind!r}")
    _finish_status(served, retry_after, retry_after_format, should_retry)
    return served
