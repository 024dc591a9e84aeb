"""`Fault`: one fault of a plan, as a small union ``ToolFault | HTTPFault | LLMFault``.

Each member says what it targets and what it injects in fields that mean one thing; what
they share (``times``, ``at``, ``probability``, ``strict``, the progress counters) lives in
`FaultBase`. The vocabulary of the ``llm=`` kinds (which step each injects, which options
it takes, whether it is transient) is the table `LLM_FAULT_KINDS`, stated once here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Final, Literal, Self, TypeAlias

from pytest_agentfaults._failure import ToolFailure
from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.testing._fail_steps import fail
from pytest_agentfaults.testing._malformed_steps import malformed
from pytest_agentfaults.testing.steps import ScriptStep

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "HTTP_KINDS",
    "HTTP_KIND_OPTIONS",
    "LLM_FAULT_KINDS",
    "LLM_KINDS",
    "MALFORMED_LLM_KINDS",
    "TRANSIENT_LLM_KINDS",
    "Fault",
    "FaultBase",
    "FiredFault",
    "HTTPFault",
    "LLMFault",
    "LlmKind",
    "Target",
    "ToolAction",
    "ToolFault",
    "check_url",
    "fired_fault",
    "short",
    "without_addresses",
]

Target = Literal["tool", "http", "llm"]
ToolAction = Literal["raises", "returns", "delay"]

HTTP_KINDS: Final = (
    "timeout",
    "connect_error",
    "read_error",
    "reset",
    "malformed_body",
    "truncated_stream",
    "not_json",
    "proxy_html",
    "stall",
    "slow_first_token",
    "context_length",
    "quota",
)
#: the options each ``http=`` kind takes (``"status"``: an ``http=503`` code)
HTTP_KIND_OPTIONS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "status": ("retry_after", "retry_after_format", "should_retry"),
        "truncated_stream": ("after",),
        "stall": ("after",),
        "slow_first_token": ("delay",),
        "proxy_html": ("status", "retry_after", "retry_after_format", "should_retry"),
        "context_length": ("should_retry",),
        "quota": ("retry_after", "retry_after_format", "should_retry"),
    }
)


@dataclass(frozen=True, slots=True)
class LlmKind:
    """One ``llm=`` kind: the scripted step it injects, its options, whether it is transient.

    A transient kind fails the model call; the others answer it in the model's place. No
    kind uses up a scripted step: it stays for the call that follows.
    """

    step: Callable[..., ScriptStep]
    options: tuple[str, ...] = ()
    transient: bool = False


LLM_FAULT_KINDS: Final[Mapping[str, LlmKind]] = MappingProxyType(
    {
        "malformed_tool_args": LlmKind(  # name=None: the first tool the request offers
            lambda args='{"arguments": ', name=None: malformed.tool_args(args, name),
            ("args", "name"),
        ),
        "rate_limit": LlmKind(fail.rate_limit, ("retry_after",), transient=True),
        "server_error": LlmKind(lambda status=503: fail.http(status), ("status",), transient=True),
        "timeout": LlmKind(fail.timeout, transient=True),
        "empty": LlmKind(malformed.empty),
        "blocked": LlmKind(malformed.blocked, ("finish_reason",)),
        "unknown_tool": LlmKind(malformed.unknown_tool, ("name",)),
        "not_json": LlmKind(malformed.not_json, ("text",)),
        "truncated": LlmKind(malformed.truncated),
        "connection": LlmKind(fail.connection, transient=True),
    }
)
LLM_KINDS: Final = tuple(LLM_FAULT_KINDS)
#: The llm= kinds that fail the model call: the scripted step it would have used stays
#: for the call that follows (the retry). The other kinds replace the call's answer.
TRANSIENT_LLM_KINDS: Final = frozenset(k for k, v in LLM_FAULT_KINDS.items() if v.transient)
#: The kinds ``faults.llm.malformed(kind)`` takes (``tool_args`` is ``malformed_tool_args``).
MALFORMED_LLM_KINDS: Final = tuple(
    k.removeprefix("malformed_") for k, v in LLM_FAULT_KINDS.items() if not v.transient
)

#: `ToolFault.returns` when the fault returns nothing in the tool's place
NOTHING: Final[Any] = object()


@dataclass(eq=False, slots=True, kw_only=True)
class FaultBase:
    """What every fault shares: when it hits, and how far it got."""

    target: ClassVar[Target]
    times: int = 1
    at: int = 1
    probability: float | None = None
    strict: bool = True
    source: str = ""
    #: the fluent calls after ``source`` (``.raises(ConnectionError).times(2)``)
    chain: str = ""
    # progress, relative to when this fault became the current one on its target
    seen: int = 0
    hits: int = 0

    @property
    def written(self) -> str:
        """The fault as the test wrote it: the marker, or the whole fluent call."""
        return self.source + self.chain

    @property
    def done(self) -> bool:
        """Whether the fault has hit all the occurrences it was meant to."""
        return self.hits >= self.times

    @property
    def key(self) -> tuple[Any, ...]:
        """The target this fault counts occurrences of."""
        return (self.target,)

    @property
    def subject(self) -> str:
        """What the fault is on, for messages: ``tool 'fetch'``, ``http POST /v1``."""
        return self.target

    def describe(self) -> str:
        """A short description for messages: ``tool 'fetch' raises ConnectionError``.

        Redacted: every report, trace file and message shows a fault through this text
        (by the remembered `redact_text`: a fault is described again at each hit).
        """
        return redact(self._describe())

    def _describe(self) -> str:
        return self.subject

    def fresh(self) -> Self:
        """A copy that has not hit anything yet (a marker's fault, for one more test).

        Built through the constructor, given only the fields that differ from their
        defaults (the progress counters never: they start again at their default, 0); the
        fields are looked up once per class. The plugin calls this for every marker of
        every test, and a keyword costs the constructor more than a comparison.
        """
        values: dict[str, Any] = {}
        for name, default in _init_fields(type(self)):
            value = getattr(self, name)
            if value is not default:
                values[name] = value
        return type(self)(**values)

    def check(self) -> None:
        """Raise `UsageError` when the fault is incomplete (a fluent chain left unfinished)."""

    def __repr__(self) -> str:
        return f"<Fault {self.describe()} times={self.times} at={self.at}>"


@dataclass(eq=False, slots=True, kw_only=True, repr=False)
class ToolFault(FaultBase):
    """A fault on the tool ``tool``: it raises, returns in its place, or is delayed."""

    target: ClassVar[Target] = "tool"
    tool: str
    raises: BaseException | type[BaseException] | None = None
    returns: Any = NOTHING
    delay: float | None = None
    #: ``False`` declares the tool non-idempotent for the test; None leaves it as it is
    idempotent: bool | None = None
    #: True: ``tool`` is a ``"pkg.module:attr"`` path (``function=`` / ``faults.function``)
    function: bool = False

    @property
    def action(self) -> ToolAction | None:
        """Which of raises / returns / delay the fault injects (None: not said yet)."""
        if self.raises is not None:
            return "raises"
        if self.returns is not NOTHING:
            return "returns"
        if self.delay is not None:
            return "delay"
        return None

    @property
    def key(self) -> tuple[Any, ...]:
        return ("tool", self.tool)

    @property
    def subject(self) -> str:
        return f"{'function' if self.function else 'tool'} {self.tool!r}"

    def _describe(self) -> str:
        action, subject = self.action, self.subject
        if action == "raises":
            return f"{subject} raises {short(self.raises)}"
        if action == "returns":
            return f"{subject} returns {short(self.returns)}"
        if action == "delay":
            return f"{subject} delays {self.delay}"
        return f"{subject} (unfinished: no .raises(), .returns() or .delay())"

    def check(self) -> None:
        __tracebackhide__ = True
        if self.action is None:
            raise UsageError(
                f"{self.source or 'fault'} on {self.subject} says nothing to "
                "inject; finish it with .raises(...), .returns(...) or .delay(...)"
            )


@dataclass(eq=False, slots=True, kw_only=True, repr=False)
class HTTPFault(FaultBase):
    """A fault on HTTP requests matching ``url`` / ``method``: a status or a failure kind."""

    target: ClassVar[Target] = "http"
    url: str | None = None
    method: str | None = None
    #: the HTTP error status answered (None: a failure ``kind`` instead)
    status: int | None = None
    #: one of `HTTP_KINDS` (None: a ``status`` instead)
    kind: str | None = None
    #: seconds sent as Retry-After / retry-after-ms with the ``status``
    retry_after: float | None = None
    #: how ``retry_after`` is sent: ``"seconds"``, ``"ms"``, ``"date"`` (None: both headers)
    retry_after_format: str | None = None
    #: the ``x-should-retry`` header sent with the status (None: none)
    should_retry: bool | None = None
    #: ``truncated_stream`` / ``stall``: the stream's events sent first (None: half)
    after: int | None = None
    #: ``slow_first_token``: seconds before the first chunk
    delay: float | None = None
    #: ``proxy_html``: the status of the proxy's page
    kind_status: int | None = None

    @property
    def label(self) -> str:
        """The status (``"503"``) or the failure kind (``"timeout"``) injected."""
        return str(self.status) if self.status is not None else str(self.kind)

    @property
    def options(self) -> dict[str, Any]:
        """The options given with the status or kind (``after=2``, ``should_retry=False``)."""
        values = {
            "status": self.kind_status,
            "retry_after": self.retry_after,
            "retry_after_format": self.retry_after_format,
            "should_retry": self.should_retry,
            "after": self.after,
            "delay": self.delay,
        }
        return {k: v for k, v in values.items() if v is not None}

    @property
    def key(self) -> tuple[Any, ...]:
        return ("http", self.url, (self.method or "").upper() or None)

    @property
    def subject(self) -> str:
        where = " ".join(p for p in (self.method, self.url) if p)
        return f"http {where}".strip() if where else "http (any request)"

    def matches_http(self, method: str, url: str, *, any_host: bool = False) -> bool:
        """Whether this http fault applies to a ``method`` request for ``url``.

        ``method=`` compares case-insensitively. ``url=`` matches the request's URL (query
        left out) exactly or as a prefix ending at a ``/``; a ``url=`` that starts with
        ``/`` matches the path alone, on any host. ``any_host=True`` compares only the
        paths of a ``url=`` that has one (``https://api.openai.com/v1/chat/completions``
        matches ``/v1/chat/completions`` on any host): the loopback `LLMServer` stands in
        for the provider's host.
        """
        if self.method is not None and self.method != method.upper():
            return False
        pattern = self.url
        if pattern is None:
            return True
        if pattern.startswith("/"):
            return _url_matches(pattern, _path_of(url))
        if any_host and _path_of(pattern) != "/":
            return _url_matches(_path_of(pattern), _path_of(url))
        return _url_matches(pattern, url)

    def _describe(self) -> str:
        where = " ".join(p for p in (self.method, self.url) if p) or "any request"
        given = self.options
        options = ", ".join(f"{k}={v!r}" for k, v in given.items())
        if list(given) == ["retry_after"]:  # the form reports and snapshots know
            options = f"retry_after={self.retry_after:g}"
        shown = f" ({options})" if options else ""
        return f"http {self.label}{shown} on {where}"

    def check(self) -> None:
        __tracebackhide__ = True
        if self.status is None and self.kind is None:
            raise UsageError(
                f"{self.source or 'faults.http()'} says nothing to inject; finish it with "
                ".status(503), " + ", ".join(f".{kind}()" for kind in HTTP_KINDS)
            )


@dataclass(eq=False, slots=True, kw_only=True, repr=False)
class LLMFault(FaultBase):
    """A fault on every model call: the ``llm=`` kind ``kind`` with its step's options."""

    target: ClassVar[Target] = "llm"
    kind: str
    #: keyword arguments of the kind's step (`LlmKind.step`), e.g. ``retry_after``
    options: dict[str, Any] = field(default_factory=dict)
    #: only the model calls of the agent of this name (None: every agent's)
    agent: str | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        return ("llm",) if self.agent is None else ("llm", self.agent)

    @property
    def subject(self) -> str:
        of = "" if self.agent is None else f" of agent {self.agent!r}"
        return f"llm {self.kind!r}{of}"

    @property
    def transient(self) -> bool:
        """Whether the fault fails the call (the scripted step stays for the retry)."""
        return self.kind in TRANSIENT_LLM_KINDS

    def step(self) -> ScriptStep:
        """The scripted step this fault answers a model call with."""
        options = {k: v for k, v in self.options.items() if v is not None}
        return LLM_FAULT_KINDS[self.kind].step(**options)

    def _describe(self) -> str:
        of = "" if self.agent is None else f" (agent {self.agent!r})"
        return f"llm {self.kind}{of}"


