"""``http_faults.script(provider, steps)``: scripted steps as a provider's answers, in-process.

```python
http_faults.script("openai", [call_tool("get_weather", city="Paris"), say("Sunny.")])
client.chat.completions.create(...)   # the tool call, then "Sunny.", as OpenAI sends them
```

The route answers each request to the provider's endpoint with the next step, rendered by
`_wire` exactly as the loopback `LLMServer` renders it: a JSON body, or the SSE / NDJSON
stream when the request asks for one. So no test hand-writes a provider's JSON. Failure
steps that are HTTP answers (`fail.http`, `fail.rate_limit`) become that status with the
provider's error body and ``Retry-After``; `malformed.not_json` a 200 that is not JSON.
Transport failures (a timeout, a dropped connection, a cut stream) belong to the http
faults, which fire before the route: ``faults.http(url=...).timeout()``. A stream such a
fault cuts or stalls carries the start of the route's next answer (`scripted_stream`,
`ScriptAnswer.peek`); the step stays for the request asked again.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import httpx

from pytest_agentfaults._network_policy import url_host
from pytest_agentfaults.errors import MalformedResponseError, ModelHTTPError, UsageError
from pytest_agentfaults.testing import _current
from pytest_agentfaults.testing._wire import (
    RequestIds,
    content_type,
    draw_id,
    error_body,
    id_headers,
    malformed_body,
    model_name,
    model_request,
    parse_body,
    render_response,
    request_ids,
    retry_headers,
    wants_stream,
)
from pytest_agentfaults.testing.scripted import ScriptedModel, ScriptExhaustedError, peek_answer

if TYPE_CHECKING:
    import respx

    from pytest_agentfaults.runtime.models.base import ModelResponse
    from pytest_agentfaults.testing._wire import Provider
    from pytest_agentfaults.testing.steps import Step

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["SCRIPT_PROVIDERS", "ScriptAnswer", "script_route", "scripted_stream"]

#: the provider -> the official endpoint its route answers by default
SCRIPT_PROVIDERS: Final[dict[str, str]] = {
    "openai": "https://api.openai.com/v1/chat/completions",
    "openai-responses": "https://api.openai.com/v1/responses",
    "anthropic": "https://api.anthropic.com/v1/messages",
    "ollama": "http://localhost:11434/api/chat",
    "gemini": "https://generativelanguage.googleapis.com/",
}
_GEMINI: Final = r"/models/[^/:]+:(stream)?[gG]enerateContent$"
#: the provider -> the path its SDK appends to the base URL it is given
_ENDPOINT_PATHS: Final[dict[str, str]] = {
    "openai": "/chat/completions",
    "openai-responses": "/responses",
    "anthropic": "/v1/messages",
    "ollama": "/api/chat",
}
#: the attribute of a script route's side effect that holds its `ScriptAnswer`
_ANSWER: Final = "agentfaults_script"


def script_route(
    router: respx.Router,
    provider: str,
    steps: Sequence[Step | str],
    *,
    url: str | None = None,
    strict: bool = True,
) -> ScriptedModel:
    """Register the route of ``http_faults.script`` (see the module docs)."""
    __tracebackhide__ = True
    shown = f"http_faults.script({provider!r}, ...)"
    if provider not in SCRIPT_PROVIDERS:
        close = difflib.get_close_matches(str(provider), SCRIPT_PROVIDERS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(
            f"{shown}: unknown provider; use one of {', '.join(map(repr, SCRIPT_PROVIDERS))}{hint}"
        )
    if isinstance(steps, str) or not isinstance(steps, Sequence):
        raise UsageError(f"{shown}: steps must be a list of steps, such as [say('done')]")
    if url is not None and not isinstance(url, str):
        raise UsageError(f"{shown}: url= must be the endpoint's URL (a str), got {url!r}")
    endpoint = None if url is None else _endpoint(provider, url, shown)
    # built unchecked, then marked: the route checks its own script (see `check`)
    model = ScriptedModel(list(steps), name=shown, strict=False)
    if not isinstance(strict, bool):
        raise UsageError(f"{shown}: strict= must be True or False, got {strict!r}")
    model.strict = strict
    wire: Provider = provider  # type: ignore[assignment]  # checked above
    plan = _current.current_plan()
    if plan is not None:  # what it served counts for the fault coverage of its host
        plan.scripts.append((url_host(url or SCRIPT_PROVIDERS[provider]) or provider, model))
    # the request ids of this test (shared with its in-process faults), looked up once
    answer = ScriptAnswer(wire, model, request_ids(plan))
    exhausted = answer.exhausted

    def check() -> None:  # at teardown, like llm_server: the 400 may have been swallowed
        __tracebackhide__ = True
        if exhausted:
            raise AssertionError(f"{shown}: {exhausted[0]}")
        left = model.leftover() if model.strict else None
        if left is not None:
            raise AssertionError(
                f"{shown}: the script has {left}. Remove the steps the test does not need, "
                f"or pass http_faults.script({provider!r}, ..., strict=False) to allow them."
            )

    _current.add_check(check)

    if provider == "gemini" and (endpoint is None or endpoint.endswith("/")):
        base = endpoint or SCRIPT_PROVIDERS["gemini"]
        route = router.post(url__startswith=base, path__regex=_GEMINI)
    else:
        route = router.post(endpoint or SCRIPT_PROVIDERS[provider])

    def respond(request: httpx.Request) -> httpx.Response:
        # a function, not the ScriptAnswer itself: respx reads a side effect's signature
        # on every call, and a function's is the quickest to read
        __tracebackhide__ = True
        return answer.respond(request)

    vars(respond)[_ANSWER] = answer  # for `scripted_stream`
    route.side_effect = respond
    return model


def _endpoint(provider: str, url: str, shown: str) -> str:
    """The URL a script route answers, from its ``url=``: an endpoint, or a base URL.

    A base URL is the one the SDK client is built with (OpenAI's ends in ``/v1``,
    Anthropic's and Ollama's are the host root); the endpoint's path is added to it, as
    the SDK adds it. Gemini's endpoints name the model, so its base URL stays a prefix
    (returned ending in ``/``).
    """
    __tracebackhide__ = True
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(
            f"{shown}: url={url!r} is not an http(s) URL with a host: give the base URL "
            "the client is built with, such as 'https://proxy.example.com/v1', or the "
            "endpoint's full URL"
        )
    path = parsed.path.rstrip("/")
    if provider == "gemini":
        if re.search(_GEMINI, path):
            return url
        return str(parsed.copy_with(path=path + "/", query=None, fragment=None))
    tail = _ENDPOINT_PATHS[provider]
    if path.endswith(tail):
        return url
    return str(parsed.copy_with(path=path + tail, query=None, fragment=None))


class ScriptAnswer:
    """What a script route answers: each request gets the script's next step.

    `peek` renders that step without taking it, for a stream a fault cuts.
    """

    __slots__ = ("exhausted", "ids", "model", "provider", "response_ids")

    def __init__(self, provider: Provider, model: ScriptedModel, ids: RequestIds) -> None:
        self.provider = provider
        self.model = model
        self.ids = ids
        self.response_ids = itertools.count(1)
        #: the requests that found no step (each fails the test at teardown)
        self.exhausted: list[str] = []

    def respond(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` with the script's next step (taken)."""
        __tracebackhide__ = True
        response_id = f"agentfaults{next(self.response_ids):06d}"
        return _answer(self, request, response_id)

    def peek(self, body: bytes, path: str) -> list[bytes] | None:
        """The stream events of the next step's answer to a streamed request, not taken."""
        provider = self.provider
        data, problem = parse_body(body)
        if problem:
            return None
        response = peek_answer(self.model, model_request(provider, data, stream=True))
        if response is None:
            return None
        response_id = f"agentfaults{next(self.response_ids):06d}"
        return _render(provider, response, data, body, path, response_id, stream=True)


