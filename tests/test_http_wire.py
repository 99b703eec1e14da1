"""The HTTP data plane's response reading, against a scripted server for what Triton does not
send by itself: chunked bodies, `Connection: close`, a kept-alive socket the server closed
while idle, and a truncated body. (Triton's own responses go through it in every HTTP test.)"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager

import pytest

from loadtests.clients import http_wire
from loadtests.clients.http_wire import ConnectionClosed, HttpConnection, build_request


@contextmanager
def scripted_server(answers: list[bytes], close_after_each: bool):
    """Answers each request (read up to its blank line and Content-Length body) with the next
    of `answers`; closes the connection after each answer when asked. Yields (port, connections)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def serve() -> None:
        pending = list(answers)
        while pending:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            with conn:
                while pending:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    if not data:
                        break
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":")[1])
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length")
                        ),
                        0,
                    )
                    while len(body) < length:
                        body += conn.recv(65536)
                    conn.sendall(pending.pop(0))
                    if close_after_each:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        listener.close()
        thread.join(timeout=5)


def request(port: int) -> bytes:
    return build_request(f"127.0.0.1:{port}", "/v2/models/m/infer", b"xyz", {"Inference-Header-Content-Length": "3"})


def test_chunked_body_and_connection_close_reconnect():
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nInference-Header-Content-Length: 2\r\n"
        b"Connection: close\r\n\r\n4\r\n{}ab\r\n3\r\ncde\r\n0\r\n\r\n"
    )
    plain = b'HTTP/1.1 400 Bad Request\r\nContent-Length: 13\r\n\r\n{"error":"x"}'
    with scripted_server([chunked, plain], close_after_each=True) as (port, accepted):
        connection = HttpConnection("127.0.0.1", port, 2.0, 2.0)
        assert connection.exchange(request(port)) == (200, 2, b"{}abcde")
        assert connection.exchange(request(port)) == (400, None, b'{"error":"x"}')
        connection.close()
    assert len(accepted) == 2  # the server said close: the second request opened a new connection


def test_idle_socket_closed_by_the_server_is_replaced_before_sending(monkeypatch):
    monkeypatch.setattr(http_wire, "IDLE_CHECK_S", 0.0)
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    # The server closes after each answer without saying so (as an idle timeout would).
    with scripted_server([ok, ok], close_after_each=True) as (port, accepted):
        connection = HttpConnection("127.0.0.1", port, 2.0, 2.0)
        assert connection.exchange(request(port)) == (200, None, b"ok")
        threading.Event().wait(0.2)  # let the close reach this side
        assert connection.exchange(request(port)) == (200, None, b"ok")
        connection.close()
    assert len(accepted) == 2


def test_truncated_body_is_a_closed_connection():
    truncated = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"
    with scripted_server([truncated], close_after_each=True) as (port, _):
        connection = HttpConnection("127.0.0.1", port, 2.0, 2.0)
        with pytest.raises(ConnectionClosed):
            connection.exchange(request(port))


def test_an_idle_socket_the_server_keeps_open_is_reused_without_waiting(monkeypatch):
    """The idle check must not block: gevent's socket waits for readability on EWOULDBLOCK
    whatever the flags, so a peek with MSG_DONTWAIT on a healthy idle connection waited the
    whole request timeout (seen as open-loop requests of 10 s and interrupted ones at the stop)."""
    monkeypatch.setattr(http_wire, "IDLE_CHECK_S", 0.0)
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    timeout_s = 20.0
    with scripted_server([ok, ok], close_after_each=False) as (port, accepted):
        connection = HttpConnection("127.0.0.1", port, 2.0, timeout_s)
        assert connection.exchange(request(port)) == (200, None, b"ok")
        started = time.monotonic()
        assert connection.exchange(request(port)) == (200, None, b"ok")
        waited_s = time.monotonic() - started
        connection.close()
    assert waited_s < timeout_s / 2, f"the idle check waited {waited_s:.1f} s"
    assert accepted == [1]  # the same connection