Fault: TypeAlias = ToolFault | HTTPFault | LLMFault
"""One fault of a plan: a `ToolFault`, an `HTTPFault` or an `LLMFault`."""


@dataclass(frozen=True, slots=True)
class FiredFault:
    """One injected fault: an item of ``faults.fired``."""

    target: Target
    name: str
    kind: str
    occurrence: int
    fault: Fault

    def __str__(self) -> str:
        return f"{self.target}:{self.name} {self.kind} (occurrence {self.occurrence})"


# The slots' own setters: a frozen dataclass's __init__ sets each field through
# ``object.__setattr__``, twice the cost; a fault is recorded at every hit.
_Setter: TypeAlias = Callable[[FiredFault, Any], None]
_set_target: Final[_Setter] = FiredFault.__dict__["target"].__set__
_set_name: Final[_Setter] = FiredFault.__dict__["name"].__set__
_set_kind: Final[_Setter] = FiredFault.__dict__["kind"].__set__
_set_occurrence: Final[_Setter] = FiredFault.__dict__["occurrence"].__set__
_set_fault: Final[_Setter] = FiredFault.__dict__["fault"].__set__


def fired_fault(target: Target, name: str, kind: str, occurrence: int, fault: Fault) -> FiredFault:
    """``FiredFault(target, name, kind, occurrence, fault)``, made at half the cost."""
    item = object.__new__(FiredFault)
    _set_target(item, target)
    _set_name(item, name)
    _set_kind(item, kind)
    _set_occurrence(item, occurrence)
    _set_fault(item, fault)
    return item


