"""The one boundary where httpx exceptions and HTTP statuses become the taxonomy."""

from __future__ import annotations

import email.utils
import inspect

import httpx
import pytest

from pytest_agentfaults.errors import (
    MalformedResponseError,
    ModelAuthError,
    ModelHTTPError,
    ModelServerError,
    ModelStreamError,
    ModelTimeoutError,
    ModelTransportError,
    RateLimitError,
    UsageError,
)
from pytest_agentfaults.runtime.models._errors import (
    EXCEPTION_TABLE,
    is_transport_retryable,
    provider_message,
    status_error,
    translate_exception,
)
from pytest_agentfaults.runtime.models._retry_after import parse_retry_after
from pytest_agentfaults.runtime.models._settings import check_base_url
from pytest_agentfaults.runtime.models._stream import LineBuffer, SSEDecoder, SSEEvent
from pytest_agentfaults.runtime.models._wire import WireFormatError, decode_json

MODEL = "openai:gpt-4o-mini"
URL = "https://api.openai.com/v1/chat/completions"

# Every exception class httpx exports, and the taxonomy class it must become. A new httpx
# exception makes `test_every_httpx_exception_is_listed` fail until it is placed here.
EXPECTED = {
    httpx.CloseError: ModelTransportError,
    httpx.ConnectError: ModelTransportError,
    httpx.ConnectTimeout: ModelTimeoutError,
    httpx.CookieConflict: MalformedResponseError,
    httpx.DecodingError: MalformedResponseError,
    httpx.HTTPError: ModelTransportError,
    httpx.HTTPStatusError: ModelServerError,  # built below with a 503 response
    httpx.InvalidURL: UsageError,
    httpx.LocalProtocolError: ModelTransportError,
    httpx.NetworkError: ModelTransportError,
    httpx.PoolTimeout: ModelTimeoutError,
    httpx.ProtocolError: ModelTransportError,
    httpx.ProxyError: ModelTransportError,
    httpx.ReadError: ModelTransportError,
    httpx.ReadTimeout: ModelTimeoutError,
    httpx.RemoteProtocolError: ModelTransportError,
    httpx.RequestError: ModelTransportError,
    httpx.RequestNotRead: ModelStreamError,
    httpx.ResponseNotRead: ModelStreamError,
    httpx.StreamClosed: ModelStreamError,
    httpx.StreamConsumed: ModelStreamError,
    httpx.StreamError: ModelStreamError,
    httpx.TimeoutException: ModelTimeoutError,
    httpx.TooManyRedirects: ModelTransportError,
    httpx.TransportError: ModelTransportError,
    httpx.UnsupportedProtocol: UsageError,
    httpx.WriteError: ModelTransportError,
    httpx.WriteTimeout: ModelTimeoutError,
}

# Connection-level failures transport retry repeats; every other class is never repeated.
RETRIED = {
    httpx.CloseError,
    httpx.ConnectError,
    httpx.NetworkError,
    httpx.ProtocolError,
    httpx.ProxyError,
    httpx.ReadError,
    httpx.RemoteProtocolError,
    httpx.TransportError,
    httpx.WriteError,
}


def exported_exceptions() -> set[type[BaseException]]:
    return {
        obj
        for name in httpx.__all__
        if inspect.isclass(obj := getattr(httpx, name)) and issubclass(obj, BaseException)
    }


def make(cls: type[BaseException]) -> BaseException:
    request = httpx.Request("POST", URL)
    if cls is httpx.HTTPStatusError:
        response = httpx.Response(503, request=request, content=b"busy")
        return httpx.HTTPStatusError("503", request=request, response=response)
    if issubclass(cls, httpx.StreamError) and cls is not httpx.StreamError:
        return cls()
    if issubclass(cls, httpx.RequestError):
        return cls("boom", request=request)
    return cls("boom")


def test_every_httpx_exception_is_listed():
    assert exported_exceptions() == set(EXPECTED)


