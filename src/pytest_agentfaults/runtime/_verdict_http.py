"""The verdict's HTTP rules, each request judged by the rules of the client that sent it.

See `pytest_agentfaults.runtime.verdict` for the rules, `_verdict_rules` for the clients'.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pytest_agentfaults.runtime._verdict_codes import advice_for
from pytest_agentfaults.runtime._verdict_rules import ClientRules, client_rules, describe_client

if TYPE_CHECKING:
    from pytest_agentfaults.runtime.events import Event

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Found", "Request", "count_attempts", "group", "judge_requests", "refused"]

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
_MALFORMED: Final = frozenset({"malformed_body", "not_json"})  # a 2xx body not the API's
_TOLERANCE: Final = 1e-3
_DATE_TOLERANCE: Final = 1.0  # an HTTP date has one-second resolution


class Found(NamedTuple):
    """A finding before it becomes a `Finding`: code, message, advice, events."""

    code: str
    message: str
    advice: str
    events: tuple[Event, ...]


@dataclass(slots=True)
class Request:
    """The attempts of one HTTP request, in order."""

    attempts: list[Event]
    #: the rules of its client, looked up once (`rules`)
    _rules: ClientRules | None = field(default=None, repr=False, compare=False)

    @property
    def first(self) -> Event:
        return self.attempts[0]

    @property
    def client(self) -> object:
        return self.first.__dict__.get("client")  # no declared field: given, or None

    @property
    def rules(self) -> ClientRules:
        rules = self._rules
        if rules is None:
            rules = self._rules = client_rules(self.client)
        return rules

    def where(self) -> str:
        event = self.first
        return f"{event.field('method')} {event.field('url')}"

    def found(
        self, code: str, message: str, *events: Event, stream: bool = False, topic: str = ""
    ) -> Found:
        """The finding, its advice fitted to the client (``topic``: advice of that key)."""
        rules = self.rules
        advice = advice_for(code, rules.kind, self.client, stream=stream, topic=topic)
        by = f" by {describe_client(self.client)}" if self.client is not None else ""
        return Found(code, f"{self.where()}{by}: {message}", advice, events)


# ``event.__dict__.get(name)`` below reads a field no event declares (``method``,
# ``retry_after`` ...) as ``event.field(name)`` does: the event holds it, or it is None.


_ATTEMPTS: Final = operator.attrgetter("attempts")


def count_attempts(requests: list[Request]) -> int:
    """The attempts of all ``requests`` (counted in C: no generator per verdict)."""
    return sum(map(len, map(_ATTEMPTS, requests)))


def _key(event: Event) -> tuple[Any, ...]:
    given = event.__dict__
    return (event.run_id, given.get("method"), given.get("url"), given.get("body_sha"))


def group(events: Sequence[Event]) -> list[Request]:
    """The HTTP attempts of ``events`` grouped into requests.

    Attempts of one run with the same method, URL and body are one request, until a
    success or a new model call of the run (the run's own retry, judged by its
    ``llm.retry`` events) starts another. An SDK's fresh call (``x-stainless-retry-count:
    0``) after a failure stays in the request: it is the retry loop of the code around the
    SDK, judged as any retry is, while the attempt cap applies to each of the SDK's own
    chains of attempts (`_chains`).
    """
    open_requests: dict[tuple[Any, ...], Request] = {}
    requests: list[Request] = []
    for event in events:
        if event.type == "llm.request":
            for key in [k for k in open_requests if k[0] == event.run_id]:
                del open_requests[key]
            continue
        if event.type != "http.request" or refused(event):
            continue
        key = _key(event)
        current = open_requests.get(key)
        if current is None or _succeeded(current.attempts[-1]):
            current = Request([event])
            open_requests[key] = current
            requests.append(current)
        else:
            current.attempts.append(event)
    return requests


def _chains(attempts: list[Event]) -> list[list[Event]]:
    """``attempts`` cut where an SDK starts a fresh call (``retry_count`` 0): its own chains.

    A client that does not number its attempts makes one chain of them all.
    """
    runs: list[list[Event]] = [[attempts[0]]]
    for event in attempts[1:]:
        if event.retry_count == 0:
            runs.append([event])
        else:
            runs[-1].append(event)
    return runs


def refused(event: Event) -> bool:
    """Whether the test's network guard answered this attempt: never sent, not judged.

    The refusal (a 403 an SDK does not retry, or an error) is the kit's answer to a
    request nothing of the test answered, a setup mistake that fails the test on its own;
    judged, it would read as a server's non-retryable failure.
    """
    return event.__dict__.get("refused") is True


def _status(event: Event) -> int | None:
    status = event.status
    return status if isinstance(status, int) else None


def failed(event: Event) -> bool:
    if event.error is not None:
        return True
    status = event.status  # `_status`, inline: every rule asks this of every attempt
    return isinstance(status, int) and status >= 400


def _succeeded(event: Event) -> bool:
    return not failed(event)


def _asked_wait(event: Event) -> float | None:
    """The wait the server asked for, when above 0 (0 is no instruction, as for the SDKs)."""
    value = event.__dict__.get("retry_after")
    if value is None:
        return None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _marked(event: Event) -> bool | None:
    flag = event.__dict__.get("should_retry")
    return flag if isinstance(flag, bool) else None


def _cut(event: Event) -> bool:
    return bool(event.__dict__.get("fault") == _TRUNCATED)


def would_retry(event: Event, rules: ClientRules) -> bool:
    """Whether ``rules``' client retries this failed attempt (its own policy)."""
    status = _status(event)
    if status is not None and status >= 400:
        wait = _asked_wait(event)
        if wait is not None and rules.retry_after_cap is not None and wait > rules.retry_after_cap:
            return False
        marked = _marked(event)
        if marked is not None:
            return marked
        return rules.retries_status(status)
    error = event.error
    if error is None:
        return False
    if not (error.retryable or error.type in _TRANSIENT_ERRORS):
        return False
    return rules.retries_error(error.type)