def scripted_stream(routes: respx.Router, method: str, url: str, body: bytes) -> list[bytes] | None:
    """The events a script route of ``routes`` would stream for this request, its step kept.

    The route that answers is the first whose pattern matches, as respx picks it; None
    when that is no script route (or no route matches, or its script has no answer).
    """
    request = httpx.Request(method, url, content=body)
    for route in routes.routes:
        pattern = route.pattern
        if not pattern or pattern.match(request):  # no pattern matches all, as in respx
            answer = getattr(route.side_effect, _ANSWER, None)
            return answer.peek(body, request.url.path) if isinstance(answer, ScriptAnswer) else None
    return None


def _answer(answer: ScriptAnswer, request: httpx.Request, response_id: str) -> httpx.Response:
    __tracebackhide__ = True
    provider, model, ids = answer.provider, answer.model, answer.ids
    body, path = request.content, request.url.path
    stream = wants_stream(provider, body, path)
    data, problem = parse_body(body)
    if problem:
        return _error(provider, 400, problem, ids)
    try:
        response = model.request(model_request(provider, data, stream=stream))
    except ScriptExhaustedError as exc:  # answered, never retried; fails the test at teardown
        answer.exhausted.append(str(exc))
        return _error(provider, 400, f"agentfaults: {exc}", ids)
    except ModelHTTPError as exc:
        retry_after = getattr(exc, "retry_after", None)
        return _error(provider, exc.status, exc.body or "", ids, retry_headers(retry_after))
    except MalformedResponseError as exc:  # what a proxy might send: no request id
        kind, text = malformed_body(provider, stream=stream, text=exc.body or None)
        return httpx.Response(200, headers={"content-type": kind}, content=text)
    except Exception as exc:
        raise UsageError(
            f"{model.name}: the step raised {type(exc).__name__}, which a route cannot "
            "answer; inject transport failures with an http fault instead "
            "(faults.http(url=...).timeout(), .connect_error(), .truncated_stream())"
        ) from exc
    events = _render(provider, response, data, body, path, response_id, stream=stream)
    headers = [("content-type", content_type(provider, stream))]
    headers += id_headers(provider, draw_id(provider, ids))
    return httpx.Response(200, headers=headers, content=b"".join(events))


def _render(
    provider: Provider,
    response: ModelResponse,
    data: Any,
    body: bytes,
    path: str,
    response_id: str,
    *,
    stream: bool,
) -> list[bytes]:
    """``response`` as the provider sends it to this request (its model, its usage option)."""
    name = model_name(body, path) if provider == "gemini" else None
    if name is None:
        name = str(data.get("model") or "agentfaults") if isinstance(data, dict) else "x"
    include_usage = isinstance(data, dict) and bool(
        (data.get("stream_options") or {}).get("include_usage")
    )
    return render_response(
        provider,
        response,
        model=name,
        stream=stream,
        response_id=response_id,
        include_usage=include_usage,
        request=data,
    )


def _error(
    provider: Provider,
    status: int,
    message: str,
    ids: RequestIds,
    extra: list[tuple[str, str]] | None = None,
) -> httpx.Response:
    """The provider's error answer: its body, its request id (Anthropic's in the body too)."""
    request_id = draw_id(provider, ids)
    body = error_body(provider, status, message, request_id=request_id)
    headers = [("content-type", "application/json"), *id_headers(provider, request_id)]
    return httpx.Response(status, headers=[*headers, *(extra or [])], content=body)
