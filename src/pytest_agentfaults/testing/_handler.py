"""The loopback server's connections: requests read within limits, replies done on the socket.

A `Reply` says what to do on the socket: answer (a body, or a chunked stream), cut the
answer mid-way, drop the connection before the headers, reset it, or hold it until the
client gives up. `Handler` reads each request of a keep-alive connection with `_httpd`
and hands it to the `Endpoint`'s ``serve``, which decides the reply and does it with
`send`. What the client got instead of an answer is recorded as the error it saw
(`error_record`, `held_record`, `gave_up_record`).
"""

from __future__ import annotations

import contextlib
import http.server
import select
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pytest_agentfaults.runtime.events import ErrorRecord
from pytest_agentfaults.testing._httpd import (
    Limits,
    Reader,
    Refused,
    drain,
    expects_body,
    read_body,
    read_head,
)
from pytest_agentfaults.testing._wire import JSON_TYPE, error_body, status_phrase

__tracebackhide__ = True  # pytest shows the user's frames, not the kit's (CONTRIBUTING.md)
__all__ = [
    "Endpoint",
    "HTTPServer",
    "Handler",
    "Reply",
    "error_record",
    "gave_up_record",
    "held_record",
    "send",
]


@dataclass(slots=True)
class Reply:
    """What to do on the socket: answer, stream (maybe cut or stalled), drop, reset or hold."""

    kind: Literal["answer", "cut", "drop", "reset", "hold", "stall"]
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)  # the body, or the stream's events
    stream: bool = False
    retry_after: float | None = None
    fault: str | None = None  # the fault kind (or the failure step) behind this reply
    first_delay: float | None = None  # slow_first_token: real seconds before the body
    #: called when a held body goes out (the client waited for it): the step is taken then
    on_sent: Callable[[], None] | None = None


@dataclass(slots=True)
class Endpoint:
    """What the connections serve: the limits, the request handler and the crash report."""

    limits: Limits
    #: answers one request read in full: ``serve(handler, method, path, body)``
    serve: Callable[[Handler, str, str, bytes], None]
    #: told of an exception of ours while serving (a bug: it fails the test)
    crashed: Callable[[Exception], None]
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the open connections, closed by the server's stop
    connections: set[socket.socket] = field(default_factory=set)


class HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    endpoint: Endpoint


