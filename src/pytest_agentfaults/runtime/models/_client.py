"""The base of the httpx model clients: their httpx clients, secrets and attempt loop.

`HTTPModel` runs the attempts (sync and async, plain and streamed), waits through the
agent's clock, and reports every retry as a ``transport.retry`` event. Errors are built by
`_errors` (the one httpx-to-taxonomy boundary), retry is decided by `_retry`, streams are
cut by `_stream` and bodies read by `_wire`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Self

import httpx

from pytest_agentfaults.errors import (
    AgentFaultsError,
    MalformedResponseError,
    ModelError,
    ModelStreamError,
    UsageError,
)
from pytest_agentfaults.runtime._drivers import await_wait, wait
from pytest_agentfaults.runtime._finite import dumps
from pytest_agentfaults.runtime.clock import default_clock
from pytest_agentfaults.runtime.models._errors import (
    BODY_KEEP,
    TRANSLATABLE,
    broken_stream_error,
    malformed_error,
    status_error,
    status_hint,
    stream_failure_error,
    too_large_error,
    translate_exception,
)
from pytest_agentfaults.runtime.models._guard import refuse_real_hosts
from pytest_agentfaults.runtime.models._limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    TooLargeError,
    aread_body,
    check_max_response_bytes,
    read_body,
    size_text,
)
from pytest_agentfaults.runtime.models._retry import (
    TransportRetry,
    coerce_transport_retry,
    retry_delay,
)
from pytest_agentfaults.runtime.models._settings import check_setup, scrubber, user_agent
from pytest_agentfaults.runtime.models._stream import LineBuffer, StreamDecoder
from pytest_agentfaults.runtime.models._wire import StreamBrokenError, WireFormatError, decode_json

if TYPE_CHECKING:
    from types import TracebackType

    from pytest_agentfaults.runtime.clock import Clock
    from pytest_agentfaults.runtime.models.base import ModelRequest, ModelResponse

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = ["DEFAULT_TIMEOUT", "HTTPModel"]

# LLM answers can take minutes; connecting should not.
DEFAULT_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class HTTPModel:
    """What the httpx model clients share: clients, secrets, the attempt loop.

    A subclass sets ``provider`` and ``sse`` and writes three pure hooks: `_payload` (the
    request body), `_parse` (a decoded 2xx body) and `_decoder` (a stream decoder).
    """

    provider: ClassVar[str] = ""
    sse: ClassVar[bool] = True
    key_env: ClassVar[str] = ""

    __slots__ = (
        "_async_client",
        "_base_url",
        "_client",
        "_extra_body",
        "_has_key",
        "_headers",
        "_max_bytes",
        "_model",
        "_name",
        "_owns_async",
        "_owns_sync",
        "_retry",
        "_scrub",
        "_timeout",
        "_url",
    )

    def _setup(
        self,
        model: str,
        *,
        base_url: str,
        url: str,
        headers: dict[str, str],
        secrets: tuple[str, ...],
        http_client: httpx.Client | httpx.AsyncClient | None,
        async_http_client: httpx.AsyncClient | None,
        transport_retry: TransportRetry | bool | None,
        timeout: float | httpx.Timeout | None,
        extra_body: Mapping[str, Any] | None,
        max_response_bytes: int | None = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        cls = type(self).__name__
        check_setup(cls, model, http_client, async_http_client)
        self._model = model
        self._name = f"{self.provider}:{model}"
        self._base_url = base_url
        self._url = url
        if not any(name.lower() == "user-agent" for name in headers):
            headers["user-agent"] = user_agent()  # the verdict tells our requests by it
        self._headers = headers
        self._has_key = bool(secrets)
        self._scrub = scrubber(secrets)
        self._retry = coerce_transport_retry(transport_retry)
        self._timeout = timeout
        self._extra_body = dict(extra_body or {})
        self._max_bytes = check_max_response_bytes(cls, max_response_bytes)
        self._client = http_client if isinstance(http_client, httpx.Client) else None
        self._async_client = (
            http_client if isinstance(http_client, httpx.AsyncClient) else async_http_client
        )
        self._owns_sync = False
        self._owns_async = False

    # ------------------------------------------------------------------ public surface

    @property
    def name(self) -> str:
        """``"<provider>:<model>"``, as traces show it."""
        return self._name

    @property
    def model(self) -> str:
        """The provider's model name, as sent in each request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The base URL requests go to (without a trailing slash)."""
        return self._base_url

    @property
    def url(self) -> str:
        """The endpoint each request is POSTed to."""
        return self._url

    @property
    def transport_retry(self) -> TransportRetry | None:
        """The transport retry settings in force (None when disabled)."""
        return self._retry

    @property
    def max_response_bytes(self) -> int | None:
        """The most bytes read of one body or one stream line (None: no limit)."""
        return self._max_bytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    def request(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the assistant's answer, blocking.

        Failures are raised as the taxonomy's `ModelError` subclasses, after transport
        retry, with the httpx exception as ``__cause__``.
        """
        __tracebackhide__ = True
        content = self._encode(request)
        client = self._sync_client()
        refuse_real_hosts(client, self._url)
        clock: Clock | None = None
        attempt = 1
        while True:
            try:
                if request.stream:
                    return self._stream_sync(client, content, request)
                return self._post_sync(client, content, request)
            except ModelError as error:
                if _cancelled(request):
                    raise  # a cancelled run retries nothing, and announces no retry
                delay = self._retry_delay(error, attempt, request)
                if delay is None or _cancelled(request):
                    raise
                if clock is None:
                    clock = request.clock or default_clock()
                wait(clock, delay, request.cancel)
                if _cancelled(request):
                    raise  # the run was cancelled during the wait: this failure stands
            attempt += 1

    async def arequest(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the assistant's answer without blocking the loop."""
        __tracebackhide__ = True
        content = self._encode(request)
        client = self._async_http_client()
        refuse_real_hosts(client, self._url)
        clock: Clock | None = None
        attempt = 1
        while True:
            try:
                if request.stream:
                    return await self._stream_async(client, content, request)
                return await self._post_async(client, content, request)
            except ModelError as error:
                if _cancelled(request):
                    raise  # a cancelled run retries nothing, and announces no retry
                delay = self._retry_delay(error, attempt, request)
                if delay is None or _cancelled(request):
                    raise
                if clock is None:
                    clock = request.clock or default_clock()
                await await_wait(clock, delay, request.cancel)
                if _cancelled(request):
                    raise
            attempt += 1

    def close(self) -> None:
        """Close the httpx client this model created (an injected one is left open)."""
        client, self._client = self._client, None
        if client is not None and self._owns_sync:
            client.close()
        self._owns_sync = False

    async def aclose(self) -> None:
        """Close both httpx clients this model created (injected ones are left open)."""
        client, self._async_client = self._async_client, None
        if client is not None and self._owns_async:
            await client.aclose()
        self._owns_async = False
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ provider hooks

    def _payload(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _parse(self, data: Any, request: ModelRequest) -> ModelResponse:
        raise NotImplementedError

    def _decoder(self, request: ModelRequest) -> StreamDecoder:
        raise NotImplementedError

    # ------------------------------------------------------------------ clients

    def _sync_client(self) -> httpx.Client:
        client = self._client
        if client is None:
            if self._async_client is not None and not self._owns_async:
                raise UsageError(
                    f"{self!r} was given an httpx.AsyncClient, and request() needs an "
                    "httpx.Client: call arequest(), or pass http_client=httpx.Client(...) "
                    "and async_http_client=httpx.AsyncClient(...)"
                )
            client = self._client = httpx.Client(timeout=self._timeout)
            self._owns_sync = True
        return client

    def _async_http_client(self) -> httpx.AsyncClient:
        client = self._async_client
        if client is None:
            if self._client is not None and not self._owns_sync:
                raise UsageError(
                    f"{self!r} was given an httpx.Client, and arequest() needs an "
                    "httpx.AsyncClient: pass async_http_client=httpx.AsyncClient(...), "
                    "or call request()"
                )
            client = self._async_client = httpx.AsyncClient(timeout=self._timeout)
            self._owns_async = True
        return client

    # ------------------------------------------------------------------ one attempt

    def _encode(self, request: ModelRequest) -> bytes:
        payload = self._payload(request)
        if self._extra_body:
            payload.update(self._extra_body)
        return dumps(payload, _ENCODER).encode()

    def _post_sync(
        self, client: httpx.Client, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        __tracebackhide__ = True
        try:
            with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                body = read_body(response, self._max_bytes, keep_prefix=not response.is_success)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._translate(exc) from exc
        return self._answer(response, body, request)

    async def _post_async(
        self, client: httpx.AsyncClient, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        __tracebackhide__ = True
        try:
            async with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                body = await aread_body(
                    response, self._max_bytes, keep_prefix=not response.is_success
                )
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._translate(exc) from exc
        return self._answer(response, body, request)

    def _stream_sync(
        self, client: httpx.Client, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        __tracebackhide__ = True
        lines = LineBuffer(self._max_bytes)
        try:
            with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                if not response.is_success or self._not_a_stream(response):
                    body = read_body(response, self._max_bytes, keep_prefix=not response.is_success)
                    return self._answer(response, body, request)
                decoder = self._decoder(request)
                for chunk in response.iter_bytes():
                    self._feed(decoder, lines, chunk)
                return self._end_stream(decoder, lines)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._stream_failure(exc, lines) from exc

    async def _stream_async(
        self, client: httpx.AsyncClient, content: bytes, request: ModelRequest
    ) -> ModelResponse:
        __tracebackhide__ = True
        lines = LineBuffer(self._max_bytes)
        try:
            async with client.stream(
                "POST", self._url, content=content, headers=self._headers
            ) as response:
                if not response.is_success or self._not_a_stream(response):
                    body = await aread_body(
                        response, self._max_bytes, keep_prefix=not response.is_success
                    )
                    return self._answer(response, body, request)
                decoder = self._decoder(request)
                async for chunk in response.aiter_bytes():
                    self._feed(decoder, lines, chunk)
                return self._end_stream(decoder, lines)
        except ModelError:
            raise
        except TooLargeError as exc:
            raise self._too_large(exc) from None
        except TRANSLATABLE as exc:
            raise self._stream_failure(exc, lines) from exc

    def _not_a_stream(self, response: httpx.Response) -> bool:
        # A server that ignores stream=true answers with one JSON document: parse it whole.
        # An HTML page (a proxy's error page) is reported as such, not as a short stream.
        content_type = response.headers.get("content-type", "").lower()
        if "html" in content_type:
            return True
        return self.sse and content_type.startswith("application/json")

    def _feed(self, decoder: StreamDecoder, lines: LineBuffer, chunk: bytes) -> None:
        try:
            for line in lines.feed(chunk):
                decoder.feed(line)
        except WireFormatError as exc:
            raise self._malformed(str(exc), lines.transcript(), streamed=True) from exc.__cause__
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None

    def _end_stream(self, decoder: StreamDecoder, lines: LineBuffer) -> ModelResponse:
        __tracebackhide__ = True
        if lines.size == 0:
            raise self._broken("the stream was empty (no events at all)", lines)
        try:
            last = lines.finish()
            if last is not None:
                decoder.feed(last)
            decoder.end_of_input()
        except WireFormatError:
            # The body stopped in the middle of an event: that is truncation, not bad JSON.
            raise self._broken(
                "truncated stream: it ended in the middle of an event", lines
            ) from None
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None
        try:
            return decoder.finish()
        except StreamBrokenError as exc:
            raise self._broken(str(exc), lines) from None
        except WireFormatError as exc:
            raise self._malformed(str(exc), lines.transcript(), streamed=True) from None

    def _stream_failure(self, exc: BaseException, lines: LineBuffer) -> AgentFaultsError:
        return stream_failure_error(
            exc,
            model=self._name,
            url=self._url,
            scrub=self._scrub,
            size=lines.size,
            excerpt=lines.excerpt(),
        )

    def _answer(
        self, response: httpx.Response, body: bytes, request: ModelRequest
    ) -> ModelResponse:
        __tracebackhide__ = True
        if not response.is_success:
            raise status_error(
                response,
                body,
                model=self._name,
                url=self._url,
                hint=status_hint(response, has_key=self._has_key, key_env=self.key_env),
                scrub=self._scrub,
            )
        try:
            data = decode_json(body, lambda: response.headers.get("content-type", ""))
            return self._parse(data, request)
        except WireFormatError as exc:
            text = body.decode("utf-8", "replace")
            # only the start is scrubbed and kept: never a regex over a 32 MiB body
            hidden = max(0, len(text) - BODY_KEEP)
            raise self._malformed(
                str(exc), text[:BODY_KEEP], streamed=False, hidden=hidden
            ) from exc.__cause__

    # ------------------------------------------------------------------ errors

    def _translate(self, exc: BaseException) -> AgentFaultsError:
        return translate_exception(exc, model=self._name, url=self._url, scrub=self._scrub)

    def _malformed(
        self, what: str, body: str, *, streamed: bool, hidden: int = 0
    ) -> MalformedResponseError:
        return malformed_error(
            self._name, self._scrub, what, body, streamed=streamed, hidden=hidden
        )

    def _too_large(self, exc: TooLargeError) -> MalformedResponseError:
        limit = size_text(self._max_bytes or 0)
        cls = type(self).__name__
        return too_large_error(self._name, self._scrub, exc.what, exc.head, limit=limit, cls=cls)

    def _broken(self, what: str, lines: LineBuffer) -> ModelStreamError:
        excerpt = lines.excerpt()
        return broken_stream_error(self._name, self._scrub, what, size=lines.size, excerpt=excerpt)

    def _retry_delay(self, error: ModelError, attempt: int, request: ModelRequest) -> float | None:
        return retry_delay(self._retry, error, attempt, request, self._name)


def _cancelled(request: ModelRequest) -> bool:
    """Whether the run that sent ``request`` was cancelled (its retries end there)."""
    return request.cancel is not None and request.cancel.cancelled
