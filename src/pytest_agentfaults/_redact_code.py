"""Tell code from a credential's value: what `_redact`'s rules that read context keep.

A traceback's source lines and a failure's repr pass through redaction: where a rule
expects a credential's value (``api_key=...``, ``"Authorization": ...``) the text may
hold the code that makes it (a Python name, an f-string placeholder, a header built by
``"Bearer " + token``). Those are shown as written: the value they hold was never in the
text. A literal that could be a credential is replaced by `REDACTED`.

Light like ``plugin.py``: the standard library only.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from pytest_agentfaults._lazy_pattern import LazyPattern as _Lazy

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["REDACTED", "keep_code", "keep_placeholder", "keep_prefix"]

REDACTED: Final = "[REDACTED]"

# A Python name where the key=value rule expects a value: ``api_key=ANTHROPIC_KEY)`` in a
# traceback's source line is code, and the name is not the key it holds. A word is letters
# only, all lower-case, all upper-case, Capitalized, camelCase or led by an acronym
# (``RSAPrivateKey``): a digit, or case mixed any other way
# (``gw_live_EEEEsecretGATEWAYkey``), is the shape of a token. A name is
# words joined by "_" (a leading or trailing one too: ``_key``), and names joined by ".",
# the whole value or followed by "(" or "[" (a call, a subscript). One lower-case word
# alone is taken as a password (``password=letmein``), unless called or subscripted.
_WORD: Final = (
    r"(?:[a-z]+|[A-Z]+|[A-Z]?[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+|[A-Z]{2,}[a-z]+(?:[A-Z][a-z]+)*)"
)
_NAME_PART: Final = rf"_*{_WORD}(?:_+{_WORD})*_*"


@functools.cache  # compiled on the first key=value match: most sessions never have one
def _code() -> re.Pattern[str]:
    # called or subscripted, a name may hold digits (``rsa.PrivateKey.load_pkcs1(``)
    return re.compile(
        rf"{_NAME_PART}(?:\.{_NAME_PART})*(?:[(\[]|\Z)|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*[(\[]"
    )


def keep_prefix(match: re.Match[str]) -> str:
    """Group 1 of ``match`` (the prefix: ``Bearer ``, ``?sig=``), then `REDACTED`."""
    return f"{match.group(1)}{REDACTED}"


# An f-string (or str.format) placeholder: ``{name}``, ``{obj.attr!r}``, ``{xs[0]:>8}``.
# Where a value is expected (``?key={GEMINI_KEY}``), it is code, as a bare name is.
_PLACEHOLDER: Final = _Lazy(
    r"\{[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]{}]*\])*(?:![rsa])?(?::[^{}]*)?\}"
)

# A string literal that is the template of a header's value, the credential left out: an
# auth scheme, or a cookie's name (Python-name words, ``-`` too) and "=", then nothing or
# one placeholder (``{}``, ``{0}``, ``{token}``, ``%s``), then ``+``, ``%`` or ``.format(``
# after its closing quote (`_TEMPLATE_USED`): ``"Bearer " + token``, ``"Bearer %s" %
# token``. Anything more in it (``"Bearer abcd"``, base64's ``"dGhp...Q="``) may be the
# credential.
_TEMPLATE: Final = _Lazy(
    r"\s*(?:(?i:Bearer|Basic|Token|ApiKey|Digest)\s*"
    rf"|{_NAME_PART}(?:-{_NAME_PART})*=)?(?:\{{\w*\}}|%[sr]|%\([A-Za-z_]\w*\)[sr])?\s*"
)
_TEMPLATE_USED: Final = _Lazy(r"\s*(?:[+%]|\.format\()")
# A literal that is its field's own name, two words (``_JSON_FILE_PRIVATE_KEY =
# "private_key"``, ``"client_secret": "clientSecret"``): no issuer makes such a credential.
# One word (``password = "password"``, ``"secret"``) is a password people choose.
_OWN_NAME: Final = _Lazy(
    r"(?i:api|private|secret|access|refresh|auth|id|client)[_-]?(?i:key|token|secret)"
)
# A lambda where a value is expected (``"password": lambda fake: fake.password()``): the
# keyword, then its parameters on the same line or its ":" at once. The word alone, at a
# line's end, may be a password.
_LAMBDA: Final = _Lazy(r"lambda(?::|[ \t]+\S)")
# ``pwd`` names the working directory too (``PWD=/home/me``): a path there is no password
_PATH: Final = _Lazy(r"~?(?:/[\w.-]+)+/?")


def keep_placeholder(match: re.Match[str]) -> str:
    """A match kept when its value (after group 1, the prefix) is one placeholder."""
    if _PLACEHOLDER.get().fullmatch(match.group(0), len(match.group(1))):
        return match.group(0)
    return f"{match.group(1)}{REDACTED}"


def keep_code(match: re.Match[str]) -> str:
    """A key=value (or credential header) match as it is when its value is code.

    Code: a Python name, a placeholder, or a literal template joined to one
    (``"Bearer " + token``). Else the value is redacted. Group 1 is the prefix
    (``api_key=`` and any opening quote), 2 the quote, 3 the value: a quoted value is a
    literal, a secret whatever it is, unless it is a template (`_TEMPLATE`).
    """
    value = match.group(3)
    if value[0] == "{" and _PLACEHOLDER.get().match(match.string, match.start(3)):
        return match.group(0)  # the value stops before the placeholder's "}"
    if value.isdigit() and not match.group(2) and match.string[: match.start()].endswith("_"):
        return match.group(0)  # a count (``max_token=100000``), not a key
    if value[0] in "/~" and "pwd" in match.group(1).lower() and _PATH.get().fullmatch(value):
        return match.group(0)
    quote = match.group(2)
    if quote:
        if _template(match, quote[-1]) or _own_name(match, quote[-1]):
            return match.group(0)
        return f"{match.group(1)}{REDACTED}"
    if value[0] == "l" and _LAMBDA.get().match(match.string, match.start(3)):
        return match.group(0)
    if not _code().match(value) or (value.isalpha() and value.islower()):
        return f"{match.group(1)}{REDACTED}"
    return match.group(0)


def _template(match: re.Match[str], quote: str) -> bool:
    """Whether the quoted literal ``match``'s value starts is a template used by an operator."""
    text = match.string
    end = text.find(quote, match.start(3))
    if end < 0 or not _TEMPLATE.get().fullmatch(text, match.start(3), end):
        return False
    return _TEMPLATE_USED.get().match(text, end + 1) is not None


def _own_name(match: re.Match[str], quote: str) -> bool:
    """Whether the quoted literal ``match``'s value starts is its field's name (`_OWN_NAME`)."""
    text = match.string
    end = text.find(quote, match.start(3))
    if end < 0 or not _OWN_NAME.get().fullmatch(text, match.start(3), end):
        return False
    # the whole name: the rule may match its end only (``secret`` of ``client_secret``)
    before = re.search(r"[\w-]*\Z", text[max(0, match.start() - 64) : match.start()])
    name = re.sub(r"[\W_]", "", (before.group() if before else "") + match.group(1)).lower()
    return name.endswith(re.sub(r"[\W_]", "", text[match.start(3) : end]).lower())
