"""The exception tree of pytest-agentfaults, and `classify()`.

```
AgentFaultsError
├── UsageError(ValueError)            misuse by the developer: bad config, bad marker arguments
│   └── VirtualTimeSpinError          a loop on the real clock spins between virtual sleeps
├── ToolError
│   ├── InvalidArgsError              arguments failed the tool's schema
│   ├── UnknownToolError              the model named a tool that does not exist
│   ├── ToolExecutionError            hard failure: throw_exception, or exhausted with
│   │                                 on_exhaustion="raise"
│   ├── ToolTimeoutError(TimeoutError)
│   └── EscalationError               soft failure: reason + Severity, fed back to the parent model
├── ModelError
│   ├── ModelTransportError(ConnectionError)   connection-level failure
│   ├── ModelHTTPError                status, body (truncated), headers
│   │   ├── RateLimitError            429; retry_after (seconds or None)
│   │   ├── ModelServerError          5xx / 529
│   │   └── ModelAuthError            401 / 403, never retried
│   ├── ModelTimeoutError(TimeoutError)
│   ├── MalformedResponseError        2xx body that cannot be decoded, bad tool-call JSON,
│   │                                 empty/blocked output
│   └── ModelStreamError              broken stream after the first chunk
├── NetworkBlockedError               a test's request would have left this machine; never
│                                     retried (allow it: @pytest.mark.allow_network)
└── BudgetExceededError
```

`classify(exc)` turns any exception (or a `ToolFailure`) into an `ErrorInfo`: its `kind`,
whether retrying may help, and what to do about it. The rules are pure and are the single
place where "is this transient?" is decided.

`is_ambiguous(exc)` is the single place where "may the failed call have taken effect?" is
decided: a timeout, or a connection that broke after the request went out. A tool marked
``@af.tool(idempotent=False)`` is not re-run after such a failure unless a policy says so.
"""

from __future__ import annotations

import asyncio
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from pytest_agentfaults._ambiguity import AMBIGUOUS_ERROR_NAMES, UNSENT_ERROR_NAMES, is_ambiguous
from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults._redact import redact_text

if TYPE_CHECKING:
    from pytest_agentfaults._failure import ToolFailure
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "AMBIGUOUS_ERROR_NAMES",
    "NEVER_RECOVERED",
    "UNSENT_ERROR_NAMES",
    "AgentFaultsError",
    "BudgetExceededError",
    "ErrorInfo",
    "ErrorKind",
    "EscalationError",
    "InvalidArgsError",
    "MalformedResponseError",
    "ModelAuthError",
    "ModelError",
    "ModelHTTPError",
    "ModelServerError",
    "ModelStreamError",
    "ModelTimeoutError",
    "ModelTransportError",
    "NetworkBlockedError",
    "RateLimitError",
    "Severity",
    "ToolError",
    "ToolExecutionError",
    "ToolTimeoutError",
    "UnknownToolError",
    "UsageError",
    "VirtualTimeSpinError",
    "classify",
    "is_ambiguous",
]

_BODY_LIMIT: Final = 2000


class Severity(enum.Enum):
    """How bad an escalation is, as judged by whoever escalates."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @classmethod
    def parse(cls, value: Severity | str) -> Severity:
        """Accept a `Severity` or its name/value in any case (``"high"``, ``"HIGH"``)."""
        if isinstance(value, Severity):
            return value
        text = str(value).strip().lower()
        for member in cls:
            if member.value == text:
                return member
        valid = ", ".join(m.name for m in cls)
        raise UsageError(f"unknown severity {value!r}; use one of {valid}")


class AgentFaultsError(Exception):
    """Base class of every error this package raises on purpose.

    Its message is redacted: the package builds messages from user data (tool arguments,
    URLs, error texts), and a message reaches terminals, junit XML and logs.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*[redact_text(a) if type(a) is str else a for a in args])


class UsageError(AgentFaultsError, ValueError):
    """The developer misused the package: a bad config, a bad marker argument, a bad tool.

    The message names the problem and the fix. Never retried.
    """


