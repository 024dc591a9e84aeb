"""How the loopback server answers one request: a fault, a scripted step, or an error.

`Service.serve` takes a request read in full, finds what answers it (the bound plan's next
http fault, the script's next step, or a 4xx for a request the server cannot serve),
records it (`ReceivedRequest`, an ``http.request`` event, the fault fired) and does the
reply on the socket (`_handler.send`). The bytes of each reply come from `_wire`.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from pytest_agentfaults._exc_text import exception_text
from pytest_agentfaults._redact import redact_headers, redact_text
from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelHTTPError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    UsageError,
)
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import RealClock
from pytest_agentfaults.runtime.events import Event
from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse
from pytest_agentfaults.testing._body_digest import body_fields
from pytest_agentfaults.testing._handler import (
    Handler,
    Reply,
    error_record,
    gave_up_record,
    held_record,
    send,
)
from pytest_agentfaults.testing._http_fields import client_fields, response_fields
from pytest_agentfaults.testing._httpd import RECORDED_ORIGIN
from pytest_agentfaults.testing._wire import (
    JSON_TYPE,
    Provider,
    RequestIds,
    Served,
    content_type,
    draw_id,
    error_body,
    id_headers,
    kind_served,
    malformed_body,
    model_name,
    model_request,
    parse_body,
    provider_for,
    render_response,
    retry_after_headers,
    status_served,
    truncated_body,
    wants_stream,
)
from pytest_agentfaults.testing.scripted import (
    ScriptedModel,
    ScriptExhaustedError,
    cut_texts,
    peek_answer,
)

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import FaultPlan, HTTPFault

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["Binding", "ReceivedRequest", "Service", "unbound"]


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request the server received (faulted ones included), credentials redacted."""

    method: str
    path: str
    url: str
    headers: dict[str, str]
    body: bytes
    provider: str | None
    stream: bool
    #: what the server served instead of a scripted answer (``"503"``, ``"timeout"`` ...)
    fault: str | None = None
    #: the size of the body as received; ``body`` keeps its first ``max_stored_body`` bytes
    body_size: int = -1

    def __post_init__(self) -> None:
        if self.body_size < 0:
            object.__setattr__(self, "body_size", len(self.body))

    @property
    def truncated(self) -> bool:
        """Whether ``body`` is only the start of the body received."""
        return self.body_size > len(self.body)

    def json(self) -> Any:
        """The body parsed as JSON."""
        if self.truncated:
            raise UsageError(
                f"the body of {self.method} {self.path} was {self.body_size} bytes and "
                f"llm_server kept the first {len(self.body)}; to parse it, raise "
                "LLMServer(max_stored_body=...)"
            )
        return json.loads(self.body)

    @property
    def retry_count(self) -> int | None:
        """The ``x-stainless-retry-count`` header the official SDKs send, as an int."""
        value = self.headers.get("x-stainless-retry-count")
        return int(value) if value is not None and value.isdigit() else None