@pytest.mark.parametrize(
    "cls", sorted(EXPECTED, key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_every_httpx_exception_maps_to_one_specific_taxonomy_class(cls):
    translated = translate_exception(make(cls), model=MODEL, url=URL)
    assert type(translated) is EXPECTED[cls]
    if isinstance(translated, ModelHTTPError | ModelTransportError | ModelTimeoutError):
        assert translated.model == MODEL


@pytest.mark.parametrize(
    "cls", sorted(EXPECTED, key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_only_connection_failures_are_transport_retryable(cls):
    assert is_transport_retryable(make(cls)) is (cls in RETRIED)


def test_the_table_lists_subclasses_before_their_bases():
    classes = [row[0] for row in EXCEPTION_TABLE]
    for i, earlier in enumerate(classes):
        for later in classes[i + 1 :]:
            assert not issubclass(later, earlier), f"{later.__name__} is shadowed by {earlier}"


def test_builtin_socket_errors_are_translated_too():
    assert type(translate_exception(ConnectionResetError("reset"), model=MODEL)) is (
        ModelTransportError
    )
    assert type(translate_exception(TimeoutError("slow"), model=MODEL)) is ModelTimeoutError
    assert is_transport_retryable(ConnectionRefusedError())
    assert not is_transport_retryable(TimeoutError())
    assert not is_transport_retryable(None)


def test_the_message_names_the_model_the_exception_and_the_url():
    error = translate_exception(httpx.ConnectError("[Errno 111] refused"), model=MODEL, url=URL)
    assert str(error) == (
        f"{MODEL}: could not connect (ConnectError: [Errno 111] refused) on POST {URL}"
    )


def test_the_message_is_scrubbed_of_secrets():
    error = translate_exception(
        httpx.ConnectError("proxy said Bearer sk-proj-abcdefghijklmnop1234"), model=MODEL
    )
    assert "abcdefghijklmnop1234" not in str(error)


def test_a_timeout_is_a_model_timeout_error_and_a_builtin_timeout():
    error = translate_exception(httpx.ReadTimeout("read timed out"), model=MODEL)
    assert isinstance(error, TimeoutError)
    assert isinstance(error, ModelTimeoutError)


def test_a_connection_error_is_a_builtin_connection_error():
    assert isinstance(translate_exception(httpx.ConnectError("x"), model=MODEL), ConnectionError)


# --------------------------------------------------------------------------- statuses


def respond(status: int, body: bytes = b"", **headers: str) -> ModelHTTPError:
    response = httpx.Response(status, content=body, headers=headers)
    return status_error(response, body, model=MODEL, url=URL)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, ModelAuthError),
        (403, ModelAuthError),
        (429, RateLimitError),
        (500, ModelServerError),
        (502, ModelServerError),
        (503, ModelServerError),
        (504, ModelServerError),
        (529, ModelServerError),
        (408, ModelHTTPError),
        (400, ModelHTTPError),
        (404, ModelHTTPError),
        (422, ModelHTTPError),
        (301, ModelHTTPError),
    ],
)
def test_statuses_map_to_the_taxonomy(status, expected):
    error = respond(status)
    assert type(error) is expected
    assert error.status == status
    assert error.model == MODEL


def test_a_429_carries_retry_after():
    error = respond(429, b"{}", **{"retry-after": "7"})
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 7.0
    assert "retry after 7s" in str(error)


def test_the_provider_error_message_is_in_the_exception_message(wire):
    body = wire("openai/error_500.json")
    error = respond(500, body)
    assert str(error) == (
        f"{MODEL}: HTTP 500 Internal Server Error from POST {URL}: server_error: The server "
        "had an error while processing your request. Sorry about that!"
    )


def test_the_body_is_kept_truncated_and_headers_redacted():
    body = b"x" * 5000
    error = respond(502, body, **{"set-cookie": "session=abc", "x-request-id": "req_1"})
    assert error.body.startswith("x" * 2000)
    assert error.body.endswith("[3000 more characters]")
    assert error.headers["set-cookie"] == "[REDACTED]"
    assert error.headers["x-request-id"] == "req_1"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"error": {"message": "Overloaded", "type": "overloaded_error"}}', "overloaded_error"),
        (b'{"error": "model \\"x\\" not found, try pulling it first"}', 'model "x" not found'),
        (b'{"message": "upstream failed"}', "upstream failed"),
        (b"plain words", "plain words"),
        (b"", ""),
    ],
)
def test_provider_message_reads_the_usual_shapes(body, said):
    assert said in provider_message(body.decode())


def test_provider_message_reads_the_title_of_an_html_page(wire):
    page = wire("common/html_error_page.html").decode()
    assert provider_message(page) == "HTML page: api.example.com | 502: Bad gateway"


# --------------------------------------------------------------------------- Retry-After


def test_retry_after_in_seconds():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5


