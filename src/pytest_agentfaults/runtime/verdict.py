"""The resilience verdict: what a trace says about how the code under test retried.

```python
verdict = trace.verdict()
assert verdict.passed, verdict.render()
trace.assert_resilient()                      # the same, in one line
trace.assert_resilient(ignore=("gave_up_early",))
```

A pure function of a `Trace`: its ``http.request`` / ``http.fault`` events and its
``tool.retry`` / ``llm.retry`` / ``transport.retry`` events, judged on their ``at`` times,
which are virtual in tests, so a backoff of 8 s is judged as 8 s without anyone waiting.

HTTP attempts are first grouped into *requests*: ``http.request`` events of one run with
the same method, URL and body digest are attempts of one request; an official SDK's
``x-stainless-retry-count: 0``, or an attempt after a success, starts a new one. Within a
request the *gap* before attempt k+1 is ``at[k+1] - at[k]``. An attempt *failed* when it
got a status >= 400, raised, or its stream was cut; it failed *retryably* with 408, 409,
429, 5xx, a connection error, a timeout or a cut stream.

``retry_after_ignored``
    attempt k was answered with a ``Retry-After`` (or ``retry-after-ms``) of R seconds
    and attempt k+1 came sooner than R (1 ms tolerance).
``retried_non_retryable``
    attempt k got 400, 401, 403, 404 or 422 and was sent again; or a ``tool.retry`` /
    ``llm.retry`` / ``transport.retry`` with a backoff retried an error classified as not
    retryable (``af.classify``).
``no_backoff``
    attempt k failed and attempt k+1 came less than ``min_backoff`` (0.05 s) later (and
    was not already a ``retry_after_ignored``); or a retry event whose ``delay`` is below
    ``min_backoff``.
``retry_storm``
    a request with more than ``max_attempts`` (5) attempts; more than ``storm_rate`` (10)
    retries of one endpoint within ``storm_window`` (1 s); or a tool call or model turn
    retried into attempt ``max_attempts + 1``.
``gave_up_early``
    a request whose only attempt failed retryably (a 429 asking to wait more than 60 s
    aside), when no run ended ``ok`` after it (its own run, when it ran inside one).
``truncated_stream_accepted``
    a stream cut mid-way (a ``truncated_stream`` fault) that was never requested again,
    followed by a run that ended ``ok``: a partial answer was used.
``retried_non_idempotent``
    a tool that must not run twice (``@af.tool(idempotent=False)``, or the marker's
    ``idempotent=False``: any event of that tool with ``idempotent=False``) failed
    ambiguously (a timeout, a connection broken after sending: the ``tool.error``'s
    ``ambiguous`` field, else its error type, see `pytest_agentfaults.errors.is_ambiguous`)
    and the same call was attempted again.

Every `Finding` has a ``code``, a ``message`` saying what happened, ``advice`` saying what
to change, and the ``events`` involved.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults.errors import AMBIGUOUS_ERROR_NAMES, UNSENT_ERROR_NAMES, UsageError
from pytest_agentfaults.runtime._verdict_codes import ADVICE, CODES

if TYPE_CHECKING:
    # Only for annotations: events.py imports this module (Trace.verdict), not the reverse.
    from pytest_agentfaults.runtime.events import Event, Trace

__all__ = ["Finding", "NotResilientError", "Verdict", "verdict"]

NON_RETRYABLE_STATUSES: Final = frozenset({400, 401, 403, 404, 422})
_TRANSIENT_ERRORS: Final = frozenset(
    {
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "TimeoutException",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "ConnectionResetError",
        "ConnectionError",
        "TimeoutError",
        "ModelTransportError",
        "ModelTimeoutError",
        "ModelStreamError",
        "ModelServerError",
        "RateLimitError",
    }
)
_TRUNCATED: Final = "truncated_stream"
_PATIENCE: Final = 60.0  # a 429 asking to wait longer than this may be given up on
_TOLERANCE: Final = 1e-3


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the verdict holds against the trace."""

    code: str
    message: str
    advice: str
    events: tuple[Event, ...] = ()

    def render(self) -> str:
        """Three lines or more: the code and message, the advice, the events involved."""
        lines = [f"{self.code}: {self.message}", f"  advice: {self.advice}"]
        lines.extend(f"  #{e.seq} {e.describe()}" for e in self.events)
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The findings over one trace; ``passed`` when there are none."""

    findings: tuple[Finding, ...] = ()
    requests: int = 0  # HTTP requests judged (attempts grouped)
    attempts: int = 0  # HTTP attempts judged
    retries: int = 0  # retry events judged (tool, llm, transport)
    ignored: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        """True when nothing was found."""
        return not self.findings

    @property
    def codes(self) -> list[str]:
        """The codes found, in order, each once."""
        return list(dict.fromkeys(f.code for f in self.findings))

    def of(self, code: str) -> list[Finding]:
        """The findings with ``code``."""
        return [f for f in self.findings if f.code == code]

    def render(self) -> str:
        """A report: the outcome on the first line, then each finding with its advice."""
        judged = (
            f"{self.requests} HTTP requests ({self.attempts} attempts), {self.retries} retry events"
        )
        if self.passed:
            head = f"resilience verdict: passed ({judged})"
            return head if not self.ignored else f"{head}; ignored: {', '.join(self.ignored)}"
        count = len(self.findings)
        lines = [f"resilience verdict: {count} finding{'s' if count > 1 else ''} ({judged})"]
        lines.extend(f.render() for f in self.findings)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


class NotResilientError(AssertionError):
    """Raised by `Trace.assert_resilient`; ``verdict`` holds the findings."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.render())
        self.verdict = verdict


