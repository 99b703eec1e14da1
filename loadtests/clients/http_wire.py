"""One keep-alive HTTP/1.1 connection for inference requests, on a gevent socket.

The whole request (request line, headers, body) is bytes built before the test and
written with one `send` (gevent's `sendall` for what a full socket buffer leaves); the
response is read into a buffer and only what a Triton inference response needs is parsed:
the status code, Content-Length (or chunked framing), Triton's
`Inference-Header-Content-Length` and `Connection: close`.
geventhttpclient did the same exchange with a general header parser, a per-request
`select()` liveness check of the pooled socket and a Timeout object (docs/performance.md).

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

READ_CHUNK = 64 * 1024
# A kept-alive connection idle for longer than this is checked (a non-blocking peek) before
# it is reused, so a server that closed it in between costs a reconnect, not a failure.
IDLE_CHECK_S = 1.0


class ResponseError(Exception):
    """The server's bytes are not a complete HTTP/1.1 response."""


class ConnectionClosed(ConnectionResetError):
    """The server closed the connection before the response was complete."""


def build_request(authority: str, path: str, body: bytes, headers: dict[str, str], method: str = "POST") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {authority}"]
    if method == "POST":
        lines.append(f"Content-Length: {len(body)}")
        lines.append("Content-Type: application/octet-stream")
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def send_all(sock: gevent.socket.socket, data: bytes) -> None:
    """Write `data` whole: one non-blocking send() takes a small request (gevent's sendall() adds
    a getsockopt() call and a memoryview every time); the rest, if any, goes through sendall().
    Plaintext sockets only: a TLS socket encrypts in its own sendall() (HttpConnection.exchange)."""
    try:
        sent = sock._sock.send(data)  # gevent keeps the OS socket non-blocking underneath
    except BlockingIOError:
        sent = 0
    if sent < len(data):
        sock.sendall(memoryview(data)[sent:])


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
            return sock.recv(1, socket.MSG_PEEK) == b""
        except BlockingIOError:
            return False  # nothing to read: still open
        except OSError:
            return True
        finally:
            sock.settimeout(self.timeout_s)

    def exchange(self, request: bytes) -> tuple[int, int | None, bytes]:
        """Send one request, read its response: (status, Inference-Header-Content-Length, body).
        Raises OSError (refused, reset, timeout) or ResponseError; the connection is closed then."""
        try:
            sock = self._socket()
            if self.tls is None:
                send_all(sock, request)
            else:  # the OS socket under a TLS one must never see plaintext
                sock.sendall(request)
            result, keep_alive = self._read_response(sock)
        except BaseException:
            self.close()
            raise
        if keep_alive:
            self._last_used = time.monotonic()
        else:
            self.close()
        return result

    @staticmethod
    def _read_response(sock) -> tuple[tuple[int, int | None, bytes], bool]:
        buffer = bytearray()
        while True:
            head_end = buffer.find(b"\r\n\r\n")
            if head_end >= 0:
                break
            chunk = sock.recv(READ_CHUNK)
            if not chunk:
                raise ConnectionClosed("connection closed before the response headers")
            buffer += chunk
        head = bytes(buffer[:head_end]).decode("latin-1")
        status_line, _, header_text = head.partition("\r\n")
        try:
            status = int(status_line.split(" ", 2)[1])
        except (IndexError, ValueError):
            raise ResponseError(f"not an HTTP status line: {status_line[:80]!r}") from None
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
        rest = buffer[head_end + 4 :]
        if chunked:
            body = HttpConnection._read_chunked(sock, rest)
        elif content_length is not None:
            while len(rest) < content_length:
                chunk = sock.recv(max(READ_CHUNK, content_length - len(rest)))
                if not chunk:
                    raise ConnectionClosed("connection closed in the middle of the response body")
                rest += chunk
            body = bytes(rest[:content_length])
        else:  # the body runs to the end of the connection
            while chunk := sock.recv(READ_CHUNK):
                rest += chunk
            body, keep_alive = bytes(rest), False
        return (status, infer_header, body), keep_alive

    @staticmethod
    def _read_chunked(sock, data: bytearray) -> bytes:
        body = bytearray()
        while True:
            while (line_end := data.find(b"\r\n")) < 0:
                data += HttpConnection._recv(sock)
            try:
                size = int(bytes(data[:line_end]).split(b";")[0], 16)
            except ValueError:
                raise ResponseError("malformed chunk size") from None
            del data[: line_end + 2]
            while len(data) < size + 2:
                data += HttpConnection._recv(sock)
            if size == 0:
                return bytes(body)  # (trailers, if any, are not used)
            body += data[:size]
            del data[: size + 2]

    @staticmethod
    def _recv(sock) -> bytes:
        chunk = sock.recv(READ_CHUNK)
        if not chunk:
            raise ConnectionClosed("connection closed in the middle of a chunked body")
        return chunk
