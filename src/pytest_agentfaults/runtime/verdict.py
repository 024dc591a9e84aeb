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
``x-stainless-retry-count: 0``, an attempt after a success, or a new ``llm.request`` of the
run (the run's own retry, judged by its ``llm.retry`` events) starts a new one. Within a
request the *gap* before attempt k+1 is ``at[k+1] - at[k]``. An attempt *failed* when it
got a status >= 400, raised, or its stream was cut.

Each request is judged by the retry rules of the *client* that sent it, which its
``http.request`` events record (``client``, from the user-agent): the official openai and
anthropic SDKs, this runtime's model clients, plain httpx, or another client. The rules,
as data, are in ``_verdict_rules`` and in the table on docs/concepts.md: the statuses each
retries (an ``x-should-retry: true|false`` header overrides the status, for every client),
whether it retries timeouts, the longest ``Retry-After`` it waits out, and its attempt cap.

``retry_after_ignored``
    attempt k was answered with a ``Retry-After`` (or ``retry-after-ms``) of R > 0 seconds
    and attempt k+1 came sooner than R (1 ms tolerance; 1 s for an HTTP-date Retry-After,
    which has one-second resolution).
``retried_non_retryable``
    attempt k got 400, 401, 403, 404 or 422 (unless marked ``x-should-retry: true``), or a
    response marked ``x-should-retry: false``, and was sent again; or a ``tool.retry`` /
    ``llm.retry`` / ``transport.retry`` retried an error classified as not retryable
    (``af.classify``), other than a framework's model calling a tool again (``by="model"``:
    the error was fed back to it, the cure of such an error).
``no_backoff``
    attempt k failed and attempt k+1 came less than ``min_backoff`` (0.05 s) later, when
    the server had not asked for that shorter wait (a ``Retry-After: 0`` asks for nothing:
    the SDKs back off then); or a retry event whose ``delay`` is below ``min_backoff``.
    A framework's tool retry made by the code around the tool (``by="code"``: LangChain's
    ``with_retry``, a LangGraph ``RetryPolicy``, an app's loop) has as ``delay`` the wait
    since the failed attempt, on the test's clock (or the real one, when longer: a wait
    off the test's thread); one the model made (``by="model"``) has none, and owes none.
``retry_storm``
    a request attempted more times than its client's declared cap: this runtime's
    ``TransportRetry.max_attempts`` (from its ``transport.retry`` events, 3 by default);
    5 for plain httpx and other clients; none for an official SDK, whose ``max_retries``
    is its declared policy (``max_retries=5`` riding out five faults is no storm).
    ``max_attempts=N`` caps every client. Also: more than ``storm_rate`` (10) retries of
    one endpoint within ``storm_window`` (1 s); or a tool call or model turn retried into
    attempt ``max_attempts + 1`` (5 + 1 by default).
``gave_up_early``
    a request whose only attempt failed in a way its client's own rules retry (a 503, a
    dropped connection; not a ``Retry-After`` above the client's cap, not a timeout or a
    409 for this runtime, which leaves those to ``on_llm_error``), when no run ended
    ``ok`` after it (its own run, when it ran inside one); or a stream cut mid-way that
    was never requested again and whose run did not end ``ok`` (an SDK app outside any
    run included: no SDK re-issues a started stream; not our runtime's, whose run's
    ``on_llm_error`` decided).
``truncated_stream_accepted``
    a stream cut mid-way (a ``truncated_stream`` fault) that was never requested again
    (the same method, URL and body), followed by a run that ended ``ok``: a partial answer
    was used.