# ============================================================================ the rules


@dataclass(slots=True)
class _Request:
    """The attempts of one HTTP request, in order."""

    attempts: list[Event]

    @property
    def first(self) -> Event:
        return self.attempts[0]

    def where(self) -> str:
        event = self.first
        return f"{event.field('method')} {event.field('url')}"


def verdict(
    trace: Trace | Iterable[Event],
    *,
    ignore: Iterable[str] = (),
    max_attempts: int = 5,
    min_backoff: float = 0.05,
    storm_rate: int = 10,
    storm_window: float = 1.0,
) -> Verdict:
    """Judge ``trace`` (see the module docs for the rules); ``ignore`` drops codes."""
    ignored = tuple(ignore)
    unknown = [code for code in ignored if code not in CODES]
    if unknown:
        raise UsageError(
            f"verdict(ignore=...): unknown code {unknown[0]!r}; the codes are {', '.join(CODES)}"
        )
    events = list(trace)  # a Trace iterates over its events
    requests = _group(events)
    retry_events = [e for e in events if e.type in ("tool.retry", "llm.retry", "transport.retry")]
    findings: list[Finding] = []
    for request in requests:
        findings.extend(_judge_request(request, max_attempts, min_backoff))
    findings.extend(_storms(requests, storm_rate, storm_window))
    findings.extend(_gave_up(requests, events))
    findings.extend(_truncated(requests, events))
    findings.extend(_judge_retries(retry_events, max_attempts, min_backoff))
    findings.extend(_non_idempotent_reruns(events))
    kept = tuple(f for f in findings if f.code not in ignored)
    return Verdict(
        findings=kept,
        requests=len(requests),
        attempts=sum(len(r.attempts) for r in requests),
        retries=len(retry_events),
        ignored=ignored,
    )


def _group(events: Sequence[Event]) -> list[_Request]:
    open_requests: dict[tuple[Any, ...], _Request] = {}
    requests: list[_Request] = []
    for event in events:
        if event.type != "http.request":
            continue
        key = (event.run_id, event.field("method"), event.field("url"), event.field("body_sha"))
        current = open_requests.get(key)
        if current is None or event.field("retry_count") == 0 or _succeeded(current.attempts[-1]):
            current = _Request([event])
            open_requests[key] = current
            requests.append(current)
        else:
            current.attempts.append(event)
    return requests


