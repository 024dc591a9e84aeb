"""The loopback server cannot be wedged: idle and unfinished requests, bad lengths, huge heads.

Every test speaks raw HTTP over a socket to a server it starts itself on 127.0.0.1. The
idle timeout is 0.05 s here, the only real wait: nothing else sleeps.
"""

from __future__ import annotations

import gc
import json
import select
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator, Sequence

import pytest

from pytest_agentfaults.errors import UsageError
from pytest_agentfaults.testing import say
from pytest_agentfaults.testing.server import LLMServer

IDLE = 0.05
PATH = "/v1/chat/completions"
CHAT = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(idle_timeout=IDLE) as running:
        running.script([say("hello")], on_exhausted="repeat_last")
        yield running


def post(body: bytes = CHAT, *, length: str | None = None, extra: str = "") -> bytes:
    length = str(len(body)) if length is None else length
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n{extra}\r\n"
    return head.encode() + body


def connect(server: LLMServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (5 s at most)."""
    data = bytearray()
    while chunk := sock.recv(65536):
        data += chunk
    return bytes(data)


def exchange(server: LLMServer, pieces: Sequence[bytes]) -> bytes:
    with connect(server) as sock:
        for piece in pieces:
            sock.sendall(piece)
        return until_closed(sock)


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:80]
    return int(answer.split(b" ", 2)[1])


def one_answer(answer: bytes) -> tuple[int, bytes]:
    """The status and body of the single answer in ``answer`` (a content-length one)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert fields["connection"] == "close"
    assert len(body) == int(fields["content-length"])
    return status_of(answer), body


def settled(before: set[threading.Thread]) -> list[threading.Thread]:
    """Join the threads started since ``before``; return those still alive (stuck)."""
    new = [t for t in threading.enumerate() if t not in before]
    for thread in new:
        thread.join(timeout=2)
    return [t for t in new if t.is_alive()]


# ---------------------------------------------------------------------------- idle


def test_an_idle_connection_gets_408_and_is_closed(server):
    with connect(server) as sock:
        status, body = one_answer(until_closed(sock))
    assert status == 408
    assert b"idle" in body
    assert server.requests == []


def test_a_request_that_never_finishes_gets_408_and_is_closed(server):
    # the body is shorter than its Content-Length, then silence
    status, _ = one_answer(exchange(server, [post(length="100")[:-20]]))
    assert status == 408
    status, _ = one_answer(exchange(server, [b"POST /v1/chat/completions HTTP/1.1\r\nHost:"]))
    assert status == 408
    assert server.requests == []


def test_a_keep_alive_connection_left_idle_after_a_request_is_closed(server):
    with connect(server) as sock:
        sock.sendall(post())
        answer = until_closed(sock)
    assert status_of(answer) == 200
    assert answer.count(b"HTTP/1.1 ") == 1  # no unsolicited 408 a pooled client could misread
    assert len(server.requests) == 1


def test_a_head_dribbled_byte_by_byte_is_cut_off_at_the_idle_timeout(server):
    request = post()
    with connect(server) as sock:
        start = time.monotonic()
        for byte in request:
            sock.sendall(bytes([byte]))
            # each byte comes well within the idle timeout of the one before it
            if select.select([sock], [], [], IDLE / 5)[0]:
                break
        answer = until_closed(sock)
        took = time.monotonic() - start
    assert status_of(answer) == 408
    assert took < 20 * IDLE  # the whole request had IDLE seconds, not IDLE per byte


def test_idle_timeout_must_be_positive_seconds():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(UsageError, match=r"LLMServer\(idle_timeout=.*\): give seconds > 0"):
            LLMServer(idle_timeout=bad)


# ---------------------------------------------------------------------------- lengths


@pytest.mark.parametrize("length", ["-1", "abc", "1e15", "0x10", "+5", "5, 5", "", "1 2", "٣"])
def test_a_bad_content_length_gets_400_and_is_closed(server, length):
    status, body = one_answer(exchange(server, [post(length=length)]))
    assert status == 400
    assert b"Content-Length" in body
    assert server.requests == []


def test_an_absurd_content_length_gets_413_and_is_closed(server):
    status, body = one_answer(exchange(server, [post(length="1000000000000000")]))
    assert status == 413
    assert b"request body" in body


def test_conflicting_lengths_get_400(server):
    twice = post(extra="Content-Length: 3\r\n")
    assert one_answer(exchange(server, [twice]))[0] == 400
    both = post(extra="Transfer-Encoding: chunked\r\n")
    assert one_answer(exchange(server, [both]))[0] == 400


@pytest.mark.parametrize("size", [b"-1", b"zz", b"0x10", b"fffffffffffffffff"])
def test_a_bad_chunk_size_gets_4xx_and_is_closed(server, size):
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    status, _ = one_answer(exchange(server, [head + size + b"\r\nabc\r\n0\r\n\r\n"]))
    assert status in (400, 413)


def test_a_chunked_body_is_still_read(server):
    head = f"POST {PATH} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (CHAT[:10], CHAT[10:]))
    with connect(server) as sock:
        sock.sendall(head + chunks + b"0\r\n\r\n")
        assert status_of(sock.recv(65536)) == 200
    assert server.requests[0].json()["model"] == "m"


# ---------------------------------------------------------------------------- heads


def test_an_oversized_header_gets_431_and_is_closed(server):
    big = "X-Big: " + "a" * 70_000 + "\r\n"
    assert one_answer(exchange(server, [post(extra=big)]))[0] == 431
    many = "".join(f"X-Many-{i}: {'b' * 60}\r\n" for i in range(1_200))  # ~80 KiB in all
    assert one_answer(exchange(server, [post(extra=many)]))[0] == 431
    assert server.requests == []


def test_an_oversized_request_line_gets_414(server):
    line = b"POST /v1/" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n"
    assert one_answer(exchange(server, [line]))[0] == 414


def test_headers_just_within_the_limit_are_served(server):
    fine = "".join(f"X-Many-{i}: {'b' * 60}\r\n" for i in range(90))
    with connect(server) as sock:
        sock.sendall(post(extra=fine))
        assert status_of(sock.recv(65536)) == 200


def test_a_header_split_across_many_packets_still_works(server):
    request = post()
    pieces = [request[i : i + 3] for i in range(0, len(request), 3)]
    with connect(server) as sock:
        for piece in pieces:
            sock.sendall(piece)
        first = sock.recv(65536)
        sock.sendall(post())  # and the connection is still good for the next request
        second = sock.recv(65536)
    assert status_of(first) == status_of(second) == 200
    assert len(server.requests) == 2
    assert server.requests[0].json() == json.loads(CHAT)


def test_a_malformed_head_gets_400(server):
    assert one_answer(exchange(server, [b"HELLO\r\n\r\n"]))[0] == 400
    assert one_answer(exchange(server, [b"POST / HTTP/1.1\r\nno colon\r\n\r\n"]))[0] == 400


# ---------------------------------------------------------------------------- bounds


def hostile_requests() -> list[list[bytes]]:
    return [
        [post(length="-1")],
        [post(length="abc")],
        [post(length="1e15")],
        [post(length="99999999999999999999")],
        [post(extra="X-Big: " + "a" * 70_000 + "\r\n")],
        [b"GARBAGE\r\n\r\n"],
    ]


def test_two_thousand_hostile_requests_leave_no_thread_and_no_memory_behind(server):
    kinds = hostile_requests()
    for pieces in kinds * 20:  # warm up: first-time allocations are not growth
        exchange(server, pieces)
    gc.collect()
    before = set(threading.enumerate())
    tracemalloc.start()
    try:
        start = tracemalloc.take_snapshot()
        for i in range(2_000):
            answer = exchange(server, kinds[i % len(kinds)])
            assert 400 <= status_of(answer) < 500
        # and a batch of idle and unfinished ones, all at once
        idle = [connect(server) for _ in range(10)]
        unfinished = [connect(server) for _ in range(10)]
        for sock in unfinished:
            sock.sendall(post(length="100")[:-20])
        for sock in idle + unfinished:
            with sock:
                assert status_of(until_closed(sock)) == 408
        assert settled(before) == []
        gc.collect()
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename"))
    finally:
        tracemalloc.stop()
    assert server.requests == []
    assert server._connections == set()
    assert grown < 256 * 1024, f"memory grew by {grown} bytes over 2,000 hostile requests"


def test_a_stored_body_is_capped_and_the_full_size_kept(server):
    long = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 200_000}]})
    with connect(server) as sock:
        for _ in range(5):
            sock.sendall(post(long.encode()))
            assert status_of(sock.recv(65536)) == 200
        sock.sendall(post())
        assert status_of(sock.recv(65536)) == 200
    *big, small = server.requests
    for received in big:
        assert len(received.body) == server.max_stored_body == 16 * 1024
        assert received.body_size == len(long)
        assert received.truncated
        with pytest.raises(UsageError, match="max_stored_body"):
            received.json()
    assert not small.truncated
    assert small.body_size == len(CHAT)
    assert small.json()["model"] == "m"
    # the trace digests the whole body, not the stored part
    digests = [e.field("body_sha") for e in server.trace.of("http.request")]
    assert digests[0] == digests[1] != digests[-1]