def _outcome(event: Event) -> str:
    status = _status(event)
    if event.error is not None and (status is None or status < 400):
        fault = event.field("fault")
        return f"{event.error.type} ({fault})" if fault else event.error.type
    return f"HTTP {status}"


def _declared_caps(events: Sequence[Event]) -> dict[str, int]:
    """Per run, the attempt cap our runtime's transport retry declared on its events."""
    caps: dict[str, int] = {}
    for event in events:
        if event.type == "transport.retry" and isinstance(event.max_attempts, int):
            caps[event.run_id] = max(caps.get(event.run_id, 0), event.max_attempts)
    return caps


def judge_requests(
    requests: list[Request],
    events: Sequence[Event],
    *,
    max_attempts: int | None,
    min_backoff: float,
    storm_rate: int,
    storm_window: float,
) -> list[Found]:
    """Every HTTP finding, request by request, then the storms and the give-ups."""
    caps: dict[str, int] | None = None  # looked up for our runtime's requests only
    found: list[Found] = []
    for request in requests:
        cap = max_attempts
        if cap is None:
            rules = request.rules
            cap = rules.max_attempts
            if rules.kind == "agentfaults":
                if caps is None:
                    caps = _declared_caps(events)
                cap = caps.get(request.first.run_id, cap)
        if len(request.attempts) > 1 or (cap is not None and cap < 1):
            found.extend(_judge_request(request, cap, min_backoff))
    found.extend(_storms(requests, storm_rate, storm_window))
    found.extend(_gave_up(requests, events))
    found.extend(_malformed(requests, events))
    return found