def _status(event: Event) -> int | None:
    status = event.status
    return status if isinstance(status, int) else None


def _failed(event: Event) -> bool:
    status = _status(event)
    return event.error is not None or (status is not None and status >= 400)


def _succeeded(event: Event) -> bool:
    return not _failed(event)


def _retryable(event: Event) -> bool:
    status = _status(event)
    if status is not None and status >= 400:
        return status in (408, 409, 429) or status >= 500
    error = event.error
    if error is None:
        return False
    return error.retryable or error.type in _TRANSIENT_ERRORS


def _outcome(event: Event) -> str:
    status = _status(event)
    if event.error is not None and (status is None or status < 400):
        fault = event.field("fault")
        return f"{event.error.type} ({fault})" if fault else event.error.type
    return f"HTTP {status}"


def _judge_request(request: _Request, max_attempts: int, min_backoff: float) -> list[Finding]:
    """The pair rules over one request's attempts: one finding per code, naming every pair."""
    pairs: dict[str, list[tuple[Event, Event, str]]] = {}
    where = request.where()
    for before, after in itertools.pairwise(request.attempts):
        gap = after.at - before.at
        status = _status(before)
        retry_after = before.field("retry_after")
        if status in NON_RETRYABLE_STATUSES:
            why = f"got HTTP {status} and was sent again {gap:.3f}s later"
            pairs.setdefault("retried_non_retryable", []).append((before, after, why))
        elif isinstance(retry_after, int | float) and gap + _TOLERANCE < retry_after:
            why = f"the server asked to wait {retry_after:g}s and the retry came {gap:.3f}s later"
            pairs.setdefault("retry_after_ignored", []).append((before, after, why))
        elif _failed(before) and gap < min_backoff:
            why = f"retried {gap:.3f}s after {_outcome(before)} (less than {min_backoff:g}s)"
            pairs.setdefault("no_backoff", []).append((before, after, why))
    found = []
    for code, items in pairs.items():
        events = [items[0][0]] + [after for _, after, _ in items]
        times = "" if len(items) == 1 else f" ({len(items)} times)"
        found.append(_finding(code, f"{where}: {items[0][2]}{times}", *events))
    attempts = request.attempts
    if len(attempts) > max_attempts:
        found.append(
            _finding(
                "retry_storm",
                f"{where} was attempted {len(attempts)} times (more than {max_attempts})",
                *attempts,
            )
        )
    return found


def _storms(requests: list[_Request], rate: int, window: float) -> list[Finding]:
    by_endpoint: dict[tuple[Any, ...], list[Event]] = {}
    for request in requests:
        key = (request.first.field("method"), request.first.field("url"))
        by_endpoint.setdefault(key, []).extend(request.attempts[1:])
    found = []
    for (method, url), retries in by_endpoint.items():
        retries.sort(key=lambda e: e.at)
        start = 0
        for end, event in enumerate(retries):
            while event.at - retries[start].at > window:
                start += 1
            if end - start + 1 > rate:
                found.append(
                    _finding(
                        "retry_storm",
                        f"{method} {url} was retried {end - start + 1} times within "
                        f"{window:g}s (more than {rate})",
                        *retries[start : end + 1],
                    )
                )
                break
    return found


def _run_ends(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if e.type == "run.end"]


def _recovered_after(event: Event, ends: list[Event]) -> bool:
    own = [e for e in ends if e.run_id == event.run_id]
    if own:
        return any(e.status == "ok" for e in own)
    return any(e.status == "ok" and e.seq > event.seq for e in ends)


