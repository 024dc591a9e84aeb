"""Keep secrets out of traces, reports, files and logs.

One place decides what a secret looks like: credential headers by name, and key-shaped
strings anywhere in text: ``sk-`` keys, ``Bearer`` tokens, ``name: value`` forms of the
credential headers, URL query parameters named like a credential (``?key=``, ``&sig=``
...), long hex or base64 tokens in any query parameter, and the password of a URL's user
info (``https://user:pass@host``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

__all__ = ["REDACTED", "redact_headers", "redact_text", "redact_value"]

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

# Query parameters whose value is a credential, whatever it looks like.
_QUERY_NAMES: Final = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "sig",
    "signature",
    "password",
)
# A Python name where the key=value rule expects a value: ``api_key=ANTHROPIC_KEY)`` in a
# traceback's source line is code, and the name is not the key it holds. A word is letters
# only, all lower-case, all upper-case, Capitalized or camelCase: a digit, or case mixed
# any other way (``gw_live_EEEEsecretGATEWAYkey``), is the shape of a token. A name is
# words joined by "_" (a leading or trailing one too: ``_key``), and names joined by ".",
# the whole value or followed by "(" or "[" (a call, a subscript). One lower-case word
# alone is taken as a password (``password=letmein``), unless called or subscripted.
_WORD: Final = r"(?:[a-z]+|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+)"
_NAME_PART: Final = rf"_*{_WORD}(?:_+{_WORD})*_*"


@functools.cache  # compiled on the first key=value match: most sessions never have one
def _code() -> re.Pattern[str]:
    return re.compile(rf"{_NAME_PART}(?:\.{_NAME_PART})*(?:[(\[]|\Z)")


def _keep_prefix(match: re.Match[str]) -> str:
    return f"{match.group(1)}{REDACTED}"


def _keep_code(match: re.Match[str]) -> str:
    """The key=value rule's match as it is when its value is a Python name, else redacted.

    Group 1 is the prefix (``api_key=`` and any opening quote), 2 the quote, 3 the value:
    a quoted value is a literal, a secret whatever it looks like.
    """
    value = match.group(3)
    if match.group(2) or not _code().match(value) or (value.isalpha() and value.islower()):
        return f"{match.group(1)}{REDACTED}"
    return match.group(0)


_HEADER_NAMES: Final = "|".join(re.escape(name) for name in sorted(SECRET_HEADERS, key=len)[::-1])

# (markers, pattern, replacement): a pattern runs only when one of its lower-cased
# markers occurs in the text. Most text has none, and substring tests are far cheaper than
# regular expressions: redaction runs on every recorded event. A match becomes
# `REDACTED`, or what a function makes of it (`_keep_prefix` keeps group 1).
_Replacement = str | Callable[[re.Match[str]], str]
_RULES: Final[tuple[tuple[tuple[str, ...], re.Pattern[str], _Replacement], ...]] = (
    (
        ("bearer", "basic"),
        re.compile(r"(\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
        _keep_prefix,
    ),
    (("sk-",), re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{12,}"), REDACTED),
    (("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), REDACTED),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), REDACTED),
    (("gh",), re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), REDACTED),
    (("xox",), re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), REDACTED),
    (
        # "api_key=...", "token: ...": a quoted value, or one that is not a Python name
        ("apikey", "api_key", "api-key", "token", "secret", "password"),
        re.compile(
            r"(\b(?:api[_-]?key|access[_-]?token|secret|password|token)[\"']?\s*[:=]\s*"
            r"([\"']?))([^\s\"'&,;})]{6,})",
            re.IGNORECASE,
        ),
        _keep_code,
    ),
    (
        tuple(f"{name}=" for name in ("key", "token", "sig", "signature", "password")),
        re.compile(
            r"([?&;](?:" + "|".join(_QUERY_NAMES) + r")=)[^&#\s\"'<>]+",
            re.IGNORECASE,
        ),
        _keep_prefix,
    ),
    (
        # a long hex or base64 token as the value of any query parameter
        ("=",),
        re.compile(
            r"([?&;][^=&#\s\"'<>?]{1,64}=)"
            r"(?=[A-Za-z0-9_%+/=-]{20,})(?=[^&#\s\"'<>]*?[0-9])(?=[^&#\s\"'<>]*?[A-Za-z])"
            r"[A-Za-z0-9_%+/=-]+(?=$|[&#\s\"'<>),\]])"
        ),
        _keep_prefix,
    ),
    (
        # a password in a URL's user info ("https://user:pass@host"): the user is kept
        ("@",),
        re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]+(?=@)"),
        _keep_prefix,
    ),
    (
        # "x-api-key: ...", "'cookie': '...'": a credential header written out as text
        ("authorization", "api-key", "cookie"),
        re.compile(
            r"(\b(?:" + _HEADER_NAMES + r")[\"']?\s*[:=]\s*[\"']?)"
            r"(?!(?:(?:Bearer|Basic)\s+)?\[REDACTED\])"
            r"[^\s\"'\r\n,}][^\"'\r\n,}]{3,}",
            re.IGNORECASE,
        ),
        _keep_prefix,
    ),
)


# No rule above can match fewer characters ("?sig=" and one more is the shortest), so
# shorter text (most names and previews) skips the scan.
_SHORTEST_SECRET: Final = 6


# Every marker in one flat tuple: the common case (no marker at all) is one plain loop.
_MARKERS: Final = tuple(marker for markers, _, _ in _RULES for marker in markers)
# The first check, whether any rule can match: the markers above, each shortened to a
# prefix that covers several ("api" for apikey, api_key, api-key; "=" for key=, sig= ...).
_GATE: Final = ("=", "sk-", "bearer", "basic", "api", "token", "secret", "password", "auth",
                "cookie", "akia", "asia", "aiza", "gh", "xox", "@")  # fmt: skip


def redact_text(text: str) -> str:
    """Replace every key-shaped substring of ``text`` with ``[REDACTED]``."""
    if not text or len(text) < _SHORTEST_SECRET:
        return text
    lowered = text.lower()
    for marker in _GATE:
        if marker in lowered:
            break
    else:
        return text
    for markers, pattern, replacement in _RULES:
        for marker in markers:
            if marker in lowered:
                text = pattern.sub(replacement, text)
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


def redact_value(value: Any) -> Any:
    """``value`` with `redact_text` applied to every string in it (dicts and lists too)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if value.__class__ is tuple:
        return tuple(redact_value(item) for item in value)
    return value