# --------------------------------------------------------------------------- tools


class VirtualTimeSpinError(UsageError):
    """A kit test's loop waits on the real clock (``time.monotonic``) between virtual sleeps."""


class ToolError(AgentFaultsError):
    """A failure of one tool call. ``tool`` names the tool when known."""

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


class InvalidArgsError(ToolError):
    """The arguments the model sent failed the tool's schema, or could not be parsed.

    ``raw_arguments`` holds the arguments exactly as the model sent them; ``errors`` the
    validation errors (``type``, ``loc``, ``msg``) when there were any.
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str | None = None,
        raw_arguments: str = "",
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message, tool=tool)
        self.raw_arguments = raw_arguments
        self._errors = errors

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The validation errors; read from pydantic's error (the cause) on first use.

        A bad tool call is on the agent loop's hot path, and the list is rarely read.
        """
        if self._errors is None:
            read = getattr(self.__cause__, "errors", None)
            found = read(include_url=False) if callable(read) else []
            self._errors = [
                {"type": e["type"], "loc": [str(part) for part in e["loc"]], "msg": e["msg"]}
                for e in found
            ]
        return self._errors


class UnknownToolError(ToolError):
    """The model called a tool that the agent does not have (or has not activated)."""

    def __init__(self, message: str, *, tool: str | None = None, available: list[str]) -> None:
        super().__init__(message, tool=tool)
        self.available = available


class ToolExecutionError(ToolError):
    """A hard tool failure: it leaves ``run()`` at once, with no further model call.

    Raised by the built-in ``throw_exception`` tool, by a fixer, or when a recovery action
    runs out with ``on_exhaustion="raise"`` (then ``__cause__`` is the last error).
    """


class ToolTimeoutError(ToolError, TimeoutError):
    """One attempt of a tool ran longer than its per-attempt timeout. Retryable."""

    def __init__(self, message: str, *, tool: str | None = None, timeout: float) -> None:
        super().__init__(message, tool=tool)
        self.timeout = timeout


class EscalationError(ToolError):
    """A soft failure: the reason (and a severity) is fed back to the parent model."""

    def __init__(
        self,
        reason: str,
        severity: Severity | str = Severity.MEDIUM,
        *,
        tool: str | None = None,
    ) -> None:
        super().__init__(reason, tool=tool)
        self.reason = reason
        self.severity = Severity.parse(severity)


# --------------------------------------------------------------------------- models


class ModelError(AgentFaultsError):
    """A failed model call. ``model`` names the model when known."""

    def __init__(self, message: str, *, model: str | None = None) -> None:
        super().__init__(message)
        self.model = model


class ModelTransportError(ModelError, ConnectionError):
    """The connection to the model's server failed (refused, reset, DNS, TLS ...)."""


class ModelHTTPError(ModelError):
    """The model's server answered with an error status.

    ``body`` is truncated to 2,000 characters; ``headers`` never hold credentials.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: str = "",
        headers: Mapping[str, str] | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(message, model=model)
        self.status = status
        self.body = truncate(body)
        self.headers: dict[str, str] = dict(headers or {})


class RateLimitError(ModelHTTPError):
    """HTTP 429. ``retry_after`` is the server's requested wait in seconds, if it gave one."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 429,
        body: str = "",
        headers: Mapping[str, str] | None = None,
        model: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, body=body, headers=headers, model=model)
        self.retry_after = retry_after


class ModelServerError(ModelHTTPError):
    """HTTP 5xx (or Anthropic's 529 "overloaded")."""


class ModelAuthError(ModelHTTPError):
    """HTTP 401 / 403: the key is missing, wrong or not allowed. Never retried."""


class ModelTimeoutError(ModelError, TimeoutError):
    """The model call timed out. Not transport-retried (the request may still be running)."""


class MalformedResponseError(ModelError):
    """A 2xx answer that cannot be used.

    An undecodable body, bad tool-call JSON, an empty or blocked answer. ``body`` holds the
    offending text, truncated.
    """

    def __init__(self, message: str, *, body: str = "", model: str | None = None) -> None:
        super().__init__(message, model=model)
        self.body = truncate(body)