@dataclass(slots=True)
class Binding:
    """What one test sees: its script, plan, requests and problems.

    A request holds on to the binding it arrived under, so a late reply (a held timeout)
    lands in its own test, never in the next one.
    """

    model: ScriptedModel
    plan: FaultPlan | None = None
    recorder: Recorder | None = None
    requests: list[ReceivedRequest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: the answers' request ids: the bound plan's (the test's own, shared with its
    #: in-process faults), else the binding's own; so the same on every run
    ids: RequestIds = field(default_factory=RequestIds)
    #: the numbers of the answers' ids (``chatcmpl-agentfaults000001``), per test too
    answers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


def unbound() -> Binding:
    """A binding to no test: an empty script, and events on the server's own trace."""
    # made in an empty context: an unbound server's events stay on its own trace, never in
    # the trace of whichever test happened to be collecting when it was reset
    recorder = contextvars.Context().run(Recorder, agent="llm_server", clock=RealClock())
    return Binding(ScriptedModel([], name="llm_server"), recorder=recorder)


class Settings(Protocol):
    """What `Service` reads of its server at each request (they may change between tests)."""

    @property
    def url(self) -> str: ...

    max_stored_body: int
    timeout_hold: float


class Service:
    """Answers the requests of one `LLMServer` (see the module docs)."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def serve(
        self,
        server: Settings,
        binding: Binding,
        handler: Handler,
        method: str,
        path: str,
        body: bytes,
    ) -> None:
        """Answer one request under ``binding`` (the test it arrived in) and record it."""
        recorded = len(binding.model.requests)
        provider = provider_for(path)
        stream = provider is not None and wants_stream(provider, body, path)
        url = f"{server.url}{path}"
        shown = f"{RECORDED_ORIGIN}{path}"  # no port: the same bytes on every run
        plan = binding.plan
        learned = plan.learned if plan is not None else None
        if learned is not None:  # what the in-process layer never saw (urllib, a subprocess)
            learned.learn_headers(handler.fields)
            learned.learn_url(path)
        hit = plan.next_http_fault(method, url, any_host=True) if plan is not None else None
        if plan is not None and hit is not None:
            fault, occurrence = hit
            if fault.kind == "slow_first_token" and provider is not None and method == "POST":
                # the answer itself, its first chunk held (see `send`)
                held = server.max_stored_body
                reply = self._script_reply(binding, provider, stream, body, path, held)
                reply.first_delay, reply.fault = fault.delay, reply.fault or fault.label
            else:
                reply = self._fault_reply(binding, fault, provider, stream, body, path, method)
            plan.record(fault, f"{method} {shown}", reply.fault or "", occurrence)
            self._emit(
                binding,
                "http.fault",
                method=method,
                url=shown,
                status=fault.status or reply.fault,
                retry_after=fault.retry_after,
                occurrence=occurrence,
                detail=f"{method} {shown}: {fault.describe()}",
            )
        elif provider is None:
            message = f"agentfaults llm_server: no endpoint {method} {path}"
            reply = _answer(404, error_body(None, 404, message))
        elif method != "POST":
            reply = _error(provider, 405, f"use POST for {path}", binding.ids)
        else:
            reply = self._script_reply(binding, provider, stream, body, path)
        received = ReceivedRequest(
            method=method,
            path=path,
            url=redact_text(url),
            headers=redact_headers(handler.fields),
            body=body[: server.max_stored_body],
            provider=provider,
            stream=stream,
            fault=reply.fault,
            body_size=len(body),
        )
        with self._lock:
            binding.requests.append(received)
            if len(body) > server.max_stored_body:  # the script's copy is bounded too
                cut_texts(binding.model.requests[recorded:], server.max_stored_body)
        event = self._record(binding, received, reply, body)
        if event is not None and reply.first_delay is not None:  # recorded as given up on
            reply.on_sent = functools.partial(self._answered, event, reply.on_sent)
        # the event is recorded before the reply goes out: the client may look at once
        sent = send(handler, reply, server.timeout_hold)
        if sent == "gone" and event is not None:  # it gave up as the first chunk went out
            with self._lock:
                event.error = gave_up_record(reply)
        if sent == "held":
            if event is not None:  # what happened instead, before the connection closes
                with self._lock:
                    event.error = held_record(reply, server.timeout_hold)
            binding.problems.append(
                f"a {reply.fault or 'timeout'!r} on {method} {path} held the response "
                f"{server.timeout_hold:g}s "
                "and the client never gave up; give the client a timeout below that "
                "(e.g. timeout=0.05), or raise LLMServer(timeout_hold=...)"
            )

    def _record(
        self, binding: Binding, received: ReceivedRequest, reply: Reply, body: bytes
    ) -> Event | None:
        method, url = received.method, f"{RECORDED_ORIGIN}{received.path}"
        fields: dict[str, Any] = {"method": method, "url": url}
        if reply.kind in ("answer", "cut", "stall"):
            fields["status"] = reply.status
        if reply.kind != "answer":
            fields["error"] = error_record(reply)
        elif reply.first_delay is not None:
            # a held first chunk counts as given up on until it goes out (`_answered`): a
            # client that gave up may look at once; one that waits reads it after the change
            fields["error"] = gave_up_record(reply)
        if received.retry_count is not None:
            fields["retry_count"] = received.retry_count
        fields.update(client_fields(received.headers, received.path))
        if reply.kind == "answer":
            fields.update(response_fields(reply.status, reply.headers))
        if reply.retry_after is not None:
            fields.setdefault("retry_after", reply.retry_after)
        if reply.fault is not None:
            fields["fault"] = reply.fault
        fields.update(body_fields(body, reply.fault))
        fields["detail"] = f"{method} {url}" + (
            f" (retry {received.retry_count})" if received.retry_count else ""
        )
        return self._emit(binding, "http.request", **fields)

    def _emit(self, binding: Binding, type: str, **fields: Any) -> Event | None:
        if binding.recorder is None:
            return None
        with self._lock:  # the recorder redacts what it records
            return binding.recorder.emit(type, **fields)

    def _script_reply(
        self,
        binding: Binding,
        provider: Provider,
        stream: bool,
        body: bytes,
        path: str,
        held: int | None = None,
    ) -> Reply:
        """The script's next answer; ``held``: the body bytes kept, for a held first chunk.

        A held answer's step is peeked, taken only when the answer goes out (`Reply.on_sent`):
        a client that gave up first never saw it, so, as after a stall, it stays for the retry.
        """
        data, problem = parse_body(body)
        if problem:
            return _error(provider, 400, problem, binding.ids)
        model = model_name(b"", path) if provider == "gemini" else _model_of(data)
        request = model_request(provider, data, stream=stream)
        with self._lock:
            peeked = None if held is None else peek_answer(binding.model, request)
            try:
                response = binding.model.request(request) if peeked is None else peeked
            except ScriptExhaustedError as exc:
                binding.problems.append(str(exc))
                return _error(provider, 400, f"agentfaults: {exc}", binding.ids)
            except Exception as exc:  # a failure step: serve it over the wire
                return _failure_reply(exc, provider, stream, model, binding.ids)
        events = _events(binding, provider, response, data, model, stream=stream)
        headers = [("content-type", content_type(provider, stream))]
        headers += id_headers(provider, draw_id(provider, binding.ids))
        reply = Reply("answer", 200, headers, events, stream=stream)
        if peeked is not None and held is not None:
            cap = held if len(body) > held else None
            reply.on_sent = functools.partial(self._take, binding, request, cap)
        return reply

    def _answered(self, event: Event, then: Callable[[], None] | None) -> None:
        """A held first chunk goes out: the client waited for it after all."""
        with self._lock:
            event.error = None
        if then is not None:
            then()

    def _take(self, binding: Binding, request: ModelRequest, cap: int | None) -> None:
        """Take the step a held answer peeked, now that it goes out (``cap``: cut texts)."""
        with self._lock:
            recorded = len(binding.model.requests)
            try:
                binding.model.request(request)
            except Exception as exc:  # another request took the step meanwhile
                binding.problems.append(str(exc))
            if cap is not None:  # the script's copy is bounded, as in `serve`
                cut_texts(binding.model.requests[recorded:], cap)

    def _peek_events(
        self, binding: Binding, provider: Provider, body: bytes, path: str
    ) -> list[bytes] | None:
        """The events of the script's next answer to this streamed request, its step kept."""
        data, problem = parse_body(body)
        if problem:
            return None
        model = model_name(b"", path) if provider == "gemini" else _model_of(data)
        with self._lock:
            response = peek_answer(binding.model, model_request(provider, data, stream=True))
        if response is None:
            return None
        return _events(binding, provider, response, data, model, stream=True)

    def _fault_reply(
        self,
        binding: Binding,
        fault: HTTPFault,
        provider: Provider | None,
        stream: bool,
        body: bytes,
        path: str,
        method: str,
    ) -> Reply:
        fault.check()
        options = fault.options
        ids = binding.ids  # handed in: this thread has no test context to find them in
        if fault.status is not None:
            served = status_served(provider, fault.status, **options, ids=ids)
            return _served_reply(served, str(fault.status))
        kind = str(fault.kind)
        if kind == "slow_first_token":  # a request no script answers: its error, held
            message = f"agentfaults llm_server: no endpoint {path}"
            reply = _error(provider, 404, message, ids)
            reply.first_delay, reply.fault = fault.delay, kind
            return reply
        if kind not in _SERVED_KINDS:
            return _kind_reply(kind, provider, stream, model_name(body, path))
        model = model_name(body, path)
        answer = None  # a cut or stalled stream: the start of the script's next answer
        if stream and provider is not None and method == "POST" and kind in _CUT_KINDS:
            answer = self._peek_events(binding, provider, body, path)
        served = kind_served(
            kind, provider, stream=stream, model=model, **options, ids=ids, answer=answer
        )
        return _served_reply(served, kind)


#: the kinds whose answer `kind_served` describes (the older ones are `_kind_reply`'s)
_SERVED_KINDS: Final = frozenset(
    {"not_json", "proxy_html", "stall", "context_length", "quota", "truncated_stream"}
)


_CUT_KINDS: Final = frozenset({"stall", "truncated_stream"})


def _model_of(data: Any) -> str:
    return str(data.get("model") or "agentfaults") if isinstance(data, dict) else "x"


def _events(
    binding: Binding,
    provider: Provider,
    response: ModelResponse,
    data: Any,
    model: str,
    *,
    stream: bool,
) -> list[bytes]:
    """``response`` as the provider sends it to this request, with the binding's next id."""
    include_usage = False
    if isinstance(data, dict) and isinstance(data.get("stream_options"), dict):
        include_usage = bool(data["stream_options"].get("include_usage"))
    return render_response(
        provider,
        response,
        model=model,
        stream=stream,
        response_id=f"agentfaults{next(binding.answers):06d}",
        include_usage=include_usage,
        request=data,
    )


def _served_reply(served: Served, fault: str) -> Reply:
    kind: Literal["answer", "cut", "stall"] = "answer" if served.then == "end" else served.then
    return Reply(
        kind,
        served.status,
        served.headers,
        served.chunks,
        stream=served.stream,
        retry_after=served.retry_after,
        fault=fault,
    )


def _answer(status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply("answer", status, headers or [("content-type", JSON_TYPE)], [body])


def _error(
    provider: Provider | None,
    status: int,
    message: str,
    ids: RequestIds,
    extra: list[tuple[str, str]] | None = None,
) -> Reply:
    """The provider's error answer: its body, its request id (Anthropic's in the body too)."""
    request_id = draw_id(provider, ids)
    body = error_body(provider, status, message, request_id=request_id)
    headers = [("content-type", JSON_TYPE), *id_headers(provider, request_id), *(extra or [])]
    return _answer(status, body, headers)


def _kind_reply(
    kind: str, provider: Provider | None, stream: bool, model: str, text: str | None = None
) -> Reply:
    if kind == "timeout":
        return Reply("hold", fault=kind)
    if kind == "connect_error":
        return Reply("drop", fault=kind)
    if kind == "reset":
        return Reply("reset", fault=kind)
    if kind == "malformed_body":
        content_type, data = malformed_body(provider, stream=stream, text=text)
        return Reply("answer", 200, [("content-type", content_type)], [data], stream, fault=kind)
    # read_error: half a body, then the connection drops; truncated_stream: a cut stream
    cut_stream = stream if kind == "truncated_stream" else False
    content_type, data = truncated_body(provider, stream=cut_stream, model=model)
    return Reply("cut", 200, [("content-type", content_type)], [data], cut_stream, fault=kind)


def _failure_reply(
    exc: Exception, provider: Provider, stream: bool, model: str, ids: RequestIds
) -> Reply:
    """A failure step's error, as the wire shows it."""
    if isinstance(exc, ModelHTTPError):
        retry_after = getattr(exc, "retry_after", None)
        extra = retry_after_headers(retry_after)
        reply = _error(provider, exc.status, exc.body or "", ids, extra)
        reply.retry_after = retry_after
        reply.fault = str(exc.status)
        return reply
    if isinstance(exc, ModelTimeoutError | TimeoutError):
        return _kind_reply("timeout", provider, stream, model)
    if isinstance(exc, ModelTransportError | ConnectionError):
        return _kind_reply("connect_error", provider, stream, model)
    if isinstance(exc, ModelStreamError):
        return _kind_reply("truncated_stream", provider, True, model)
    if isinstance(exc, MalformedResponseError):
        return _kind_reply("malformed_body", provider, stream, model, text=exc.body or None)
    message = f"agentfaults: scripted failure {type(exc).__name__}: {exception_text(exc)}"
    reply = _error(provider, 500, redact_text(message), ids)
    reply.fault = "500"
    return reply
