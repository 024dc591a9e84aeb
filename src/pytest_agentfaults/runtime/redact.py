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

_KEY_SHAPED: Final = re.compile(
    r"""
    (?P<bearer>\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}      # Authorization values
    | \bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{12,}          # OpenAI / Anthropic style keys
    | \b(?:AKIA|ASIA)[A-Z0-9]{16}\b                               # AWS access key ids
    | \bAIza[0-9A-Za-z_-]{30,}                                    # Google API keys
    | \bgh[pousr]_[A-Za-z0-9]{30,}                                # GitHub tokens
    | \bxox[abpr]-[A-Za-z0-9-]{10,}                               # Slack tokens
    | (?P<kv>\b(?:api[_-]?key|access[_-]?token|secret|password|token)
        ["']?\s*[:=]\s*["']?)[^\s"'&,;}]{6,}                      # key=value / "key": "value"
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _replace(match: re.Match[str]) -> str:
    prefix = match.group("bearer") or match.group("kv") or ""
    return f"{prefix}{REDACTED}"


# Every pattern above contains one of these (lower-cased). Most text contains none, and
# substring tests are far cheaper than the full pattern: recording is on the hot path.
_MARKERS: Final = (
    "sk-", "bearer", "basic", "akia", "asia", "aiza", "gh", "xox", "key", "token", "secret",
    "password",
)  # fmt: skip


def redact_text(text: str) -> str:
    """Replace every key-shaped substring of ``text`` with ``[REDACTED]``."""
    if not text:
        return text
    lowered = text.lower()
    for marker in _MARKERS:
        if marker in lowered:
            return _KEY_SHAPED.sub(_replace, text)
    return text


def redact_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
) -> dict[str, str]:
    """A copy of ``headers`` with credential headers blanked and key-shaped values redacted."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    clean: dict[str, str] = {}
    for name, value in items:
        lowered = name.lower()
        if lowered in SECRET_HEADERS or "api-key" in lowered or "token" in lowered:
            clean[lowered] = REDACTED
        else:
            clean[lowered] = redact_text(value)
    return clean