def _judge_request(request: Request, cap: int | None, min_backoff: float) -> list[Found]:
    """The pair rules over one request's attempts: one finding per code, naming every pair."""
    pairs: dict[str, list[tuple[Event, Event, str]]] = {}
    for before, after in itertools.pairwise(request.attempts):
        gap = after.at - before.at
        status = _status(before)
        wait = _asked_wait(before)
        tolerance = _DATE_TOLERANCE if before.__dict__.get("retry_after_date") else _TOLERANCE
        obeyed = wait is not None and gap + tolerance >= wait
        marked = _marked(before)
        if marked is False and failed(before):
            why = f"got {_outcome(before)} marked x-should-retry: false and was sent again"
            pairs.setdefault("retried_non_retryable", []).append((before, after, why))
        elif status in NON_RETRYABLE_STATUSES and marked is not True:
            why = f"got HTTP {status} and was sent again {gap:.3f}s later"
            pairs.setdefault("retried_non_retryable", []).append((before, after, why))
        elif wait is not None and not obeyed:
            why = f"the server asked to wait {wait:g}s and the retry came {gap:.3f}s later"
            pairs.setdefault("retry_after_ignored", []).append((before, after, why))
        elif failed(before) and gap < min_backoff and not obeyed and not _cut(before):
            # (a cut stream asked again at once is no finding: no server asked for a wait,
            # and no SDK re-issues a started stream, so the re-request is the app's recovery)
            why = f"retried {gap:.3f}s after {_outcome(before)} (less than {min_backoff:g}s)"
            pairs.setdefault("no_backoff", []).append((before, after, why))
    found = []
    for code, items in pairs.items():
        events = [items[0][0]] + [after for _, after, _ in items]
        times = "" if len(items) == 1 else f" ({len(items)} times)"
        found.append(request.found(code, f"{items[0][2]}{times}", *events))
    if cap is not None and len(request.attempts) > cap:
        # the cap is the client's own: each of its chains, not the loop around them
        for attempts in _chains(request.attempts):
            if len(attempts) > cap:
                message = f"attempted {len(attempts)} times (more than {cap})"
                found.append(request.found("retry_storm", message, *attempts))
                break
    return found


def _storms(requests: list[Request], rate: int, window: float) -> list[Found]:
    if count_attempts(requests) - len(requests) <= rate:
        return []  # not that many retries in all: no endpoint can have had more
    by_endpoint: dict[tuple[Any, ...], list[Event]] = {}
    first: dict[tuple[Any, ...], Request] = {}
    for request in requests:
        key = (request.first.field("method"), request.first.field("url"))
        by_endpoint.setdefault(key, []).extend(request.attempts[1:])
        first.setdefault(key, request)
    found = []
    for key, retries in by_endpoint.items():
        retries.sort(key=lambda e: e.at)
        start = 0
        for end, event in enumerate(retries):
            while event.at - retries[start].at > window:
                start += 1
            if end - start + 1 > rate:
                message = f"retried {end - start + 1} times within {window:g}s (more than {rate})"
                found.append(first[key].found("retry_storm", message, *retries[start : end + 1]))
                break
    return found


def run_ends(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if e.type == "run.end"]


def _recovered_after(event: Event, ends: list[Event]) -> bool:
    own = [e for e in ends if e.run_id == event.run_id]
    if own:
        return any(e.status == "ok" for e in own)
    return any(e.status == "ok" and e.seq > event.seq for e in ends)


def _requested_again(event: Event, events: Sequence[Event], *, before: bool = False) -> bool:
    """Whether the same method, URL and body was requested after ``event`` (or before it).

    A cut stream's request is also asked again by the same body without its ``stream``
    members (``unstreamed_body_sha``): the same answer, asked for as one JSON body.
    """
    key = _key(event)[1:]
    unstreamed = event.__dict__.get("unstreamed_body_sha")
    also = (*key[:2], unstreamed) if unstreamed is not None else key
    return any(
        e.type == "http.request"
        and not refused(e)
        and (e.seq < event.seq if before else e.seq > event.seq)
        and _key(e)[1:] in (key, also)
        for e in events
    )


def _gave_up(requests: list[Request], events: Sequence[Event]) -> list[Found]:
    ends: list[Event] | None = None  # looked up once one is needed
    found = []
    for request in requests:
        last = request.attempts[-1]
        if _cut(last):
            if ends is None:
                ends = run_ends(events)
            found.extend(_cut_stream(request, events, ends))
            continue
        if len(request.attempts) != 1:
            continue
        only = request.first
        if not (failed(only) and would_retry(only, request.rules)):
            continue
        if ends is None:
            ends = run_ends(events)
        if _recovered_after(only, ends):
            continue
        message = f"failed once ({_outcome(only)}) and was never retried"
        found.append(request.found("gave_up_early", message, only))
    return found