class ModelStreamError(ModelError):
    """A streamed answer broke after its first chunk. A stream is never re-issued then."""


class NetworkBlockedError(AgentFaultsError):
    """A request in a test would have reached a real, non-loopback host: refused before sending.

    ``host`` is where it was going and ``test`` the test that sent it. A mistake in the
    test, never a transient failure: nothing retries it. Allow the network for one test
    with ``@pytest.mark.allow_network``, or for all with ini ``agentfaults_network = allow``.
    """

    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, host: str = "", test: str = "") -> None:
        super().__init__(message)
        self.host = host
        self.test = test


class BudgetExceededError(AgentFaultsError):
    """A `Budget` cap was reached.

    It ends the run softly: status ``"max_iterations"``, or ``"budget_exceeded"`` for a
    token cap.
    """

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


# The one place saying what no recovery (retry, fixer, feed-back, fallback) ever handles: a
# budget cap, the developer's mistake, the test's (an AssertionError, a refused request).
NEVER_RECOVERED: Final = (BudgetExceededError, UsageError, AssertionError, NetworkBlockedError)


# --------------------------------------------------------------------------- classify

ErrorKind = Literal["validation", "runtime", "logical", "escalation", "exception", "aborted"]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What `classify()` says of a failure."""

    kind: ErrorKind
    retryable: bool
    recommendations: list[str] = field(default_factory=list)


_TRANSIENT_PATTERNS: Final = re.compile(
    r"rate.?limit|\b(408|429|500|502|503|504|529)\b|too many requests|temporarily unavailable"
    r"|service unavailable|overloaded|connection (reset|refused|aborted)|timed? ?out",
    re.IGNORECASE,
)
_AUTH_PATTERNS: Final = re.compile(
    r"api.?key|unauthori[sz]ed|forbidden|\b(401|403)\b|invalid.{0,20}credential", re.IGNORECASE
)
_RETRYABLE_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504, 529})
_NEVER_RETRIED: Final = (ValueError, TypeError, KeyError, PermissionError, LookupError)
# The usual transient failures of a tool, exactly these built-in classes (a subclass may say
# otherwise): `kind_and_retryable` answers them first, in two checks. Their kind and
# retryability follow from their message and a ``retryable`` attribute alone.
PLAIN_TRANSIENT: Final = frozenset(
    {
        OSError,
        ConnectionError,
        ConnectionResetError,
        ConnectionAbortedError,
        ConnectionRefusedError,
        BrokenPipeError,
        TimeoutError,
    }
)


def is_retryable_status(status: int) -> bool:
    """True for the statuses that a retry may cure: 408, 429, 5xx and 529."""
    return status in _RETRYABLE_STATUSES or 500 <= status <= 599


def truncate(text: str, limit: int = _BODY_LIMIT) -> str:
    """Cut ``text`` to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def classify(exc: BaseException | ToolFailure, *, tool: str | None = None) -> ErrorInfo:
    """Say what kind of failure ``exc`` is, whether a retry may help, and what to do.

    ```python
    >>> af.classify(ConnectionError("reset")).retryable
    True
    >>> af.classify(ValueError("bad")).kind
    'runtime'
    ```
    """
    name = tool or getattr(exc, "tool", None)
    kind, retryable = kind_and_retryable(exc)
    return ErrorInfo(kind, retryable, _recommend(exc, kind, retryable, name))