def test_a_bigger_store_can_be_asked_for():
    with LLMServer(max_stored_body=300_000) as server:
        server.script([say("ok")])
        long = json.dumps({"model": "m", "messages": [{"role": "user", "content": "y" * 200_000}]})
        with connect(server) as sock:
            sock.sendall(post(long.encode()))
            assert status_of(sock.recv(65536)) == 200
        assert server.requests[0].json()["messages"][0]["content"] == "y" * 200_000


def test_limits_must_be_positive_ints():
    for name in ("max_header_bytes", "max_body_bytes", "max_stored_body"):
        with pytest.raises(UsageError, match=rf"LLMServer\({name}=-1\): give an int"):
            LLMServer(**{name: -1})


def test_pipelined_requests_and_a_stray_blank_line_are_served(server):
    with connect(server) as sock:
        sock.sendall(post() + b"\r\n" + post())
        answers = b""
        while answers.count(b"HTTP/1.1 200") < 2:
            chunk = sock.recv(65536)
            assert chunk, answers
            answers += chunk
    assert len(server.requests) == 2


def test_the_scripts_view_of_a_huge_request_is_capped_too(server):
    model = server.script([say("ok")], on_exhausted="repeat_last")
    huge = json.dumps({"model": "m", "messages": [{"role": "user", "content": "z" * 300_000}]})
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.take_snapshot()
        with connect(server) as sock:
            for _ in range(20):
                sock.sendall(post(huge.encode()))
                assert status_of(sock.recv(65536)) == 200
        gc.collect()
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename"))
    finally:
        tracemalloc.stop()
    assert len(model.requests) == 20
    text = model.requests[0].messages[0].content
    assert text.startswith("z" * server.max_stored_body)
    assert text.endswith(f"...[{300_000 - server.max_stored_body} more characters]")
    # what one request keeps: about two stored copies of max_stored_body, not 300 KB
    assert grown / 20 < 4 * server.max_stored_body, grown / 20
