"""One keep-alive HTTP/1.1 connection for inference requests, on a gevent socket.

The whole request (request line, headers, body) is bytes built before the test and
written with one `send` (gevent's `sendall` for what a full socket buffer leaves); the
response is read into a buffer and only what a Triton inference response needs is parsed:
the status code, Content-Length (or chunked framing), Triton's
`Inference-Header-Content-Length` and `Connection: close`. Interim `1xx` responses are
skipped; a large body is read into one buffer of its length. The timeout bounds the whole
exchange (write and every read), not each read. A kept-alive connection the server timed
out while idle (closed, or a `408` written before closing) costs a reconnect, not a failure.
geventhttpclient did the same exchange with a general header parser, a per-request
`select()` liveness check of the pooled socket and a Timeout object (docs/explanation/performance.md).

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

from loadtests.clients.outcome import TimedChunks

READ_CHUNK = 64 * 1024
# A kept-alive connection idle for longer than this is checked (a non-blocking peek) before
# it is reused, so a server that closed it in between costs a reconnect, not a failure.
IDLE_CHECK_S = 1.0


class ResponseError(Exception):
    """The server's bytes are not a complete HTTP/1.1 response."""


class ConnectionClosed(ConnectionResetError):
    """The server closed the connection before the response was complete."""


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


def recv(sock, deadline: float, where: str) -> bytes:
    sock.settimeout(remaining(deadline))
    chunk = sock.recv(READ_CHUNK)
    if not chunk:
        raise ConnectionClosed(f"connection closed {where}")
    return chunk


def read_response(
    sock, deadline: float, timed: TimedChunks | None = None
) -> tuple[tuple[int, int | None, bytes], bool]:
    """The first read waits the socket's timeout (the request's own when the write did not wait);
    any later read, what is left of it."""
    buffer = bytearray(sock.recv(READ_CHUNK))
    if not buffer:
        raise ConnectionClosed("connection closed before the response headers")
    while True:
        head_end = buffer.find(b"\r\n\r\n")
        if head_end < 0:
            buffer += recv(sock, deadline, "before the response headers")
            continue
        status_line, _, header_text = bytes(buffer[:head_end]).decode("latin-1").partition("\r\n")
        try:
            status = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            raise ResponseError(f"not an HTTP status line: {status_line[:80]!r}") from None
        del buffer[: head_end + 4]
        if status >= 200 or status == 101:
            break
        # An interim response (100 Continue, 103 Early Hints): the final one follows.
    content_length = infer_header = None
    chunked = False
    keep_alive = not status_line.startswith("HTTP/1.0")
    for line in header_text.split("\r\n"):
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            content_length = int(value)
        elif name == "inference-header-content-length":
            infer_header = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            keep_alive = value.strip().lower() != "close"
    if chunked:
        body = read_chunked(sock, buffer, deadline, timed)
    elif content_length is not None:
        body = read_body(sock, buffer, content_length, deadline)
    else:  # the body runs to the end of the connection
        sock.settimeout(remaining(deadline))
        while chunk := sock.recv(READ_CHUNK):
            buffer += chunk
            sock.settimeout(remaining(deadline))
        body, keep_alive = bytes(buffer), False
    return (status, infer_header, body), keep_alive


def read_body(sock, rest: bytearray, length: int, deadline: float) -> bytes:
    """`length` bytes, `rest` of them already read: the remainder goes into one buffer of the
    body's size (a recv() per piece allocated the whole remainder each time)."""
    if len(rest) >= length:
        return bytes(rest[:length])
    body = bytearray(length)
    body[: len(rest)] = rest
    view, got = memoryview(body), len(rest)
    while got < length:
        sock.settimeout(remaining(deadline))
        received = sock.recv_into(view[got:])
        if not received:
            raise ConnectionClosed("connection closed in the middle of the response body")
        got += received
    view.release()
    return bytes(body)


def read_chunked(sock, data: bytearray, deadline: float, timed: TimedChunks | None = None) -> bytes:
    body = bytearray()
    where = "in the middle of a chunked body"
    while True:
        while (line_end := data.find(b"\r\n")) < 0:
            data += recv(sock, deadline, where)
        try:
            size = int(bytes(data[:line_end]).split(b";")[0], 16)
        except ValueError:
            raise ResponseError("malformed chunk size") from None
        del data[: line_end + 2]
        while len(data) < size + 2:
            data += recv(sock, deadline, where)
        if size == 0:
            if timed is not None:
                timed.append(b"")  # the body's end: a stream's final response
            return bytes(body)  # (trailers, if any, are not used)
        if timed is not None:
            timed.append(bytes(data[:size]))
        body += data[:size]
        del data[: size + 2]