def _gave_up(requests: list[_Request], events: Sequence[Event]) -> list[Finding]:
    ends = _run_ends(events)
    found = []
    for request in requests:
        if len(request.attempts) != 1:
            continue
        only = request.first
        if not (_failed(only) and _retryable(only)):
            continue
        retry_after = only.field("retry_after")
        if isinstance(retry_after, int | float) and retry_after > _PATIENCE:
            continue
        if _recovered_after(only, ends):
            continue
        found.append(
            _finding(
                "gave_up_early",
                f"{request.where()} failed once ({_outcome(only)}) and was never retried",
                only,
            )
        )
    return found


def _truncated(requests: list[_Request], events: Sequence[Event]) -> list[Finding]:
    ends = _run_ends(events)
    found = []
    for request in requests:
        last = request.attempts[-1]
        if last.field("fault") != _TRUNCATED:
            continue
        accepted = [e for e in ends if e.status == "ok" and e.seq > last.seq]
        if accepted:
            found.append(
                _finding(
                    "truncated_stream_accepted",
                    f"the stream of {request.where()} was cut mid-way, never requested "
                    "again, and the run still ended ok",
                    last,
                    accepted[0],
                )
            )
    return found


def _judge_retries(events: list[Event], max_attempts: int, min_backoff: float) -> list[Finding]:
    found = []
    stormy: set[tuple[Any, ...]] = set()
    for event in events:
        subject = event.tool or event.field("model") or event.agent or "a model call"
        delay = event.delay
        if delay is not None and event.error is not None and not event.error.retryable:
            found.append(
                _finding(
                    "retried_non_retryable",
                    f"{event.type} of {subject} retried {event.error.type}, which is not retryable",
                    event,
                )
            )
        elif delay is not None and delay < min_backoff:
            found.append(
                _finding(
                    "no_backoff",
                    f"{event.type} of {subject} waited {delay:g}s before attempt "
                    f"{event.attempt} (less than {min_backoff:g}s)",
                    event,
                )
            )
        attempt = event.attempt
        key = (event.type, event.run_id, event.tool, event.call_id)
        if (
            event.type != "transport.retry"
            and attempt is not None
            and attempt > max_attempts
            and key not in stormy
        ):
            stormy.add(key)
            found.append(
                _finding(
                    "retry_storm",
                    f"{event.type} of {subject} reached attempt {attempt} "
                    f"(more than {max_attempts})",
                    event,
                )
            )
    return found


def _finding(code: str, message: str, *events: Event) -> Finding:
    return Finding(code=code, message=message, advice=ADVICE[code], events=events)


def _ambiguous(event: Event) -> bool:
    flag = event.field("ambiguous")
    if isinstance(flag, bool):
        return flag
    error = event.error
    if error is None:
        return False
    return error.type in AMBIGUOUS_ERROR_NAMES and error.type not in UNSENT_ERROR_NAMES


def _non_idempotent_reruns(events: Sequence[Event]) -> list[Finding]:
    """A call of a tool that must not run twice, attempted again after it failed ambiguously.

    Attempts of one call share run, tool and call id; without a call id (a framework that
    gives none) only an attempt numbered above 1 counts, not a new call the model made.
    """
    declared = {e.tool for e in events if e.tool and e.field("idempotent") is False}
    if not declared:
        return []
    failed: dict[tuple[Any, ...], Event] = {}
    found = []
    for event in events:
        if event.tool not in declared:
            continue
        key = (event.run_id, event.tool, event.call_id)
        if event.type == "tool.error" and _ambiguous(event):
            failed[key] = event
        elif event.type == "tool.result":
            failed.pop(key, None)
        elif event.type == "tool.call" and key in failed:
            if event.call_id is None and (event.attempt or 1) <= 1:
                continue
            before = failed.pop(key)
            what = before.error.type if before.error is not None else "an ambiguous failure"
            found.append(
                _finding(
                    "retried_non_idempotent",
                    f"tool {event.tool!r} must not run twice, failed with {what} (it may have "
                    f"taken effect) and was run again (attempt {event.attempt})",
                    before,
                    event,
                )
            )
    return found
