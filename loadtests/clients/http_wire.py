"""One keep-alive HTTP/1.1 connection for inference requests, on a gevent socket.

The whole request (request line, headers, body) is bytes built before the test and
written with one `send` (gevent's `sendall` for what a full socket buffer leaves); the
response is parsed by `http_protocol.ResponseParser` as it is read (only what a Triton
inference response needs; interim `1xx` responses skipped), a large body read into one buffer
of its length. This module is the socket around it: connect, TLS, send, read, the idle check,
and the deadline. The timeout bounds the whole
exchange (write and every read), not each read. A kept-alive connection the server timed
out while idle (closed, or a `408` written before closing) costs a reconnect, not a failure.
geventhttpclient did the same exchange with a general header parser, a per-request
`select()` liveness check of the pooled socket and a Timeout object (bench/client-cost.md).

Example:
    connection = HttpConnection("127.0.0.1", 8000, connect_timeout_s=5, timeout_s=10)
    request = build_request("127.0.0.1:8000", "/v2/models/identity/infer", body, {})
    status, infer_header_length, body = connection.exchange(request)
"""

from __future__ import annotations

import socket
import ssl
import time

import gevent.select
import gevent.socket

from loadtests.clients.http_protocol import Response, ResponseParser
from loadtests.clients.outcome import TimedChunks

READ_CHUNK = 64 * 1024
# A kept-alive connection idle for longer than this is checked (a non-blocking peek) before
# it is reused, so a server that closed it in between costs a reconnect, not a failure.
IDLE_CHECK_S = 1.0


def build_request(
    authority: str,
    path: str,
    body: bytes,
    headers: dict[str, str],
    method: str = "POST",
    content_type: str = "application/octet-stream",
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {authority}"]
    if method == "POST":
        lines.append(f"Content-Length: {len(body)}")
        lines.append(f"Content-Type: {content_type}")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def send_all(sock: gevent.socket.socket, data: bytes, deadline: float) -> None:
    """Write `data` whole: one non-blocking send() takes a small request (gevent's sendall() adds
    a getsockopt() call and a memoryview every time); the rest, if any, goes through sendall()
    by the deadline. Plaintext sockets only: a TLS socket encrypts in its own sendall()."""
    try:
        sent = sock._sock.send(data)  # gevent keeps the OS socket non-blocking underneath
    except BlockingIOError:
        sent = 0
    if sent < len(data):
        sock.settimeout(remaining(deadline))
        sock.sendall(memoryview(data)[sent:])
        sock.settimeout(remaining(deadline))  # for the first read


class HttpConnection:
    """A lazily (re)opened connection; any failure closes it, so a late response is never
    read as the next request's."""

    def __init__(
        self, host: str, port: int, connect_timeout_s: float, timeout_s: float, tls: ssl.SSLContext | None = None
    ) -> None:
        self.host, self.port = host, port
        self.connect_timeout_s, self.timeout_s = connect_timeout_s, timeout_s
        self.tls = tls  # a gevent.ssl.SSLContext for https://, else None
        self._sock = None
        self._last_used = 0.0

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self):
        if self._sock is not None and time.monotonic() - self._last_used > IDLE_CHECK_S and self._closed_by_peer():
            self.close()
        if self._sock is None:
            sock = gevent.socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                try:  # the handshake within the connect timeout
                    sock = self.tls.wrap_socket(sock, server_hostname=self.host)
                except BaseException:
                    sock.close()
                    raise
            sock.settimeout(self.timeout_s)  # per read or write, as geventhttpclient's network_timeout
            self._sock = sock
        return self._sock

    def _closed_by_peer(self) -> bool:
        if self.tls is not None:
            # TLS cannot peek at its plaintext. Nothing is due on an idle HTTP/1.1 connection:
            # readable bytes are the server's close_notify or EOF, either way it is closing.
            return self._sock.pending() > 0 or bool(gevent.select.select([self._sock], [], [], 0)[0])
        # A zero timeout makes gevent's recv raise on EWOULDBLOCK: with any other timeout it
        # waits for readability whatever the flags (MSG_DONTWAIT included), and a healthy idle
        # connection then waited the whole request timeout.
        sock = self._sock
        sock.settimeout(0.0)
        try:
            sock.recv(1, socket.MSG_PEEK)
            return True  # EOF, or bytes nothing asked for (a 408 before the server closes)
        except BlockingIOError:
            return False  # nothing to read: still open
        except OSError:
            return True
        finally:
            sock.settimeout(self.timeout_s)

    def exchange(self, request: bytes, timed: TimedChunks | None = None) -> tuple[int, int | None, bytes]:
        """Send one request, read its response: (status, Inference-Header-Content-Length, body),
        all within the timeout. Raises OSError (refused, reset, timeout) or ResponseError; the
        connection is closed then. `timed` (a streamed answer, http_stream.py) gets each piece
        of a chunked body as it is read, with its time, and an empty piece at the body's end:
        what arrived before a failure stays there."""
        deadline = time.monotonic() + self.timeout_s
        reused = self._sock is not None
        result = self._exchange(request, deadline, timed)
        if result[0] == 408 and reused and self._sock is None:
            # The server timed the kept-alive connection out as the request went: never processed.
            result = self._exchange(request, deadline, timed)
        return result

    def _exchange(self, request: bytes, deadline: float, timed: TimedChunks | None) -> tuple[int, int | None, bytes]:
        try:
            sock = self._socket()
            if self.tls is None:
                send_all(sock, request, deadline)
            else:  # the OS socket under a TLS one must never see plaintext
                sock.settimeout(remaining(deadline))
                sock.sendall(request)
                sock.settimeout(remaining(deadline))
            result, keep_alive = read_response(sock, deadline, timed)
        except BaseException:
            self.close()
            raise
        if keep_alive:
            self._last_used = time.monotonic()
            if sock.timeout != self.timeout_s:  # a read or write that waited shortened it
                sock.settimeout(self.timeout_s)
        else:
            self.close()
        return result


def remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


def read_response(sock, deadline: float, timed: TimedChunks | None = None) -> Response:
    """Read one response (http_protocol.ResponseParser parses it): the first read waits the
    socket's timeout (the request's own when the write did not wait); any later read, what is
    left of it. A large body goes straight into its one buffer (the parser's `body_space`)."""
    parser = ResponseParser(timed)
    result = parser.feed(sock.recv(READ_CHUNK))
    while result is None:
        sock.settimeout(remaining(deadline))
        space = parser.body_space  # a large body: read straight into its buffer
        result = parser.feed(sock.recv(READ_CHUNK)) if space is None else parser.filled(sock.recv_into(space))
    return result