class Handler(http.server.BaseHTTPRequestHandler):
    """One connection: requests in a keep-alive loop, parsed without the email package."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: HTTPServer
    fields: dict[str, str]
    reader: Reader
    served: int  # requests served on this connection

    def setup(self) -> None:
        super().setup()
        endpoint = self.server.endpoint
        self.reader = Reader(self.connection, endpoint.limits)
        self.served = 0
        with endpoint.lock:
            endpoint.connections.add(self.connection)

    def finish(self) -> None:
        endpoint = self.server.endpoint
        with endpoint.lock:
            endpoint.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: a test's output is not the place for an access log."""

    def handle_one_request(self) -> None:
        """Read one request within the server's limits (see `_httpd`) and serve it."""
        try:
            head = read_head(self.reader)
            if head is None:
                self.close_connection = True
                return
            self.command, self.path, self.request_version = head.method, head.path, head.version
            self.fields = headers = head.fields
            connection = headers.get("connection", "").lower()
            self.close_connection = connection == "close" or (
                self.request_version == "HTTP/1.0" and connection != "keep-alive"
            )
            limits = self.server.endpoint.limits
            if headers.get("expect", "").lower() == "100-continue" and expects_body(
                headers, limits
            ):
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            body = read_body(self.reader, headers, limits)
            self.reader.stop()
            self.served += 1
            self.server.endpoint.serve(self, self.command, self.path, body)
        except Refused as refused:
            self._refuse(refused.status, refused.message)
        except TimeoutError:
            if self.reader.started:
                self._refuse(408, "the request did not arrive in full within the idle timeout")
            elif not self.served:
                self._refuse(408, "the connection was idle; no request arrived")
            else:
                # a keep-alive connection idle between requests closes quietly: an answer
                # nobody asked for could be read as the answer to a pooled client's next one
                self.close_connection = True
        except (ConnectionError, ValueError):
            self.close_connection = True
        except Exception as exc:  # a bug of ours: fail the test, never look like a flaky network
            self.close_connection = True
            self.server.endpoint.crashed(exc)
            with contextlib.suppress(OSError):
                body = error_body(None, 500, f"agentfaults llm_server crashed: {exc!r}")
                self.wfile.write(_head(500, [], f"content-length: {len(body)}") + body)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` and close gently (the unread rest of the request is drained)."""
        self.close_connection = True
        body = error_body(None, status, f"agentfaults llm_server: {message}")
        headers = [("content-type", JSON_TYPE), ("connection", "close")]
        with contextlib.suppress(OSError):
            self.reader.stop()
            self.wfile.write(_head(status, headers, f"content-length: {len(body)}") + body)
            drain(self.connection, self.server.endpoint.limits.idle_timeout)


def _head(status: int, headers: Iterable[tuple[str, str]], extra: str) -> bytes:
    lines = [f"HTTP/1.1 {status} {status_phrase(status)}"]
    lines.extend(f"{name}: {value}" for name, value in headers)
    lines.append(extra)
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def send(handler: Handler, reply: Reply, hold: float) -> str | None:
    """Do ``reply`` on the handler's socket; ``"held"`` when a hold ran out.

    ``"gone"`` when the client closed the connection while a held first chunk
    (``first_delay``) waited: it gave up on the answer and never read it.
    """
    write = handler.wfile.write
    try:
        if reply.kind == "answer":
            if reply.stream:
                head = _head(reply.status, reply.headers, "transfer-encoding: chunked")
                payload = b"".join(_chunk(c) for c in reply.chunks if c) + b"0\r\n\r\n"
            else:
                body = b"".join(reply.chunks)
                head = _head(reply.status, reply.headers, f"content-length: {len(body)}")
                payload = body
            if reply.first_delay is None:
                write(head + payload)
                return None
            write(head)
            handler.wfile.flush()
            if _hold(handler.connection, min(reply.first_delay, hold)) is None:
                handler.close_connection = True
                return "gone"  # the client gave up before the first chunk
            if reply.on_sent is not None:
                reply.on_sent()
            try:
                write(payload)
            except OSError:  # it gave up as the first chunk went out
                handler.close_connection = True
                return "gone"
            return None
        handler.close_connection = True
        if reply.kind == "cut":
            body = b"".join(reply.chunks)
            if reply.stream:
                write(_head(200, reply.headers, "transfer-encoding: chunked") + _chunk(body))
            else:
                declared = f"content-length: {len(body) * 2 + 1}"
                write(_head(200, reply.headers, declared) + body)
        elif reply.kind == "reset":
            # SO_LINGER 0: closing sends RST, not FIN
            handler.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
            handler.connection.close()
        elif reply.kind == "hold":
            return _hold(handler.connection, hold)
        elif reply.kind == "stall":  # some of the answer, then nothing: the client gives up
            if reply.stream:
                sent = b"".join(_chunk(c) for c in reply.chunks if c)
                write(_head(200, reply.headers, "transfer-encoding: chunked") + sent)
            else:
                write(_head(200, reply.headers, "content-length: 1000"))
            handler.wfile.flush()
            return _hold(handler.connection, hold)
    except OSError:  # the client went away first: nothing left to tell it
        handler.close_connection = True
    return None


def _hold(connection: socket.socket, hold: float) -> str | None:
    """Wait until the client closes the connection (it timed out), at most ``hold`` s."""
    readable, _, _ = select.select([connection], [], [], hold)
    if not readable:
        return "held"
    try:
        data = connection.recv(1, socket.MSG_PEEK)
    except OSError:
        return None
    return None if not data else "held"


_REASONS: Final = {
    "hold": ("ReadTimeout", "the server held the response until the client gave up"),
    "drop": ("RemoteProtocolError", "the server dropped the connection before the headers"),
    "reset": ("ConnectionResetError", "the server reset the connection"),
    "cut": ("RemoteProtocolError", "the server cut the response off mid-way"),
    "stall": ("ReadTimeout", "the stream stalled until the client gave up"),
}


def error_record(reply: Reply) -> ErrorRecord:
    """What the client of a ``reply`` that is not an answer saw."""
    name, message = _REASONS.get(reply.kind, ("Error", "the exchange failed"))
    if reply.kind == "cut" and reply.fault == "read_error":
        name = "ReadError"
    return ErrorRecord(type=name, message=message, kind="runtime", retryable=True)


def held_record(reply: Reply, hold: float) -> ErrorRecord:
    """A hold (or a stall) no client gave up on: the server ended it by dropping the line."""
    what = "stalled the stream" if reply.kind == "stall" else "held the response"
    return ErrorRecord(
        type="RemoteProtocolError",
        message=f"the server {what} {hold:g}s, then dropped the connection: the client "
        "never gave up",
        kind="runtime",
        retryable=True,
    )


def gave_up_record(reply: Reply) -> ErrorRecord:
    """A held first chunk the client did not wait for: its read timeout, as in-process.

    The server sees only the connection closed; a client closes it before reading an
    answer it asked for when its read timeout fired (the in-process layer raises
    ``ReadTimeout`` there too), so that is what is recorded.
    """
    return ErrorRecord(
        type="ReadTimeout",
        message=f"the client closed the connection before the first chunk, held "
        f"{reply.first_delay:g}s ({reply.fault or 'slow_first_token'}), went out: it gave up "
        "waiting",
        kind="runtime",
        retryable=True,
    )