def _cut_stream(request: Request, events: Sequence[Event], ends: list[Event]) -> list[Found]:
    """A stream cut mid-way: fine when requested again, else a finding.

    A partial answer was used (its run ended ok), or the answer was given up on.
    """
    last = request.attempts[-1]
    if _requested_again(last, events):
        return []
    own = [e for e in ends if e.run_id == last.run_id]
    later = [e for e in own or ends if e.seq > last.seq]
    accepted = [e for e in later if e.status == "ok"]
    if accepted:
        message = "the stream was cut mid-way, never requested again, and the run still ended ok"
        return [request.found("truncated_stream_accepted", message, last, accepted[0])]
    if len(request.attempts) > 1 or _requested_again(request.first, events, before=True):
        return []  # itself a retry: giving up after retrying is the caller's policy
    if request.rules.run_decides and own:
        return []  # our runtime leaves it to on_llm_error, and the run ended in error
    message = "the stream was cut mid-way and never requested again"
    return [request.found("gave_up_early", message, last, stream=True)]


#: what a framework that sent a request through the openai SDK does with a 2xx body the
#: SDK hands over as text (``via``, see `_http_fields`): it raises, it does not use it
_RAISED_BY: Final = {
    "pydantic_ai": "pydantic-ai raised UnexpectedModelBehavior on it",
    "openai_agents": "the OpenAI Agents SDK's model raised AttributeError on it",
    "langchain": "langchain-openai's ChatOpenAI raised ValueError on it",
}


def _malformed(requests: list[Request], events: Sequence[Event]) -> list[Found]:
    """A 2xx answer that is not the provider's JSON, never requested again, and used.

    Used: its run ended ok, or no run judged it (an SDK returns such a body as text).
    """
    ends: list[Event] | None = None  # looked up once one is needed
    found = []
    for request in requests:
        last = request.attempts[-1]
        if last.__dict__.get("fault") not in _MALFORMED or failed(last):
            continue
        if _requested_again(last, events):
            continue
        if ends is None:
            ends = run_ends(events)
        own = [e for e in ends if e.run_id == last.run_id]
        if own and not any(e.status == "ok" for e in own):
            continue  # the run failed on it: not accepted
        fault = last.field("fault")
        rules, streamed = request.rules, last.__dict__.get("streamed") is True
        raises_on = rules.raises_on_stream if streamed else None
        via = None if streamed or own else _RAISED_BY.get(str(last.__dict__.get("via")))
        if via is not None and fault not in rules.raises_on:
            # the SDK handed the page over as text; the framework that asked raised on it
            message = (
                f"answered {_status(last)} with a body that is not the provider's JSON "
                f"({fault}); the SDK handed it over as text, {via}, and the request was "
                "never made again"
            )
            topic = f"via_{last.__dict__.get('via')}"
            found.append(request.found("gave_up_early", message, last, topic=topic))
            continue
        if not own and fault in (rules.raises_on if raises_on is None else raises_on):
            # the SDK raises on an answer it cannot parse: nothing was used, it was given up
            what = (
                "content-type JSON and a body that is not JSON"
                if fault == "not_json"
                else "a body that is not the provider's JSON"
            )
            message = (
                f"answered {_status(last)} with {what} ({fault}); the SDK raised "
                "json.JSONDecodeError on it, and the request was never made again"
            )
            found.append(request.found("gave_up_early", message, last, topic="not_json"))
            continue
        message = (
            f"answered {_status(last)} with a body that is not the provider's JSON "
            f"({last.field('fault')}), never requested again, and used"
            + (" (the SDK handed it back as a stream, without an error)" if streamed else "")
        )
        found.append(request.found("malformed_body_accepted", message, last))
    return found