def kind_and_retryable(exc: object) -> tuple[ErrorKind, bool]:
    """`classify` without the recommendations: the kind and retryability only."""
    # Tuples, not ``A | B`` unions, in isinstance: checked in C, for each failed tool attempt.
    if exc.__class__ in PLAIN_TRANSIENT:
        # as below: an explicit ``retryable``, else retryable unless it speaks of credentials
        explicit = getattr(exc, "retryable", None)
        if isinstance(explicit, bool):
            return "runtime", explicit
        return "runtime", not _mentions_auth(exception_text(exc))
    if not isinstance(exc, BaseException):
        return "logical", False  # a ToolFailure: an expected business failure
    explicit = getattr(exc, "retryable", None)
    if isinstance(exc, (InvalidArgsError, UnknownToolError)):
        return "validation", False
    if isinstance(exc, EscalationError):
        return "escalation", False
    if isinstance(exc, ToolExecutionError):
        return "exception", False
    if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
        return "aborted", False
    if isinstance(exc, NEVER_RECOVERED):
        # A budget cap ends the run ("aborted"); a developer's or a test's mistake (an
        # exhausted script, an unmatched mock) is never retried: that would only hide it.
        return ("aborted" if isinstance(exc, BudgetExceededError) else "exception"), False
    if isinstance(explicit, bool):
        return "runtime", explicit
    return "runtime", _is_transient(exc)


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ModelAuthError):
        return False
    if isinstance(exc, ModelHTTPError):
        return is_retryable_status(exc.status)
    if isinstance(exc, (MalformedResponseError, ModelStreamError)):
        # A bad answer may come out right when asked again; the stream is re-asked whole.
        return True
    message = exception_text(exc)
    if isinstance(exc, PermissionError) or _mentions_auth(message):
        return False
    if isinstance(exc, (ConnectionError, TimeoutError, OSError, ModelTransportError)):
        return True
    if _TRANSIENT_PATTERNS.search(message):
        # Many SDKs raise plain exceptions whose message is the only sign of a 503.
        return True
    # Anything else a tool raises is an unexpected runtime failure: one more try may pass,
    # and the retry action bounds how many are made.
    return not isinstance(exc, _NEVER_RETRIED)


def _mentions_auth(message: str) -> bool:
    """Whether ``message`` speaks of credentials (`_AUTH_PATTERNS`).

    ASCII text without one of the words every match holds is answered without the
    pattern's scan (a tenth of its cost), which tries each alternative at each position.
    """
    if message.isascii():
        lowered = message.lower()
        if not (
            "key" in lowered
            or "unauthori" in lowered
            or "forbidden" in lowered
            or "40" in lowered
            or "credential" in lowered
        ):
            return False
    return _AUTH_PATTERNS.search(message) is not None


def _recommend(exc: object, kind: ErrorKind, retryable: bool, tool: str | None) -> list[str]:
    subject = f"'{tool}'" if tool else "the tool"
    if not isinstance(exc, BaseException):
        given: list[str] = list(getattr(exc, "recommendations", []) or [])
        return given or [f"{subject} reported a failure; do not repeat the same call."]
    if isinstance(exc, UnknownToolError):
        names = ", ".join(exc.available) or "(none)"
        return [f"There is no tool named {subject}. Call one of: {names}."]
    if isinstance(exc, InvalidArgsError):
        return [
            f"Fix the arguments of {subject} so they match its JSON schema, then call it again.",
            "Send the arguments as one valid JSON object with double-quoted keys.",
        ]
    if kind == "escalation":
        return [f"{subject} escalated: read the reason, then change the approach or answer."]
    if kind == "exception":
        return [f"{subject} failed hard; do not call it again in this run."]
    if kind == "aborted":
        return ["The run was stopped; nothing more should be attempted."]
    if isinstance(exc, ModelAuthError) or _AUTH_PATTERNS.search(exception_text(exc)):
        return ["Check the API key and its permissions; retrying will not help."]
    if isinstance(exc, RateLimitError):
        wait = f" after {exc.retry_after:g}s" if exc.retry_after is not None else ""
        return [f"The provider is rate limiting; try again{wait} or reduce the request rate."]
    if isinstance(exc, TimeoutError):
        return [f"{subject} timed out; try again, or ask for less work per call."]
    if retryable:
        return [
            f"The failure of {subject} looks transient; calling it again may succeed.",
            "If it keeps failing, try another tool or answer with what you have.",
        ]
    return [
        f"Do not repeat the same call to {subject}: change the arguments or use another tool.",
    ]