def test_retry_after_ms_wins_over_retry_after():
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5


def test_retry_after_as_an_http_date():
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == 30.0


def test_retry_after_date_in_the_past_means_now():
    now = 1_700_000_000.0
    date = email.utils.formatdate(now - 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == 0.0


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "", "Mon, 99 Foo 2024"])
def test_unusable_retry_after_means_none(value):
    assert parse_retry_after({"retry-after": value}) is None


def test_unusable_retry_after_ms_falls_back_to_retry_after():
    assert parse_retry_after({"retry-after-ms": "x", "retry-after": "3"}) == 3.0


def test_retry_after_reads_httpx_headers_case_insensitively():
    assert parse_retry_after(httpx.Headers({"Retry-After": "4"})) == 4.0


# --------------------------------------------------------------------------- body decoding


def test_decode_json_says_the_body_is_empty():
    with pytest.raises(WireFormatError, match="the body is empty"):
        decode_json(b"  ", "application/json")


def test_decode_json_says_it_got_an_html_page(wire):
    with pytest.raises(WireFormatError, match=r"an HTML page \(content-type 'text/html'"):
        decode_json(wire("common/html_error_page.html"), "text/html")


def test_decode_json_says_where_utf8_breaks():
    with pytest.raises(WireFormatError, match=r"not valid UTF-8 \(byte 10 is b'\\xff'\)"):
        decode_json(b'{"text": "\xff"}', "application/json")


def test_decode_json_reads_the_content_type_only_on_failure():
    asked = []
    assert decode_json(b"{}", lambda: asked.append(1) or "x") == {}
    assert asked == []


# --------------------------------------------------------------------------- stream framing


def test_line_buffer_joins_lines_split_across_chunks():
    lines = LineBuffer()
    assert lines.feed(b"data: one\r\nda") == ["data: one"]
    assert lines.feed(b"ta: two\n\n") == ["data: two", ""]
    assert lines.finish() is None


def test_line_buffer_decodes_a_character_split_across_chunks():
    encoded = "18°C\n".encode()
    lines = LineBuffer()
    assert lines.feed(encoded[:3]) == []
    assert lines.feed(encoded[3:]) == ["18°C"]


def test_line_buffer_returns_an_unterminated_last_line():
    lines = LineBuffer()
    lines.feed(b"data: [DONE]")
    assert lines.finish() == "data: [DONE]"


def test_line_buffer_rejects_invalid_utf8_naming_the_line():
    lines = LineBuffer()
    lines.feed(b"ok\n")
    with pytest.raises(WireFormatError, match=r"line 2 of the stream is not valid UTF-8"):
        lines.feed(b"caf\xe9\n")


def test_line_buffer_keeps_the_end_for_messages():
    lines = LineBuffer()
    for _ in range(100):
        lines.feed(b"data: chunk\n\n")
    assert lines.size == 1300
    assert lines.excerpt().endswith("data: chunk")


def test_sse_decoder_reads_events_comments_and_multiline_data():
    decoder = SSEDecoder()
    events = [
        decoder.feed(line)
        for line in [
            ": keep-alive",
            "event: message_start",
            "data: {",
            "data: }",
            "",
            "data:no-space",
            "id: 7",
            "",
            "",
        ]
    ]
    assert [e for e in events if e is not None] == [
        SSEEvent("message_start", "{\n}"),
        SSEEvent("message", "no-space"),
    ]


def test_sse_decoder_flushes_an_event_without_a_blank_line():
    decoder = SSEDecoder()
    decoder.feed("data: [DONE]")
    assert decoder.flush() == SSEEvent("message", "[DONE]")
    assert decoder.flush() is None


# --------------------------------------------------------------------------- base URLs


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ("api.openai.com/v1", "'https://api.openai.com/v1'"),
        ("ftp://example.com/v1", "must be an http:// or https:// URL"),
        ("", "is empty"),
        ("https://example.com/v1?x=1", "must not have a query"),
        ("http://", "must be an http"),
    ],
)
def test_check_base_url_names_the_fix(value, fix):
    with pytest.raises(UsageError) as caught:
        check_base_url(value, cls="OpenAIModel", source="base_url", example="https://x/v1")
    assert fix in str(caught.value)


def test_check_base_url_strips_the_trailing_slash():
    assert (
        check_base_url("http://h:1/v1/", cls="M", source="base_url", example="") == "http://h:1/v1"
    )
