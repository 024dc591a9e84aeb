"""Keep secrets out of traces, reports, files and logs.

One place decides what a secret looks like: credential headers by name, and key-shaped
strings anywhere in text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["REDACTED", "redact_headers", "redact_text"]

REDACTED: Final = "[REDACTED]"

SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "openai-api-key",
        "anthropic-api-key",
        "cookie",
        "set-cookie",
    }
)

# (markers, pattern, keep-prefix group): a pattern runs only when one of its lower-cased
# markers occurs in the text. Most text has none, and substring tests are far cheaper than
# regular expressions: redaction runs on every recorded event.
_RULES: Final[tuple[tuple[tuple[str, ...], re.Pattern[str], str | None], ...]] = (
    (
        ("bearer", "basic"),
        re.compile(r"(\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
        "prefix",
    ),
    (("sk-",), re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{12,}"), None),
    (("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), None),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), None),
    (("gh",), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), None),
    (("xox",), re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), None),
    (
        ("apikey", "api_key", "api-key", "token", "secret", "password"),
        re.compile(
            r"(\b(?:api[_-]?key|access[_-]?token|secret|password|token)[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"'&,;}]{6,}",
            re.IGNORECASE,
        ),
        "prefix",
    ),
)


# No rule above can match fewer characters ("token=" and six more is the shortest), so
# shorter text (most names and previews) skips the scan.
_SHORTEST_SECRET: Final = 12


def _keep_prefix(match: re.Match[str]) -> str:
    return f"{match.group(1)}{REDACTED}"


# Every marker in one flat tuple: the common case (no marker at all) is one plain loop.
_MARKERS: Final = tuple(marker for markers, _, _ in _RULES for marker in markers)


def redact_text(text: str) -> str:
    """Replace every key-shaped substring of ``text`` with ``[REDACTED]``."""
    if not text or len(text) < _SHORTEST_SECRET:
        return text
    lowered = text.lower()
    for marker in _MARKERS:
        if marker in lowered:
            break
    else:
        return text
    for markers, pattern, keep in _RULES:
        for marker in markers:
            if marker in lowered:
                text = pattern.sub(_keep_prefix if keep else REDACTED, text)
                break
    return text


def redact_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
) -> dict[str, str]:
    """A copy of ``headers`` with credential headers blanked and key-shaped values redacted."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    clean: dict[str, str] = {}
    for name, value in items:
        lowered = name.lower()
        secret = lowered in SECRET_HEADERS or "api-key" in lowered or "token" in lowered
        if secret and "ratelimit" not in lowered:  # x-ratelimit-remaining-tokens is a count
            clean[lowered] = REDACTED
        else:
            clean[lowered] = redact_text(value)
    return clean