# ----------------------------------------------------------------------------- helpers


_INIT_FIELDS: Final[dict[type, tuple[tuple[str, object], ...]]] = {}
#: the default of a field that has none to compare with (a ``default_factory``'s): unequal
#: to every value, so the value is always given
_NO_DEFAULT: Final = object()
#: the progress counters, which a fresh copy leaves at their defaults
_PROGRESS: Final = frozenset({"seen", "hits"})


def _init_fields(cls: type) -> tuple[tuple[str, object], ...]:
    """A fault class's constructor fields but the progress counters, with their defaults.

    Looked up once per class.
    """
    known = _INIT_FIELDS.get(cls)
    if known is None:
        known = _INIT_FIELDS[cls] = tuple(
            (f.name, _NO_DEFAULT if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(cls)
            if f.init and f.name not in _PROGRESS
        )
    return known


_ADDRESS: Final = re.compile(r" at 0x[0-9a-fA-F]+>")


def without_addresses(text: str) -> str:
    """``text`` with default reprs' addresses left out: ``<Box object>``, the same every run."""
    return _ADDRESS.sub(">", text) if " at 0x" in text else text


def is_exception_class(value: object) -> bool:
    """Whether ``value`` is a class of exceptions."""
    return isinstance(value, type) and issubclass(value, BaseException)


def short(value: object) -> str:
    """``value`` shown short and redacted, for messages (an exception by its type)."""
    if isinstance(value, BaseException):
        text = str(value)
        return f"{type(value).__name__}({repr(text) if text else ''})"
    if is_exception_class(value):
        return str(getattr(value, "__name__", value))
    if isinstance(value, ToolFailure):
        return f"ToolFailure({value.error!r})"
    # redacted before it is cut (a key cut short loses its shape); no per-run address
    text = without_addresses(redact_text(repr(value)))
    return text if len(text) <= 60 else text[:57] + "..."


def check_url(url: str | None, where: str) -> None:
    """Refuse a ``url=`` that can match no request: one with no scheme and not a path."""
    __tracebackhide__ = True
    if url is None or url.startswith("/") or "://" in url:
        return
    raise UsageError(
        redact_text(
            f"{where}: url={url!r} has no scheme, so it matches no request; write the whole "
            f"URL ({'https://' + url!r}), or a path starting with '/' to match it on any host"
        )
    )


def _path_of(url: str) -> str:
    """The path of ``url`` (``/v1/messages``), or ``url`` itself when it is a path."""
    if url.startswith("/"):
        return url.split("?", 1)[0]
    _, sep, rest = url.partition("://")
    if not sep:
        return url
    slash = rest.find("/")
    return rest[slash:].split("?", 1)[0] if slash >= 0 else "/"


def _url_matches(pattern: str, url: str) -> bool:
    url = url.split("?", 1)[0]
    pattern = pattern.split("?", 1)[0]
    if pattern != "/":
        pattern = pattern.rstrip("/")
    if url == pattern or url.rstrip("/") == pattern:
        return True
    return url.startswith(pattern if pattern.endswith("/") else pattern + "/")
