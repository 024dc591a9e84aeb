"""`LLMServer`: a real HTTP server on 127.0.0.1 that speaks the LLM providers' wire formats.

```python
with LLMServer() as server:
    server.script([call_tool("fetch", url="https://x.test"), say("done")])
    client = openai.OpenAI(base_url=server.base_url("openai"), api_key="x")
    client.chat.completions.create(model="gpt-4o-mini", messages=[...])
    assert len(server.requests) == 1
```

It answers ``POST /v1/chat/completions`` (OpenAI, SSE when ``"stream": true``), ``POST
/v1/responses`` (the OpenAI Responses API, its typed SSE events when streamed), ``POST
/v1/messages`` (Anthropic, SSE events), ``POST /api/chat`` (Ollama, NDJSON unless
``"stream": false``) and ``POST .../models/<model>:generateContent`` (Gemini; SSE from
``:streamGenerateContent?alt=sse``) from a script of `ScriptedModel` steps, rendered in
each provider's wire format. Failure steps, and the http faults of the `FaultPlan` it is
bound to, are served over the socket:

| fault (or script step)                   | what the client gets                               |
|------------------------------------------|----------------------------------------------------|
| a status (``fail.http(503)``)            | that status and a provider-shaped error body; a    |
|                                          | ``retry_after`` adds ``Retry-After`` and           |
|                                          | ``retry-after-ms``                                 |
| ``"timeout"`` (``fail.timeout()``)       | no answer: held until the client gives up          |
| ``"connect_error"`` (``fail.connection()``) | the connection dropped before the headers       |
| ``"reset"``                              | a TCP reset before the headers                     |
| ``"read_error"``                         | the headers, half the body, then the drop          |
| ``"truncated_stream"``                   | a 200 stream cut mid-way: no terminal event, no    |
| (``malformed.truncated()``)              | last chunk, so the client's read fails; streamed,  |
|                                          | the start of the script's next answer (step kept)  |
| ``"malformed_body"``                     | a 200 whose body (or first stream event) is not    |
| (``malformed.not_json()``)               | JSON                                               |
| ``"not_json"``, ``"proxy_html"``,        | what the in-process kinds send (`_wire._kinds`);   |
| ``"context_length"``, ``"quota"``        | a proxy page's status is ``status=``               |
| ``"stall"``                              | ``after=`` events (of the script's next answer),   |
|                                          | then held until the client gives up (at most       |
|                                          | ``timeout_hold``)                                  |
| ``"slow_first_token"``                   | the scripted answer, its first chunk held          |
|                                          | ``delay=`` s (at most ``timeout_hold``); a client  |
|                                          | that closes the connection first is recorded with  |
|                                          | the ``ReadTimeout`` it got                         |

Why the standard library (`http.server.ThreadingHTTPServer`) and not uvicorn/starlette or
aiohttp: the faults need direct control of the socket (close before or after the headers,
a reset, a chunked stream that stops without its last chunk), which ASGI servers hide
behind the protocol layer; the stdlib handler owns the socket, keeps connections alive
with HTTP/1.1, needs no extra dependency, and serves well over 1,000 requests per second
on one keep-alive connection (see ``benchmarks/bench_http.py``).

Time: nothing here sleeps. A ``"timeout"`` waits (on the socket, not a sleep) until the
client closes the connection, at most ``timeout_hold`` seconds (1 s by default); a
client that never gives up within that is a test-setup mistake reported by `check`. So
give clients a small timeout in timeout scenarios (``timeout=0.05``): the client's own
backoff stays virtual (the test's own thread waits in virtual time; this server's
threads keep real time).

Security: the server binds 127.0.0.1 only, on an ephemeral port; `requests` and the
trace events keep no credential header (``Authorization``, ``x-api-key`` ... are
redacted), and no key in a URL's query. No client can wedge it: idle and unfinished
requests time out, heads and bodies have size limits, and a request breaking one gets a
4xx and a closed connection (see `LLMServer` and ``_httpd``).

Same seed, same bytes: the port changes from run to run, so what the server records (the
fired faults' names, the trace events' ``url`` and ``detail``) names it by the stable
origin ``http://llm_server`` (`RECORDED_ORIGIN`): ``POST http://llm_server/v1/messages``.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import socket
import threading
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Self

from pytest_agentfaults._redact import redact_text
from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.runtime._recorder import Recorder
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.runtime.events import Trace
from pytest_agentfaults.testing._handler import Endpoint, Handler, HTTPServer
from pytest_agentfaults.testing._httpd import (
    RECORDED_ORIGIN,
    Limits,
    register_running,
    unregister_running,
)
from pytest_agentfaults.testing._serve import ReceivedRequest, Service, unbound
from pytest_agentfaults.testing._wire import PROVIDERS, request_ids
from pytest_agentfaults.testing.scripted import ScriptedModel
from pytest_agentfaults.testing.steps import OnExhausted, Step

if TYPE_CHECKING:
    from pytest_agentfaults.testing.faults import FaultPlan

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["LLMServer"]

HOST: Final = "127.0.0.1"


class LLMServer:
    """A loopback LLM server: OpenAI, Anthropic, Ollama and Gemini wire formats, faults included.

    The ``llm_server`` fixture is one of these, started once per session and reset for
    every test; outside pytest use it as a context manager. ``timeout_hold`` bounds how
    long a ``"timeout"`` holds a response (real seconds; see the module docs).

    Limits, so that no client can wedge it: a connection silent for ``idle_timeout``
    seconds is closed (a request must also arrive in full within ``idle_timeout`` of its
    first byte); a request head is at most ``max_header_bytes`` (431 past it, 414 for the
    request line alone); a body at most ``max_body_bytes`` (413). A request breaking one
    gets a 4xx and the connection is closed, and it is not recorded. Of each recorded
    request, ``requests`` keeps the first ``max_stored_body`` bytes of the body
    (`ReceivedRequest.body_size` is the whole size).
    """

    def __init__(
        self,
        *,
        timeout_hold: float = 1.0,
        idle_timeout: float = 5.0,
        max_header_bytes: int = 64 * 1024,
        max_body_bytes: int = 64 * 1024 * 1024,
        max_stored_body: int = 16 * 1024,
    ) -> None:
        for name, seconds in (("timeout_hold", timeout_hold), ("idle_timeout", idle_timeout)):
            if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
                raise UsageError(f"LLMServer({name}={seconds!r}): give seconds > 0")
        sizes = (
            ("max_header_bytes", max_header_bytes, 1),
            ("max_body_bytes", max_body_bytes, 0),
            ("max_stored_body", max_stored_body, 0),
        )
        for name, size, least in sizes:
            if isinstance(size, bool) or not isinstance(size, int) or size < least:
                raise UsageError(f"LLMServer({name}={size!r}): give an int >= {least} (bytes)")
        self.timeout_hold = float(timeout_hold)
        self.max_stored_body = max_stored_body
        self._binding = unbound()
        self._lock = threading.Lock()
        self._service = Service(self._lock)
        self._server: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._endpoint = Endpoint(
            Limits(float(idle_timeout), max_header_bytes, max_body_bytes),
            serve=self._serve,
            crashed=self._crashed,
            lock=self._lock,
            connections=self._connections,
        )

    # ------------------------------------------------------------------ life cycle

    def start(self) -> LLMServer:
        """Listen on 127.0.0.1 (an ephemeral port) and serve from a background thread."""
        if self._server is not None:
            return self
        server = HTTPServer((HOST, 0), Handler)
        server.endpoint = self._endpoint
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"agentfaults-llm-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        register_running((HOST, self.port))
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        server, self._server = self._server, None
        if server is None:
            return
        unregister_running((HOST, server.server_address[1]))
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise UsageError("the LLMServer is not started; call start() or use `with`")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self.port}"

    def base_url(self, provider: str) -> str:
        """The base URL to give ``provider``'s client (the OpenAI one ends in ``/v1``)."""
        if provider not in PROVIDERS:
            close = difflib.get_close_matches(str(provider), PROVIDERS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"base_url({provider!r}): unknown provider; use one of {', '.join(PROVIDERS)}{hint}"
            )
        return f"{self.url}/v1" if provider.startswith("openai") else self.url

    def env(self) -> dict[str, str]:
        """Environment variables that point the official SDKs and our clients here.

        ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``OLLAMA_HOST`` and dummy keys:
        ``for k, v in llm_server.env().items(): monkeypatch.setenv(k, v)``.
        """
        return {
            "OPENAI_BASE_URL": self.base_url("openai"),
            "OPENAI_API_KEY": "agentfaults-loopback-key",
            "ANTHROPIC_BASE_URL": self.base_url("anthropic"),
            "ANTHROPIC_API_KEY": "agentfaults-loopback-key",
            "OLLAMA_HOST": self.base_url("ollama"),
        }

    # ------------------------------------------------------------------ per test

    def script(
        self,
        steps: Sequence[Step | str],
        *,
        on_exhausted: OnExhausted = "raise",
        strict: bool = True,
    ) -> ScriptedModel:
        """Answer the next requests with ``steps`` (`say`, `call_tool`, `fail.http` ...).

        Returns the `ScriptedModel` behind the script; its ``requests`` are the model's view
        of what was asked. A request with no step left gets HTTP 400 (never a retryable
        answer) and `check` fails the test. Faults of the bound plan use up no step.
        ``strict=True`` (the default): steps never requested fail `check` too, naming the
        first; ``strict=False`` allows them.
        """
        __tracebackhide__ = True
        if isinstance(steps, str) or not isinstance(steps, Sequence):
            # a str would be one step per letter; a lone step, a TypeError from list()
            raise UsageError(
                f"llm_server.script({steps!r}): give a list of steps, such as [say('done')]"
            )
        # built unchecked, then marked: the server checks its own script in `check`, so the
        # model must not also register with the plan active now
        model = ScriptedModel(
            list(steps), name="llm_server", on_exhausted=on_exhausted, strict=False
        )
        if not isinstance(strict, bool):
            raise UsageError(f"llm_server.script(strict={strict!r}): give True or False")
        model.strict = strict
        with self._lock:
            self._binding.model = model
        return model

    @property
    def scripted(self) -> ScriptedModel:
        """The test's script (what ``script()`` returned; an empty one before any)."""
        return self._binding.model

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received since the last reset, faulted ones included."""
        return self._binding.requests

    @property
    def problems(self) -> list[str]:
        """Test-setup mistakes seen while serving (see `check`)."""
        return self._binding.problems

    @property
    def trace(self) -> Trace:
        """Events of requests served while no plan was bound (outside pytest)."""
        recorder = self._binding.recorder
        return recorder.trace if recorder is not None else Trace()

    def reset(self) -> None:
        """Forget the script, the requests, the problems and the plan binding."""
        with self._lock:
            self._binding = unbound()

    def bind(self, plan: FaultPlan | None) -> None:
        """Start afresh, serving ``plan``'s http faults and recording where it records.

        Events go to ``plan.http_recorder`` (the test's trace, under the plugin); a plan
        without one gets one on the default clock.
        """
        binding = unbound()
        if plan is not None:
            if plan.http_recorder is None:
                plan.http_recorder = Recorder(agent="http", clock=default_clock())
            binding.plan, binding.recorder = plan, plan.http_recorder
            # the test's request ids: shared with its in-process faults, never repeated
            binding.ids = request_ids(plan)
            if self._server is not None:
                plan.shown_origins[self.url] = RECORDED_ORIGIN
        with self._lock:
            self._binding = binding

    def check(self) -> None:
        """Raise `AssertionError` for a test-setup mistake seen while serving.

        A request with no script step left, a ``"timeout"`` the client never gave up on, or
        (``script(..., strict=True)``, the default) a script step never requested.
        """
        __tracebackhide__ = True
        problems = list(self.problems)
        model = self._binding.model
        left = model.leftover() if model.strict else None
        if left is not None:
            problems.append(
                f"the script has {left}. Remove the steps the test does not need, or "
                "pass llm_server.script(..., strict=False) to allow leftovers."
            )
        if problems:
            raise AssertionError(redact_text("llm_server: " + "\n".join(problems)))

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"<LLMServer {where} requests={len(self.requests)}>"

    # ------------------------------------------------------------------ serving

    def _serve(self, handler: Handler, method: str, path: str, body: bytes) -> None:
        self._service.serve(self, self._binding, handler, method, path, body)

    def _crashed(self, exc: Exception) -> None:
        detail = "".join(traceback.format_exception(exc)).rstrip()
        self._binding.problems.append(f"the server crashed while answering:\n{detail}")