``malformed_body_accepted``
    a 2xx answer whose body is not the provider's JSON (a ``malformed_body`` fault: a
    proxy's HTML page; streamed, events that are not JSON) that was never requested again,
    outside any run (an official SDK returns such a page as a ``str`` completion, and
    anthropic's stream of it as an empty stream, without raising) or in a run that still
    ended ``ok``. Sent through pydantic-ai or langchain-openai (the request's ``via``),
    such a page is not used: each raises on the text the SDK hands it, and giving it up
    is ``gave_up_early``.
``retried_non_idempotent``
    a tool that must not run twice (``@af.tool(idempotent=False)``, or the marker's
    ``idempotent=False``: any event of that tool with ``idempotent=False``) failed
    ambiguously (a timeout, a connection broken after sending: the ``tool.error``'s
    ``ambiguous`` field, else its error type, see `pytest_agentfaults.errors.is_ambiguous`)
    and the same call was attempted again.

A trace in which nothing failed (no fault fired, no error, no retry, no failed HTTP
attempt) gives no rule anything to judge: its verdict has no findings but is not
``judged``, and `Trace.assert_resilient` fails on it, saying why, rather than pass
vacuously. ``assert verdict.passed`` alone does not check that; ``verdict.judged`` does.

Every `Finding` has a ``code``, a ``message`` saying what happened (and which client did
it), ``advice`` saying what to change, named for that client (``max_retries`` on
``openai.OpenAI``, ``transport_retry=af.TransportRetry(...)`` on our models), and the
``events`` involved.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from pytest_agentfaults.errors import AMBIGUOUS_ERROR_NAMES, UNSENT_ERROR_NAMES, UsageError
from pytest_agentfaults.runtime._verdict_codes import ADVICE, CODES, advice_for
from pytest_agentfaults.runtime._verdict_http import (
    count_attempts,
    failed,
    group,
    judge_requests,
    refused,
)

if TYPE_CHECKING:
    # Only for annotations: events.py imports this module (Trace.verdict), not the reverse.
    from pytest_agentfaults.runtime.events import Event, Trace
__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["RETRY_TYPES", "Finding", "NotResilientError", "Verdict", "check_options", "verdict"]

_DEFAULT_CAP: Final = 5  # attempts of a retried tool call or model turn
#: the retry events of every layer (a tool, a model turn, an HTTP transport)
RETRY_TYPES: Final = frozenset({"tool.retry", "llm.retry", "transport.retry"})
# Events that say something failed (or a fault was injected): what every rule starts from.
# A trace without one, and without a retry or a failed HTTP attempt, has nothing to judge.
_FAILURE_TYPES: Final = frozenset(
    {
        "tool.error",
        "tool.exhausted",
        "tool.fault",
        "llm.error",
        "llm.exhausted",
        "llm.fault",
        "http.fault",
        "fallback",
    }
)
# The options of `verdict` after the trace, for the message of a misspelt one.
OPTIONS: Final = ("ignore", "max_attempts", "min_backoff", "storm_rate", "storm_window")


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
    failures: int = 0  # failures judged: error and fault events, failed HTTP attempts
    events: int = 0  # events in the trace judged

    @property
    def passed(self) -> bool:
        """True when nothing was found (see `judged`: a trace without failures passes too)."""
        return not self.findings

    @property
    def judged(self) -> bool:
        """True when the trace held something to judge: a failure or a retry.

        Every rule starts from one; without any, ``passed`` says nothing about resilience.
        """
        return bool(self.failures or self.retries or self.findings)

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
        if not self.judged:
            return _nothing_to_judge(self, judged)
        if self.passed:
            head = f"resilience verdict: passed ({judged})"
            return head if not self.ignored else f"{head}; ignored: {', '.join(self.ignored)}"
        count = len(self.findings)
        lines = [f"resilience verdict: {count} finding{'s' if count > 1 else ''} ({judged})"]
        lines.extend(f.render() for f in self.findings)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


def _nothing_to_judge(verdict: Verdict, judged: str) -> str:
    """The report of a verdict with nothing to judge: why, and what to change."""
    lines = [
        f"resilience verdict: nothing to judge ({judged}, no failure in "
        f"{verdict.events} event{'' if verdict.events == 1 else 's'})"
    ]
    if not verdict.events:
        lines.append(
            "  the trace is empty: is it the trace of the code under test? Use the test's "
            "`trace` fixture (every run of the test) or the run's `result.trace`, and judge "
            "it after the code ran"
        )
    else:
        lines.append(
            "  nothing failed: no fault fired, no call raised, no HTTP attempt failed, so no "
            "retry behaviour was exercised"
        )
    lines.append(
        "  fix: inject a fault the code must ride out, e.g. "
        "@pytest.mark.inject_fault(tool='fetch', raises=ConnectionError()) or "
        "@pytest.mark.inject_fault(http=503), and run the code while it is active"
    )
    return "\n".join(lines)


def check_options(where: str, options: Mapping[str, Any]) -> None:
    """Refuse an option `verdict` does not take, naming the options (and the closest)."""
    __tracebackhide__ = True
    for name in options:
        if name not in OPTIONS:
            close = difflib.get_close_matches(name, OPTIONS, n=1)
            hint = f"; did you mean {close[0]}=?" if close else ""
            raise UsageError(
                f"{where}({name}=...): no such option{hint} (the options are {', '.join(OPTIONS)})"
            )


class NotResilientError(AssertionError):
    """Raised by `Trace.assert_resilient`; ``verdict`` holds the findings.

    Also for a trace with nothing to judge (``verdict.judged`` is False).
    """

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.render())
        self.verdict = verdict


# ============================================================================ the rules


# The thresholds' defaults, one object each: `_check_thresholds` knows them by identity.
_MIN_BACKOFF: Final = 0.05
_STORM_RATE: Final = 10
_STORM_WINDOW: Final = 1.0


def verdict(
    trace: Trace | Iterable[Event],
    *,
    ignore: str | Iterable[str] = (),
    max_attempts: int | None = None,
    min_backoff: float = _MIN_BACKOFF,
    storm_rate: int = _STORM_RATE,
    storm_window: float = _STORM_WINDOW,
) -> Verdict:
    """Judge ``trace`` (see the module docs for the rules); ``ignore`` drops codes (a str: one).

    ``max_attempts`` caps the attempts of every request and retried call; None (the
    default) holds each client to its own declared cap (see the module docs).
    """
    __tracebackhide__ = True
    ignored = _ignored(ignore)
    _check_thresholds(max_attempts, min_backoff, storm_rate, storm_window)
    events = list(trace)  # a Trace iterates over its events
    retry_events, failures, tools = _survey(events)
    requests = group(events)
    found = judge_requests(
        requests,
        events,
        max_attempts=max_attempts,
        min_backoff=min_backoff,
        storm_rate=storm_rate,
        storm_window=storm_window,
    )
    findings = [Finding(f.code, f.message, f.advice, f.events) for f in found]
    if retry_events:
        cap = max_attempts if max_attempts is not None else _DEFAULT_CAP
        findings.extend(_judge_retries(retry_events, cap, min_backoff))
    if tools:  # only a tool's events can be reruns of a tool
        findings.extend(_non_idempotent_reruns(events))
    kept = tuple(f for f in findings if f.code not in ignored) if ignored else tuple(findings)
    # by position (findings, requests, attempts, retries, ignored, failures, events): a
    # frozen dataclass's __init__ matches keywords one by one, on every test's verdict
    return Verdict(
        kept,
        len(requests),
        count_attempts(requests),
        len(retry_events),
        ignored,
        failures,
        len(events),
    )


def _survey(events: Sequence[Event]) -> tuple[list[Event], int, bool]:
    """One pass over ``events``: the retry events, the failures, whether any is a tool's.

    The failures are the error and fault events, and the failed HTTP attempts.
    """
    retries: list[Event] = []
    failures = 0
    tools = False
    for e in events:
        kind = e.type
        if kind in _FAILURE_TYPES:
            failures += 1
        elif kind == "http.request":
            if (failed(e) or e.__dict__.get("fault") is not None) and not refused(e):
                failures += 1  # ``fault`` is no declared field: the event holds it, or not
        elif kind in RETRY_TYPES:
            retries.append(e)
        if not tools and e.tool:
            tools = True
    return retries, failures, tools


def _ignored(ignore: object) -> tuple[str, ...]:
    """``ignore=`` as a tuple of codes: one str is one code (not its letters)."""
    __tracebackhide__ = True
    if ignore.__class__ is tuple and not ignore:
        return ()  # the default: nothing ignored
    if isinstance(ignore, str):
        codes: tuple[object, ...] = (ignore,)
    elif isinstance(ignore, Iterable) and not isinstance(ignore, bytes | Mapping):
        codes = tuple(ignore)
    else:
        raise UsageError(
            f"verdict(ignore={ignore!r}): give a code or a tuple of codes, e.g. "
            f"ignore=('gave_up_early',); the codes are {', '.join(CODES)}"
        )
    for code in codes:
        if code not in CODES:
            close = difflib.get_close_matches(code, CODES, n=1) if isinstance(code, str) else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(
                f"verdict(ignore=...): unknown code {code!r}{hint}; the codes are "
                f"{', '.join(CODES)}"
            )
    return codes  # type: ignore[return-value]  # each checked to be one of CODES


def _check_thresholds(
    max_attempts: object, min_backoff: object, storm_rate: object, storm_window: object
) -> None:
    """Refuse a threshold that cannot be one: it would judge every trace, or none."""
    __tracebackhide__ = True
    if (
        max_attempts is None
        and min_backoff is _MIN_BACKOFF
        and storm_rate is _STORM_RATE
        and storm_window is _STORM_WINDOW
    ):
        return  # the defaults (the same objects): each a valid threshold
    if max_attempts is not None and not _whole(max_attempts, 1):
        raise UsageError(
            f"verdict(max_attempts={max_attempts!r}): give a whole number >= 1 (the most "
            "attempts a request or call may make), or None for each client's own cap"
        )
    if not _whole(storm_rate, 1):
        raise UsageError(
            f"verdict(storm_rate={storm_rate!r}): give a whole number >= 1 (retries of one "
            "endpoint within storm_window)"
        )
    if not _seconds(min_backoff) or min_backoff < 0:  # type: ignore[operator]
        raise UsageError(
            f"verdict(min_backoff={min_backoff!r}): give a finite number of seconds >= 0"
        )
    if not _seconds(storm_window) or storm_window <= 0:  # type: ignore[operator]
        raise UsageError(
            f"verdict(storm_window={storm_window!r}): give a finite number of seconds > 0"
        )


def _whole(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _judge_retries(events: list[Event], max_attempts: int, min_backoff: float) -> list[Finding]:
    found = []
    stormy: set[tuple[Any, ...]] = set()
    for event in events:
        subject = event.tool or event.field("model") or event.agent or "a model call"
        delay = event.delay
        marked = event.field("should_retry")  # the server's x-should-retry wins
        if event.field("by") == "model":
            # A framework's model called the tool again after reading the failure: the
            # error was fed back, which is the cure of a non-retryable one, and the
            # model's turn stands in for a wait. Only the attempt cap applies.
            pass
        elif event.error is not None and not event.error.retryable and marked is not True:
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
    advice = ADVICE[code]
    if events and events[0].type == "transport.retry":  # our model client's own retry
        advice = advice_for(code, "agentfaults", "agentfaults")
    return Finding(code=code, message=message, advice=advice, events=events)


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
