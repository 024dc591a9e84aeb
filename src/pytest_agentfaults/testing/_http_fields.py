"""The fields of an ``http.request`` event that the verdict judges a client by.

What the event records of a request's client and of a response's retry headers (see
`pytest_agentfaults.runtime.verdict`).

Used by both places that record HTTP attempts, the in-process layer (`http.py`) and the
loopback server (`_serve.py`), so the two record the same fields the same way.

- ``client``: who sent the request, from its ``user-agent`` (the official SDKs send
  ``OpenAI/Python 3.x`` or ``AsyncAnthropic/Python 2.x``, and ``x-stainless-retry-count``):
  ``"openai.OpenAI"``, ``"anthropic.AsyncAnthropic"``, ``"agentfaults"`` (this package's
  model clients), ``"httpx"``, ``"httpx2"``, ``"openai"`` / ``"anthropic"`` (an SDK sent
  with a user-agent of the user's own), or the user-agent's product name.
- ``via``: the framework that sent it through the openai SDK, when the request tells
  (``"pydantic_ai"``, ``"openai_agents"``, ``"langchain"``): the verdict asks what it
  made of a body that is not JSON, which the SDK hands over as text.
- ``retry_after``: the wait in seconds a failed response asked for (``retry-after-ms``, or
  ``Retry-After`` in seconds or as an HTTP date), and ``retry_after_date=True`` for a date.
- ``should_retry``: the ``x-should-retry: true|false`` header, as a bool.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults._redact import is_secret_header, redact_text
from pytest_agentfaults.errors import NetworkBlockedError
from pytest_agentfaults.runtime._event import redact
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.runtime.hooks import current_emit
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after
from pytest_agentfaults.testing._body_digest import faulted_body_fields, short_sha
from pytest_agentfaults.testing._current import current_plan

if TYPE_CHECKING:
    from types import FrameType

    from pytest_agentfaults._redact import LearnedSecrets
    from pytest_agentfaults.testing._fault import HTTPFault
    from pytest_agentfaults.testing.faults import FaultPlan
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "REFUSED_HEADER",
    "REFUSED_STATUS",
    "attempt_fields",
    "client_fields",
    "connect_fields",
    "emit_attempt",
    "learn_request",
    "refused",
    "request_headers",
    "response_fields",
    "response_header_fields",
    "why_unmatched",
]

_PRODUCT: Final = re.compile(r"^\s*([A-Za-z][\w.\-]*)/")
_KNOWN: Final = {
    "python-httpx": "httpx",
    "python-httpx2": "httpx2",
    "pytest-agentfaults": "agentfaults",
}


#: the request headers an ``http.request`` event is made from (`request_headers`), by
#: their lower-case names as bytes (how ``headers.raw`` gives a name, once lower-cased)
_READ: Final = {
    name.encode("ascii"): name
    for name in (
        "user-agent",
        "x-stainless-retry-count",
        "x-stainless-lang",
        "x-stainless-raw-response",
    )
}
#: what `request_headers` does with a header, by its lower-case name as bytes: reads it
#: (the name of `_READ`), learns it (`_CREDENTIAL`, a credential header: see
#: `is_secret_header`) or skips it (None: most of an SDK's ~15 headers). Names are added
#: as first seen, so a header costs one lookup, as it did before credentials were learned.
_KINDS: dict[bytes, str | None] = dict(_READ)
_CREDENTIAL: Final = "credential"
_NAMES_AT_MOST: Final = 1024  # a session sees few names; past this, each is worked out again


def _kind(lower: bytes) -> str | None:
    """`_CREDENTIAL` or None, for a header name `request_headers` has not seen before."""
    kind = _CREDENTIAL if is_secret_header(lower.decode("latin-1")) else None
    if len(_KINDS) < _NAMES_AT_MOST:
        _KINDS[lower] = kind
    return kind


#: the encodings ``headers.encoding`` falls back through: each decodes ascii bytes as ascii
_ASCII_COMPATIBLE: Final = frozenset({None, "ascii", "utf-8", "iso-8859-1"})


def request_headers(headers: Any, learned: LearnedSecrets | None = None) -> dict[str, str]:
    """The headers of an httpx / httpx2 request that the event reads, by lower-case name.

    Each value as ``headers.get`` gives it (a repeated header's values joined by ``, ``,
    decoded with the headers' encoding). One pass over the headers' own ``(name,
    lower-case name, value)`` list: each ``headers.get`` would loop over all of an SDK's
    ~15 headers again, and ``headers.raw`` would copy them first. On the way, the value
    of every credential header is learned into ``learned`` (the session's).
    """
    items = getattr(headers, "_list", None)  # httpx's and httpx2's own, as their methods read
    if items is None:
        items = [(name, name.lower(), value) for name, value in headers.raw]
    found: dict[str, str] = {}
    ascii_ok = None  # looked up at the first hit
    for _, lower, raw_value in items:  # a loop, not a comprehension: no frame per request
        try:  # free in the common case (3.11+), unlike a ``get`` call
            name = _KINDS[lower]
        except KeyError:
            name = _kind(lower)
        if name is None:
            continue
        if name is _CREDENTIAL:
            # the same key on every request: one set lookup of the bytes as sent
            if learned is not None and raw_value not in learned.sent:
                value = _decoded(headers, raw_value)
                learned.learn_credential(lower.decode("latin-1"), value, raw_value)
            continue
        if ascii_ok is None:
            ascii_ok = getattr(headers, "_encoding", None) in _ASCII_COMPATIBLE
        # an ascii value reads the same in every encoding the headers may fall back to
        value = (
            raw_value.decode("ascii")
            if ascii_ok and raw_value.isascii()
            else raw_value.decode(headers.encoding)
        )
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


def _decoded(headers: Any, raw_value: bytes) -> str:
    """One of ``headers``' values, decoded as `request_headers` decodes the ones it reads."""
    if raw_value.isascii() and getattr(headers, "_encoding", None) in _ASCII_COMPATIBLE:
        return raw_value.decode("ascii")
    return str(raw_value.decode(headers.encoding))


def learn_request(request: Any, learned: LearnedSecrets) -> None:
    """Learn the credentials an httpx / httpx2 request carries into ``learned``.

    Its credential headers (as `request_headers` does) and its credential query
    parameters (the URL made a string only when it has a query).
    """
    request_headers(request.headers, learned)
    url = request.url
    if url.query:
        learned.learn_url(str(url))


def client_fields(
    headers: Mapping[str, str], url: str = "", *, in_process: bool = False
) -> dict[str, Any]:
    """``{"client": ...}`` for a request's headers (lower-case names), or ``{}``.

    An official SDK sent with a user-agent of the user's own is still told by its
    ``x-stainless-*`` headers: ``"anthropic"`` or ``"openai"``, by the URL.
    ``in_process``: called in the stack that sends the request (the in-process layer),
    which `_via` may read; the loopback server sees the request alone.
    """
    agent = headers.get("user-agent") or ""
    stainless = "x-stainless-retry-count" in headers or "x-stainless-lang" in headers
    anthropic = stainless and ("anthropic" in url or url.endswith("/v1/messages"))
    client = _client(agent, stainless, anthropic)
    if not client:
        return {}
    raw = headers.get("x-stainless-raw-response") == "true"
    via = _via(agent, client, raw, in_process)
    return {"client": client, "via": via} if via else {"client": client}


def _via(agent: str, client: str, raw: bool, in_process: bool) -> str | None:
    """The framework that sent the request through the openai SDK, when it says so.

    It reads the answer, not the caller: the verdict asks it what became of a body the
    SDK handed over as text. pydantic-ai and the OpenAI Agents SDK (``Agents/Python x.y``)
    send their own user-agents; langchain-openai the SDK's, asking for the raw response
    (``with_raw_response``), which it parses itself. A user's own raw-response call is
    the same request: in-process, langchain-openai's code on the stack tells them apart
    (looked for only then, when langchain_openai is loaded); the loopback server cannot
    see the caller, and takes every such request for LangChain's.
    """
    if not client.startswith("openai"):
        return None
    if agent.startswith("pydantic-ai/"):
        return "pydantic_ai"
    if agent.startswith("Agents/Python"):
        return "openai_agents"
    if (
        raw
        and "langchain_openai" in sys.modules
        and (not in_process or _on_stack("langchain_openai."))
    ):
        return "langchain"
    return None


def _on_stack(prefix: str) -> bool:
    """Whether a module named ``prefix...`` has a frame on this thread's stack.

    A task's stack goes through every coroutine it awaits, so an async call's caller is
    found as a sync call's is.
    """
    frame: FrameType | None = inspect.currentframe()
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(prefix):
            return True
        frame = frame.f_back
    return False


# a client sends the same user-agent on every request: its name is worked out once
@functools.lru_cache(maxsize=256)
def _client(agent: str, stainless: bool, anthropic: bool) -> str:
    """The client's name for `client_fields` (``""``: nothing to tell)."""
    match = _PRODUCT.match(agent)
    product = match.group(1) if match else ""
    if product in _KNOWN:
        return _KNOWN[product]
    if agent[len(product) :].startswith("/Python") and stainless:
        package = _package(product)
        if package:
            return f"{package}.{product}"
    if stainless:
        return "anthropic" if anthropic else "openai"
    return product[:40]


def _package(cls: str) -> str | None:
    lowered = cls.lower()
    for package in ("anthropic", "openai"):  # AnthropicBedrock before a stray "openai"
        if package in lowered:
            return package
    return None


def response_fields(status: int | None, headers: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The retry fields of a failed response (status >= 400), or ``{}``."""
    if status is None or status < 400:
        return {}
    return _retry_fields({name.lower(): value for name, value in headers})


#: the response headers `response_header_fields` reads, by lower-case name as bytes
_RETRY_READ: Final = {
    name.encode("ascii"): name for name in ("retry-after", "retry-after-ms", "x-should-retry")
}


def response_header_fields(status: int | None, headers: Any) -> dict[str, Any]:
    """`response_fields` of an httpx / httpx2 response's ``headers``, read in one pass.

    Only the three retry headers are decoded (``multi_items()`` would decode them all).
    """
    if status is None or status < 400:
        return {}
    items = getattr(headers, "_list", None)
    if items is None:
        return response_fields(status, headers.multi_items())
    lowered: dict[str, str] = {}
    ascii_ok = None  # looked up at the first hit
    for _, lower, value in items:  # a loop, not comprehensions: no frames per response
        if lower not in _RETRY_READ:
            continue
        if ascii_ok is None:
            ascii_ok = getattr(headers, "_encoding", None) in _ASCII_COMPATIBLE
        lowered[_RETRY_READ[lower]] = (
            value.decode("ascii")
            if ascii_ok and value.isascii()
            else value.decode(headers.encoding)
        )
    return _retry_fields(lowered) if lowered else {}


def _retry_fields(lowered: Mapping[str, str]) -> dict[str, Any]:
    """The retry fields of a failed response's headers (lower-case names)."""
    fields: dict[str, Any] = {}
    retry_after = parse_retry_after(lowered)
    if retry_after is not None:
        fields["retry_after"] = retry_after
        if "retry-after-ms" not in lowered and _is_date(lowered.get("retry-after", "")):
            fields["retry_after_date"] = True
    flag = lowered.get("x-should-retry", "").strip().lower()
    if flag in ("true", "false"):
        fields["should_retry"] = flag == "true"
    return fields


def _is_date(value: str) -> bool:
    try:
        float(value.strip())
    except ValueError:
        return bool(value.strip())
    return False


#: a request body -> its ``body_sha``, for one test (`attempt_fields`)
Digests = dict[bytes, str]
#: bodies up to this size have their digest remembered for the test (an SDK's retries
#: send the same body again); a larger one is digested each time, never kept
_REMEMBERED_BODY: Final = 64 * 1024


#: The status of the network guard's answer to an SDK (`NetworkGuard.refuse`): final for
#: both SDKs with ``x-should-retry: false`` (they read that header before the status), and
#: 4xx for any other client that ignores it.
REFUSED_STATUS: Final = 403
#: its header: the request was refused, never sent; the SDKs ignore it, the trace reads it
#: (`refused`)
REFUSED_HEADER: Final = "x-agentfaults-refused"


def refused(response: Any, error: BaseException | None) -> bool:
    """Whether the client's answer is a refusal: the guard's 403, or its error.

    Read from the answer itself, however it came back (through the test's routes, or
    from the fault layer), so each refusal is recorded as one, once.
    """
    if error is not None:
        return isinstance(error, NetworkBlockedError)
    # the status first: every recorded attempt asks, and a header lookup scans them all
    return (
        response is not None
        and response.status_code == REFUSED_STATUS
        and REFUSED_HEADER in response.headers
    )


def attempt_fields(
    request: Any,
    url: str,
    response: Any,
    error: BaseException | None,
    fault: HTTPFault | None,
    digests: Digests,
    learned: LearnedSecrets | None = None,
) -> dict[str, Any]:
    """The fields of the in-process layer's ``http.request`` event for one attempt.

    ``url`` as the event shows it; ``response`` or ``error`` is what the client got, and
    ``fault`` the fault behind it, if any. ``digests`` is the test's (its HTTP layer's).
    The request's credentials are learned into ``learned`` (the session's), if given.
    A request refused before it was sent (`refused`) says so: ``refused: True``, which
    the verdict leaves out (no server answered it), and its ``detail``.
    """
    method = request.method
    fields: dict[str, Any] = {"method": method, "url": url}
    headers = request_headers(request.headers, learned)
    if learned is not None and "?" in url:
        learned.learn_url(url)
    fields.update(client_fields(headers, url, in_process=True))
    if response is not None:
        status = response.status_code
        fields["status"] = status
        if status >= 400:  # the retry fields of a failed response
            fields.update(response_header_fields(status, response.headers))
    if error is not None:
        fields["error"] = ErrorRecord.from_exception(error)
    retry_count = headers.get("x-stainless-retry-count")
    detail = f"{method} {url}"
    if retry_count is not None and retry_count.isdigit():
        fields["retry_count"] = int(retry_count)
        if retry_count != "0":
            detail += f" (retry {retry_count})"
    if fault is not None:
        fields["fault"] = fault.label
    if refused(response, error):
        fields["refused"] = True
        detail += ": refused, never sent (no fault, route or loopback server answered it)"
    try:
        body = request.content
    except Exception:  # a streamed upload that nobody has read: no digest
        body = b""
    if isinstance(body, bytes) and body:
        digest = digests.get(body) if len(body) <= _REMEMBERED_BODY else None
        if digest is None:
            digest = short_sha(body)
            if len(body) <= _REMEMBERED_BODY and len(digests) < 64:
                digests[body] = digest
        fields["body_sha"] = digest
        if fault is not None:
            fields.update(faulted_body_fields(body, fault.label))
    fields["detail"] = detail
    return fields


def connect_fields(host: str, port: object, error: BaseException, call: str) -> dict[str, Any]:
    """The ``http.request`` fields of ``call`` (a ``socket.connect``, a lookup) the guard refused.

    urllib, requests or a raw socket: no method or path is known at the connect (or the
    name lookup before it), so the event names the address (``tcp://host:port``) and the
    client ``socket``; ``refused``, as for a refused httpx request, keeps it out of the verdict.
    """
    shown = f"[{host}]" if ":" in host else host
    return {
        "url": f"tcp://{shown}:{port}",
        "client": "socket",
        "error": ErrorRecord.from_exception(error),
        "refused": True,
        "detail": f"{call}: refused, never sent (not a loopback address; no fault or route "
        "reaches a socket client)",
    }


def emit_attempt(
    plan: FaultPlan, type: str, fields: dict[str, Any], texts: tuple[str, ...]
) -> None:
    """Record ``fields`` as a ``type`` event of ``plan``'s test; ``texts``: its free text.

    In a run, through the run's recorder (``emit``, which checks every field). Else
    through the plan's recorder as an event of known types (`Recorder.emit_known`):
    every value here is a name, a number, a bool, an `ErrorRecord`, a hex digest or
    one of ``texts``, which are redacted here (``detail`` by the recorder).
    """
    emit = current_emit()
    if emit is not None:
        emit(type, **fields)
        return
    recorder = plan.http_recorder
    if recorder is None:
        recorder = plan.http_recorder = Recorder(agent="http", clock=default_clock())
    for name in texts:
        value = fields.get(name)
        if value is not None:
            fields[name] = redact(value)
    recorder.emit_known(type, fields)


# a fault's settings -> its label, options and description (`fault_facts`)
FactsCache = dict[tuple[Any, ...], tuple[str, dict[str, Any], str]]
_facts: FactsCache = {}


def fault_facts(fault: HTTPFault) -> tuple[str, dict[str, Any], str]:
    """``fault.label``, ``fault.options`` and ``fault.describe()``, worked out once.

    All three follow from the fault's settings (each value with its class: a repr shows
    ``True`` and ``1`` apart), so they are remembered by those settings, for every test
    that declares the same fault (a session's faults are few; bounded all the same).
    The options are a dict no caller changes (`outcome` reads them as keywords).
    """
    status, retry_after, should_retry = fault.status, fault.retry_after, fault.should_retry
    after, delay, kind_status = fault.after, fault.delay, fault.kind_status
    key = (
        fault.method,
        fault.url,
        status,
        status.__class__,
        fault.kind,
        retry_after,
        retry_after.__class__,
        fault.retry_after_format,
        should_retry,
        should_retry.__class__,
        after,
        after.__class__,
        delay,
        delay.__class__,
        kind_status,
        kind_status.__class__,
    )
    facts = _facts.get(key)
    if facts is None:
        facts = (fault.label, fault.options, fault.describe())
        if len(_facts) >= 256:
            _facts.clear()
        _facts[key] = facts
    return facts


def why_unmatched(method: str, url: str) -> str:
    """A sentence naming the test's http faults that did not hit a refused request, and why."""
    plan = current_plan()
    reasons = []
    for fault in plan.faults if plan is not None else ():
        if getattr(fault, "target", None) != "http":
            continue
        http: HTTPFault = fault  # type: ignore[assignment]
        if http.method is not None and http.method != method.upper():
            why = f"its method= is {http.method}, the request's {method.upper()}"
        elif http.url is not None and not http.matches_http(method, url):
            why = "its url= is not this URL, nor a prefix of it ending at '/'"
        else:
            why = "it matches, but its times=, at= or probability= left this request out"
        reasons.append(f"{http.written} ({why})")
    if not reasons:
        return ""
    faults_of = "fault" if len(reasons) == 1 else "faults"
    return redact_text(f" This test's http {faults_of} did not match it: {'; '.join(reasons)}.")
