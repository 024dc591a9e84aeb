"""`LineBuffer`: the same lines however the bytes are chunked, and a per-line size limit."""

from __future__ import annotations

import random

import pytest

from pytest_agentfaults.runtime.models._limits import TooLargeError
from pytest_agentfaults.runtime.models._stream import LineBuffer
from pytest_agentfaults.runtime.models._wire import WireFormatError

# LF, CRLF, a lone CR inside a line (not a line end here), CRs before an LF, an empty
# line, multi-byte characters (2, 3 and 4 bytes) and an unterminated last line.
MIXED = (
    'data: {"a": "café"}\r\n'
    "\r\n"
    "event: ping\n"
    "data: half\rway\n"
    "\n"
    "data: 雪 and 🎉\r\r\n"
    ": comment\r\n"
    "data: last without an end"
).encode()


def expected(body: bytes) -> list[str]:
    """What the stream holds: each line without its end, and an unterminated last line."""
    *complete, rest = body.split(b"\n")
    lines = [line.rstrip(b"\r").decode() for line in complete]
    if rest.strip():
        lines.append(rest.rstrip(b"\r").decode())
    return lines


def read(pieces: list[bytes], **options: int | None) -> list[str]:
    buffer = LineBuffer(**options)
    lines: list[str] = []
    for piece in pieces:
        lines.extend(buffer.feed(piece))
    last = buffer.finish()
    if last is not None:
        lines.append(last)
    assert buffer.size == sum(len(p) for p in pieces)
    return lines


def test_the_reference_reading_of_the_mixed_body():
    assert expected(MIXED) == [
        'data: {"a": "café"}',
        "",
        "event: ping",
        "data: half\rway",
        "",
        "data: 雪 and 🎉",
        ": comment",
        "data: last without an end",
    ]


def test_one_chunk():
    assert read([MIXED]) == expected(MIXED)


@pytest.mark.parametrize("cut", range(1, len(MIXED)))
def test_a_split_at_every_boundary(cut):
    assert read([MIXED[:cut], MIXED[cut:]]) == expected(MIXED)


def test_two_splits_at_every_pair_of_boundaries():
    want = expected(MIXED)
    for first in range(1, len(MIXED)):
        for second in range(first, len(MIXED)):
            pieces = [MIXED[:first], MIXED[first:second], MIXED[second:]]
            assert read(pieces) == want, (first, second)


def test_one_byte_at_a_time():
    assert read([MIXED[i : i + 1] for i in range(len(MIXED))]) == expected(MIXED)


def test_random_chunkings_with_empty_chunks():
    rng = random.Random(20261123)
    body = MIXED * 40 + b"\n"
    want = expected(body)
    for _ in range(200):
        pieces, start = [], 0
        while start < len(body):
            size = rng.choice([0, 1, 2, 3, 5, 8, 64, 500])
            pieces.append(body[start : start + size])
            start += size
        assert read(pieces) == want


def test_crlf_split_between_the_cr_and_the_lf():
    assert read([b"data: a\r", b"\ndata: b\r", b"\n"]) == ["data: a", "data: b"]


def test_a_large_line_in_many_chunks():
    line = ("data: " + "é" * 1_500_000 + "!").encode()  # about 3 MB
    body = line + b"\r\n\r\n" + line + b"\n"
    size = 4093  # odd, so many chunks cut a character in two
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    lines = read(pieces)
    assert lines == [line.decode(), "", line.decode()]


def test_the_head_and_tail_are_kept_for_messages():
    buffer = LineBuffer()
    for index in range(1000):
        buffer.feed(f"data: {index}\n".encode())
    assert buffer.transcript().startswith("data: 0\ndata: 1\n")
    assert buffer.excerpt().endswith("data: 999")
    assert len(buffer.head) == len(buffer.tail) == 2000


def test_invalid_utf8_in_a_split_line_names_the_line():
    buffer = LineBuffer()
    buffer.feed(b"data: ok\ndata: ca")
    with pytest.raises(WireFormatError, match="line 2 of the stream is not valid UTF-8"):
        buffer.feed(b"f\xc3\n")


def test_a_line_at_the_limit_is_read():
    line = b"x" * 100
    assert read([line[:50], line[50:], b"\r\n"], max_line=100) == ["x" * 100]
    assert read([line], max_line=100) == ["x" * 100]


@pytest.mark.parametrize("cut", [1, 50, 100, 101])
def test_a_line_past_the_limit_is_refused_as_it_grows(cut):
    buffer = LineBuffer(max_line=100)
    body = b"ok\n" + b"y" * 101

    def feed_all() -> None:
        buffer.feed(body[:cut])
        buffer.feed(body[cut:])
        buffer.feed(b"\n")

    with pytest.raises(TooLargeError, match="line 2 of the stream is longer than 100 bytes"):
        feed_all()


def test_a_long_line_inside_one_chunk_is_refused():
    buffer = LineBuffer(max_line=10)
    with pytest.raises(TooLargeError, match="line 2"):
        buffer.feed(b"short\n" + b"z" * 11 + b"\nmore\n")


def test_many_short_lines_add_up_past_the_limit():
    # the limit is per line: the whole stream may be longer
    body = b"0123456789\n" * 1000
    assert len(read([body], max_line=10)) == 1000
