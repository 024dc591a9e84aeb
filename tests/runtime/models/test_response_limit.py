"""``max_response_bytes``: a body (or one stream line) past it is refused while reading."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_agentfaults.errors import MalformedResponseError, ModelServerError, UsageError

from .conftest import wire_bytes
from .test_payloads import (
    BASE,
    CLIENTS,
    MODES,
    STREAM_TYPE,
    WHOLE,
    MiB,
    Served,
    build,
    call,
    framed,
)

LIMIT = 64 * 1024
STREAM_PREFIX = {"openai": b"data: ", "anthropic": b"event: message_start\ndata: ", "ollama": b""}


def padded_json(total: int) -> bytes:
    """A valid JSON object of ``total`` bytes."""
    head, tail = b'{"pad":"', b'"}'
    return head + b"x" * (total - len(head) - len(tail)) + tail


def served(provider: str, mode: str, total: int) -> Served:
    if mode in ("stream", "astream"):
        # one stream line of ``total`` bytes
        return Served(framed(provider, padded_json(total)), STREAM_TYPE[provider])
    return Served(padded_json(total), "application/json")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
def test_a_body_past_the_limit_is_refused_while_reading(provider, mode):
    answer = served(provider, mode, 16 * LIMIT)
    model = build(provider, answer, max_response_bytes=LIMIT)
    with pytest.raises(MalformedResponseError) as caught:
        call(model, mode)
    message = str(caught.value)
    assert f"max_response_bytes={LIMIT}" in message
    assert f"{CLIENTS[provider].__name__}(..., max_response_bytes=" in message  # the fix
    assert len(message) < 1000
    assert len(caught.value.body) < 2100
    assert answer.calls == 1  # never transport-retried
    # it stopped soon after the limit: 16 x the limit in 4 KiB chunks is 256 chunks
    assert answer.stream is not None
    assert answer.stream.taken <= LIMIT // 4096 + 2


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("provider", CLIENTS)
def test_a_body_within_the_limit_is_read(provider, mode):
    answer = Served(wire_bytes(WHOLE[provider]), "application/json")
    model = build(provider, answer, max_response_bytes=len(wire_bytes(WHOLE[provider])))
    call(model, mode)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("provider", CLIENTS)
def test_a_declared_content_length_past_the_limit_is_refused_before_reading(provider, mode):
    answer = served(provider, mode, 4 * LIMIT)
    answer.length = 4 * LIMIT
    model = build(provider, answer, max_response_bytes=LIMIT)
    with pytest.raises(MalformedResponseError, match="Content-Length"):
        call(model, mode)
    assert answer.stream is not None
    assert answer.stream.taken == 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
def test_the_default_limit_stops_a_50_mb_body_early(provider, mode):
    piece = b"x" * MiB

    def body() -> Iterator[bytes]:
        if mode in ("stream", "astream"):
            yield STREAM_PREFIX[provider]
        yield b'{"pad":"'
        for _ in range(50):
            yield piece

    answer = Served(body, STREAM_TYPE[provider] if "stream" in mode else "application/json")
    model = build(provider, answer)
    with pytest.raises(MalformedResponseError, match=r"max_response_bytes=33554432 \(32 MiB\)"):
        call(model, mode)
    assert answer.stream is not None
    assert answer.stream.taken <= 35  # 32 MiB and a little, not 50


@pytest.mark.parametrize("mode", ["stream", "astream"])
@pytest.mark.parametrize("provider", CLIENTS)
def test_stream_lines_within_the_limit_are_read(provider, mode):
    # many lines, each under the limit, add up to far more than it: only a line counts
    streams = {
        "openai": "openai/stream_text.txt",
        "anthropic": "anthropic/stream_text.txt",
        "ollama": "ollama/stream_text.ndjson",
    }
    body = wire_bytes(streams[provider])
    longest = max(len(line) for line in body.split(b"\n"))
    assert len(body) > 2 * longest
    answer = Served(body, STREAM_TYPE[provider], size=7)
    call(build(provider, answer, max_response_bytes=longest + 2), mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", CLIENTS)
def test_an_error_body_past_the_limit_keeps_its_status(provider, mode):
    answer = Served(b"<html>" + b"x" * (8 * LIMIT), "text/html", status=503)
    model = build(provider, answer, max_response_bytes=LIMIT, transport_retry=False)
    with pytest.raises(ModelServerError) as caught:
        call(model, mode)
    assert caught.value.status == 503
    assert len(str(caught.value)) < 1000
    # only the start of the page was read (64 KiB at most, here the 64 KiB limit)
    assert answer.stream is not None
    assert answer.stream.taken <= LIMIT // 4096 + 1


@pytest.mark.parametrize("value", [0, -1, 1.5, "32MiB", True])
@pytest.mark.parametrize("provider", CLIENTS)
def test_a_bad_limit_is_a_usage_error(provider, value):
    with pytest.raises(UsageError, match=r"max_response_bytes=.*use an int"):
        CLIENTS[provider]("m", base_url=BASE[provider], max_response_bytes=value)  # type: ignore[call-arg]


@pytest.mark.parametrize("provider", CLIENTS)
def test_none_means_no_limit(provider):
    answer = Served(padded_json(4 * LIMIT), "application/json")
    model = build(provider, answer, max_response_bytes=None)
    with pytest.raises(MalformedResponseError) as caught:  # read whole, then parsed
        call(model, "sync")
    assert "max_response_bytes" not in str(caught.value)
    assert model.max_response_bytes is None


@pytest.mark.parametrize("provider", CLIENTS)
def test_the_default_is_32_mib(provider):
    model = CLIENTS[provider]("m", base_url=BASE[provider])
    assert model.max_response_bytes == 32 * MiB


@pytest.mark.parametrize("mode", MODES)
def test_the_refusal_never_shows_a_key_even_in_part(mode):
    # the key sits across the 2,000-byte head the error keeps
    key = "sk-test-0123456789abcdef"
    filler = b"x" * (1990 - len(b'{"pad":"'))
    body = b'{"pad":"' + filler + key.encode() + b"y" * (4 * LIMIT) + b'"}'
    if mode in ("stream", "astream"):
        answer = Served(framed("openai", body), STREAM_TYPE["openai"])
    else:
        answer = Served(body, "application/json")
    with pytest.raises(MalformedResponseError) as caught:
        call(build("openai", answer, max_response_bytes=LIMIT), mode)
    for text in (str(caught.value), caught.value.body):
        assert "sk-test" not in text
        assert key[:8] not in text
