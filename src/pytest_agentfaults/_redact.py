"""Keep secrets out of traces, reports, files and logs.

One place decides what a secret looks like: credential headers by name, and key-shaped
strings anywhere in text: ``sk-`` keys, ``Bearer`` (``Token``, ``ApiKey``) credentials, a
private key's PEM block, ``name: value`` forms of the
credential headers, URL query parameters named like a credential (``?key=``, ``&sig=``
...), long hex or base64 tokens in any query parameter, and the password of a URL's user
info (``https://user:pass@host``).

A key of no known shape (a gateway's ``gw_live_...``) is told by where it was sent: the
test kit learns every credential it sees in a request (`LearnedSecrets`), and the
session's output boundaries pass them to `redact_text`, which replaces them by value.
A test that does not use the kit gets `redact_shapes`: the learned values and the
provider key shapes only, no rule that reads context.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import unquote_plus

from pytest_agentfaults._lazy_pattern import LazyPattern as _Lazy
from pytest_agentfaults._lazy_pattern import Replacement as _Replacement
from pytest_agentfaults._redact_code import REDACTED
from pytest_agentfaults._redact_code import keep_code as _keep_code
from pytest_agentfaults._redact_code import keep_placeholder as _keep_placeholder
from pytest_agentfaults._redact_code import keep_prefix as _keep_prefix

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "REDACTED",
    "SHORTEST_LEARNED",
    "LearnedSecrets",
    "is_secret_header",
    "looks_like_key",
    "redact_headers",
    "redact_shapes",
    "redact_text",
    "redact_value",
]

# The credential names, in one place: the request headers and URL query parameters whose
# value is a credential, whatever it looks like. Checked against what the official SDKs
# and common gateways send: OpenAI and Anthropic (``authorization``, ``x-api-key``),
# Azure OpenAI (``api-key``), Gemini (``x-goog-api-key``, ``?key=``), Azure API
# Management (``ocp-apim-subscription-key``, ``?subscription-key=``), Azure Functions
# (``x-functions-key``), Kong (``apikey``), Cloudflare (``x-auth-key``), proxies
# (``proxy-authorization``), OAuth (``?access_token=`` ...).

#: request headers that carry a credential, by (lower-case) name
SECRET_HEADERS: Final = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "apikey",
        "x-api-key",
        "x-goog-api-key",
        "openai-api-key",
        "anthropic-api-key",
        "ocp-apim-subscription-key",
        "x-functions-key",
        "x-auth",
        "x-auth-key",
        "cookie",
        "set-cookie",
    }
)
#: and any header whose name holds one of these (``x-gateway-token``), unless it holds
#: ``ratelimit`` (``x-ratelimit-remaining-tokens`` is a count)
_SECRET_HEADER_PARTS: Final = ("api-key", "apikey", "token", "secret", "password", "passwd",
                                "pwd", "private-key")  # fmt: skip

#: the endings of environment variables that name where a credential is, not the
#: credential (``GOOGLE_APPLICATION_CREDENTIALS`` is a path too, caught by its value)
_POINTERS: Final = ("-file", "-path", "-dir", "-url", "-uri", "-sock", "-cmd", "-command")
#: how a value that is a path starts: where a credential is, or a directory (``PWD``)
_PATHS: Final = ("/", "~", ".")

#: URL query parameters that carry a credential, by (lower-case) name
_QUERY_NAMES: Final = frozenset({"key", "api_key", "apikey", "api-key", "token", "access_token",
                                 "refresh_token", "id_token", "auth", "subscription-key",
                                 "client_secret", "sig", "signature", "password", "passwd",
                                 "pwd", "private_key"})  # fmt: skip
# Every name in SECRET_HEADERS holds one of these (a test checks): fewer substring tests
# than one per name, and narrower than "api" or "auth", which most URLs hold.
_HEADER_MARKERS: Final = ("authorization", "api-key", "apikey", "cookie", "x-auth",
                          "subscription-key", "functions-key")  # fmt: skip
_HEADER_NAMES: Final = "|".join(re.escape(name) for name in sorted(SECRET_HEADERS, key=len)[::-1])

# the markers of the key=value rule, and the endings of `_QUERY_NAMES`
_KEY_NAMES: Final = ("apikey", "api_key", "api-key", "token", "secret", "password", "passwd",
                     "pwd", "private")  # fmt: skip
_QUERY_ENDS: Final = ("key", "token", "auth", "secret", "sig", "signature", "password", "passwd",
                      "pwd")  # fmt: skip

# Where a key or a credential's name starts: not inside a word, but after "_" (``DB_PASSWORD=``;
# not ``eos_token``), a repr's ``\\n`` or ``%22``. A quote may be escaped (JSON in JSON).
_START: Final = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
_QUOTE: Final = r"(?:\\?[\"'])"

# (markers, pattern, replacement): a pattern runs only when one of its lower-cased
# markers occurs in the text. Most text has none, and substring tests are far cheaper than
# regular expressions: redaction runs on every recorded event. A match becomes
# `REDACTED`, or what a function makes of it (`_keep_prefix` keeps group 1).
_RULES: Final[tuple[tuple[tuple[str, ...], _Lazy, _Replacement], ...]] = (
    (
        # words follow "bearer" and "basic" in prose: the value holds a digit, a lower-case
        # letter before an upper-case one (a JWT's "eyJ"), or 16 characters
        ("bearer", "basic"),
        _Lazy(
            rf"({_START}(?:Bearer|Basic)\s+)(?=[A-Za-z0-9._~+/=-]*?(?:[0-9]|(?-i:[a-z][A-Z]))"
            r"|[A-Za-z0-9._~+/=-]{16})[A-Za-z0-9._~+/=-]{8,}",
            re.IGNORECASE,
        ),
        _keep_prefix,
    ),
    (
        # the Token (Django REST framework) and ApiKey (Elasticsearch) schemes: words
        # follow "token" in prose, so the value must hold a letter and a digit
        ("token", "apikey"),
        _Lazy(
            rf"({_START}(?:Token|ApiKey)\s+)(?=[A-Za-z0-9._~+/=-]*[0-9])"
            r"(?=[A-Za-z0-9._~+/=-]*[A-Za-z])[A-Za-z0-9._~+/=-]{8,}",
            re.IGNORECASE,
        ),
        _keep_prefix,
    ),
    (
        # a private key's PEM block, whole: base64 lines (a repr's "\\n" too) and any
        # "Proc-Type: ..." headers, to its END line if the text is not cut before; a
        # BEGIN line alone (a parser's marker, a docstring's "...") is no key
        ("private key",),
        _Lazy(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[A-Z][A-Za-z-]{0,31}:[ \t][^\r\n\\]*"
            r"|[A-Za-z0-9+/=\s]|\\+[nrt]){16,}(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?"
        ),
        REDACTED,
    ),
    (("sk-",), _Lazy(rf"{_START}sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{{12,}}"), REDACTED),
    (("akia", "asia"), _Lazy(rf"{_START}(?:AKIA|ASIA)[A-Z0-9]{{16}}\b"), REDACTED),
    (("aiza",), _Lazy(rf"{_START}AIza[0-9A-Za-z_-]{{30,}}"), REDACTED),
    (("gh",), _Lazy(rf"{_START}gh[pousr]_[A-Za-z0-9]{{30,}}"), REDACTED),
    (("xox",), _Lazy(rf"{_START}xox[abpr]-[A-Za-z0-9-]{{10,}}"), REDACTED),
    (
        # "api_key=...", "token: ...": a quoted value, or one that is not a Python name
        _KEY_NAMES,
        _Lazy(
            rf"((?:{_START}(?:api[_-]?key|secret[_-]?(?:access[_-]?)?key|secret|password"
            rf"|passwd|pwd|private[_-]?key"
            rf"|(?:access|auth|bearer|refresh|id)[_-]?token)|(?<![A-Za-z0-9_])token"
            rf"|(?<=_)(?-i:TOKEN)){_QUOTE}?\s*[:=]\s*"
            rf"({_QUOTE}?))((?:[^\s\"'&,;}})\\]|\\(?![\"'])){{6,}})",
            re.IGNORECASE,
        ),
        _keep_code,
    ),
    (
        # every query name ends with one of these
        tuple(f"{end}=" for end in _QUERY_ENDS),
        _Lazy(
            r"([?&;](?:" + "|".join(map(re.escape, sorted(_QUERY_NAMES))) + r")=)[^&#\s\"'<>]+",
            re.IGNORECASE,
        ),
        _keep_placeholder,
    ),
    (
        # a long hex or base64 token as the value of any query parameter
        ("=",),
        _Lazy(
            r"([?&;][^=&#\s\"'<>?]{1,64}=)"
            r"(?=[A-Za-z0-9_%+/=-]{20,})(?=[^&#\s\"'<>]*?[0-9])(?=[^&#\s\"'<>]*?[A-Za-z])"
            r"[A-Za-z0-9_%+/=-]+(?=$|[&#\s\"'<>),\]])"
        ),
        _keep_prefix,
    ),
    (
        # a password in a URL's user info ("https://user:pass@host"): the user is kept
        ("@",),
        _Lazy(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*:)[^\s/?#@]+(?=@)"),
        _keep_placeholder,
    ),
    (
        # "x-api-key: ...", "'cookie': '...'": a credential header written out as text; as
        # for key=value, a Python name there is code ({"x-api-key": SERVER_KEY})
        _HEADER_MARKERS,
        _Lazy(
            rf"(\b(?:{_HEADER_NAMES}){_QUOTE}?\s*[:=]\s*({_QUOTE}?))"
            r"(?!(?:(?:Bearer|Basic|Token|ApiKey)\s+)?\[REDACTED\])"
            r"([^\s\"'\r\n,}\\](?:[^\"'\r\n,}\\]|\\(?![\"'])){3,})",
            re.IGNORECASE,
        ),
        _keep_code,
    ),
)


# The rules that read no context: a provider key's own shape is a secret wherever it
# appears. Each replaces its whole match; a rule that reads context keeps its prefix or the
# code around the value. A test that does not use the kit gets only these (`redact_shapes`).
_SHAPES: Final = tuple(rule for rule in _RULES if rule[2] == REDACTED)


# No rule above can match fewer characters ("?sig=" and one more is the shortest), so
# shorter text (most names and previews) skips the scan.
_SHORTEST_SECRET: Final = 6


# Every marker in one flat tuple: the common case (no marker at all) is one plain loop.
_MARKERS: Final = tuple(marker for markers, _, _ in _RULES for marker in markers)
# The first check, whether any rule can match: the markers above, each shortened to a
# prefix that covers several ("api" for apikey, api_key, api-key; "=" for key=, sig= ...).
_GATE: Final = ("=", "sk-", "bearer", "basic", "api", "token", "secret", "password", "auth",
                "cookie", "akia", "asia", "aiza", "gh", "xox", "@", "-key", "passwd", "pwd",
                "private")  # fmt: skip


def redact_text(text: str, learned: LearnedSecrets | None = None) -> str:
    """Replace every key-shaped substring of ``text`` with ``[REDACTED]``.

    With ``learned`` (a session's `LearnedSecrets`), every value learned first, wherever
    it occurs and whatever its shape.
    """
    if not text or len(text) < _SHORTEST_SECRET:
        return text
    if learned is not None:
        for value in learned.values:  # longest first: a value holding another goes whole
            if value in text:
                text = text.replace(value, REDACTED)
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


def redact_shapes(text: str, learned: LearnedSecrets | None = None) -> str:
    """`redact_text` for a test that does not use the kit: only what cannot be wrong.

    The values of ``learned`` (keys the session's kit tests sent), then the provider key
    shapes (``sk-proj-...``, ``AKIA...``). No rule that reads context (``password=``,
    ``Bearer``, a URL's query): in a plain test those are often the values under test.
    """
    if not text or len(text) < _SHORTEST_SECRET:
        return text
    if learned is not None:
        text = learned.out_of(text)
    lowered = text.lower()
    for markers, pattern, replacement in _SHAPES:
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
        clean[lowered] = REDACTED if is_secret_header(lowered) else redact_text(value)
    return clean


def is_secret_header(lowered: str) -> bool:
    """Whether a header of this lower-case name carries a credential.

    The `SECRET_HEADERS`, and any name holding ``api-key``, ``apikey``, ``token``,
    ``secret`` or ``password`` but not ``ratelimit`` (``x-ratelimit-remaining-tokens`` is
    a count).
    """
    if lowered in SECRET_HEADERS:
        return True
    for part in _SECRET_HEADER_PARTS:  # a loop, not any(): called for every header name
        if part in lowered:
            return "ratelimit" not in lowered
    return False


def redact_value(value: Any, learned: LearnedSecrets | None = None, *, shapes: bool = False) -> Any:
    """``value`` with `redact_text` applied to every string in it (dicts and lists too).

    ``shapes``: `redact_shapes` instead (the learned values and key shapes only).
    """
    if isinstance(value, str):
        return redact_shapes(value, learned) if shapes else redact_text(value, learned)
    if isinstance(value, dict):
        return {key: redact_value(item, learned, shapes=shapes) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_value(item, learned, shapes=shapes) for item in value]
    if value.__class__ is tuple:
        return tuple(redact_value(item, learned, shapes=shapes) for item in value)
    return value


# ----------------------------------------------------------------------------- learned values

#: a shorter credential is not learned: ``Bearer x`` in a unit test would redact every "x",
#: and ``secret123`` every message that quotes that word (`looks_like_key` says the rest)
SHORTEST_LEARNED: Final = 12
#: a credential this long is learned whatever its characters (unless all digits)
_LONG_LEARNED: Final = 20
#: how many header values and URLs `LearnedSecrets` remembers having read (past that, each
#: is read again: the same few keys on every request are what it saves work on)
_SEEN_AT_MOST: Final = 4096


class LearnedSecrets:
    """The credentials one session's requests carried, redacted by value from then on.

    The test kit learns what it sees in each request it handles: the value of every
    credential header (`is_secret_header`; the token of ``Authorization: Bearer ...``, the
    encoded credentials of ``Basic ...`` and the password in them, each cookie's value) and
    of every credential query parameter (``?key=``, ``&api_key=`` ..., as sent and
    decoded). `redact_text` given these replaces each wherever it occurs: a key of no known
    shape, printed, logged or held in a local, is redacted all the same.

    One per session, kept by the plugin: nothing is learned for the process. Values
    that do not pass `looks_like_key` are not learned. Learning from several threads (the
    loopback server's) while others redact is safe.
    """

    __slots__ = ("_lock", "seen", "sent", "values")

    def __init__(self) -> None:
        #: the values learned, longest first; a new tuple for each value learned, so a
        #: thread that redacts never sees one half-built
        self.values: tuple[str, ...] = ()
        #: the header values and URLs read already: a client sends the same key on every
        #: request, and the second time costs one set lookup
        self.seen: set[str] = set()
        #: the same header values as the bytes sent, for a caller that holds the bytes
        #: (one lookup before any decoding; apart from `seen`, as bytes never equal text)
        self.sent: set[bytes] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:  # never the values: a repr may reach a report (``-l``)
        return f"<LearnedSecrets: {len(self.values)} values>"

    def learn_header(self, name: str, value: str) -> None:
        """Learn the credential in the request header ``name: value``, if it is one."""
        if value in self.seen:
            return
        lowered = name.lower()
        if is_secret_header(lowered):
            self.learn_credential(lowered, value)

    def learn_headers(self, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        """`learn_header` for each of ``headers``."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        for name, value in items:
            self.learn_header(name, value)

    def learn_credential(self, header: str, value: str, sent: bytes | None = None) -> None:
        """Learn the credential in ``value``, sent in the credential header ``header``.

        ``header`` is lower-case, and `is_secret_header` (the caller has checked);
        ``sent``, the value's bytes as sent, if the caller has them, is remembered too.
        """
        if value not in self.seen:
            self._add(value, _credentials(header, value), sent)

    def learn_url(self, url: str) -> None:
        """Learn the values of ``url``'s credential query parameters (``?key=...``)."""
        if "?" not in url or url in self.seen:
            return
        query = url.partition("?")[2].partition("#")[0]
        found: list[str] = []
        for pair in re.split(r"[&;]", query):
            name, equals, value = pair.partition("=")
            if equals and name.lower() in _QUERY_NAMES:
                found += (value, unquote_plus(value))
        self._add(url, found)

    def out_of(self, text: str) -> str:
        """``text`` with each learned value in it replaced by ``[REDACTED]``."""
        for value in self.values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def learn_environment(self, environ: Mapping[str, str]) -> None:
        """Learn the values of the environment variables named as credentials.

        ``OPENAI_API_KEY``, ``DB_PASSWORD``: a name `is_secret_header` would call a
        credential, or ending in ``_KEY``. Read at the session's start in every xdist
        worker, so a key read from the environment is redacted before a request carries it
        (a parametrize id). A path (``*_FILE``, a value starting with ``/``) is none.
        """
        self.learn(
            value.strip()
            for name, value in environ.items()
            if not value.startswith(_PATHS) and _names_credential(name)
        )

    def learn_arguments(self, arguments: Mapping[str, object]) -> None:
        """Learn a tool call's text arguments named as credentials: its error may quote one.

        A path is none (a shell tool's ``pwd``), as in `learn_environment`.
        """
        found = [
            v
            for k, v in arguments.items()
            if isinstance(v, str) and not v.startswith(_PATHS) and _names_credential(k)
        ]
        if found:  # every attempt of a kit test asks: most name no credential
            self.learn(found)

    def learn(self, values: Iterable[str]) -> None:
        """Learn ``values`` as they are: credentials another process learned (an xdist worker).

        Values that do not pass `looks_like_key` are left out.
        """
        # "REDACTED" itself would redact the marker again and again
        new = {v for v in values if looks_like_key(v) and v not in REDACTED}
        with self._lock:
            new.difference_update(self.values)
            if new:
                self.values = tuple(sorted((*self.values, *new), key=len, reverse=True))

    def _add(self, read: str, values: Iterable[str], sent: bytes | None = None) -> None:
        self.learn(values)  # before ``read`` is seen: a thread that skips it finds the values
        with self._lock:
            if len(self.seen) < _SEEN_AT_MOST:
                self.seen.add(read)
                if sent is not None:
                    self.sent.add(sent)


def looks_like_key(value: str) -> bool:
    """Whether a credential the kit saw is a key, to be learned, and not a word or a number.

    At least `SHORTEST_LEARNED` (12) characters with two of lower-case letters, upper-case
    letters and digits (``gw_live_8f2a9c1d4e``), or at least 20 characters not all digits.
    Punctuation is no class: ``default-password`` is words. A learned value is redacted in
    every test, those that do not use the kit too: ``password``, ``12345678``,
    ``secret123`` or ``test-key`` would rewrite unrelated messages and source lines.
    """
    if len(value) >= _LONG_LEARNED:
        return not value.isdigit()
    if len(value) < SHORTEST_LEARNED:
        return False
    lower = upper = digit = False
    for char in value:
        if char.isdigit():
            digit = True
        elif char.islower():
            lower = True
        elif char.isupper():
            upper = True
    return lower + upper + digit >= 2


@functools.lru_cache(maxsize=1024)  # asked for every argument of a kit test's tool calls
def _names_credential(name: str) -> bool:
    """Whether a variable or argument of this name holds a credential, not where one is."""
    lowered = name.lower().replace("_", "-")
    credential = lowered.endswith("-key") or is_secret_header(lowered)
    return credential and not lowered.endswith(_POINTERS)


def _credentials(header: str, value: str) -> list[str]:
    """The credentials in ``value`` of the credential header ``header`` (lower-case)."""
    value = value.strip()
    if header == "cookie":  # "a=1; session=...": each value
        return [part.partition("=")[2].strip() for part in value.split(";")]
    scheme, space, credentials = value.partition(" ")
    if not space:  # a key alone (x-api-key, api-key ...)
        return [value]
    credentials = credentials.strip()  # "Bearer <token>", "Basic <base64>" ...
    found = [credentials]
    if scheme.lower() == "basic":  # "user:password", base64-encoded: the password too
        try:
            decoded = base64.b64decode(credentials, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return found
        # not "user:password" whole: the user is kept, as in a URL's user info
        found.append(decoded.partition(":")[2])
    return found
