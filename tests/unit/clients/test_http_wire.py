"""The HTTP data plane's exchange on a socket, against a scripted HTTP/1.1 server for what
Triton does not do by itself: `Connection: close` and reconnects, a kept-alive socket the server
closed while idle (silently or with a 408), a truncated body, a server that trickles its answer
or stops reading, a slow reader, a large response. How each response's bytes are parsed
(framings, interim 1xx responses, malformed input) is tested with bytes alone in
tests/unit/clients/test_http_protocol.py; Triton's own responses go through it in every HTTP test."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager, suppress

import gevent
import pytest

from loadtests.clients import http_wire
from loadtests.clients.http_protocol import ConnectionClosed
from loadtests.clients.http_wire import HttpConnection, build_request


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


# The connect and request timeouts of a test that is not about a deadline: none a busy host reaches
# (a 2-s timeout ran out under the background shard's nice 19 while two Triton shards ran).
NO_DEADLINE_S = 60.0


def request(port: int) -> bytes:
    return build_request(f"127.0.0.1:{port}", "/v2/models/m/infer", b"xyz", {"Inference-Header-Content-Length": "3"})


def test_chunked_body_and_connection_close_reconnect():
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nInference-Header-Content-Length: 2\r\n"
        b"Connection: close\r\n\r\n4\r\n{}ab\r\n3\r\ncde\r\n0\r\n\r\n"
    )
    plain = b'HTTP/1.1 400 Bad Request\r\nContent-Length: 13\r\n\r\n{"error":"x"}'
    with scripted_server([chunked, plain], close_after_each=True) as (port, accepted):
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, NO_DEADLINE_S)
        assert connection.exchange(request(port)) == (200, 2, b"{}abcde")
        assert connection.exchange(request(port)) == (400, None, b'{"error":"x"}')
        connection.close()
    assert len(accepted) == 2  # the server said close: the second request opened a new connection


def test_idle_socket_closed_by_the_server_is_replaced_before_sending(monkeypatch):
    monkeypatch.setattr(http_wire, "IDLE_CHECK_S", 0.0)
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    # The server closes after each answer without saying so (as an idle timeout would).
    with scripted_server([ok, ok], close_after_each=True) as (port, accepted):
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, NO_DEADLINE_S)
        assert connection.exchange(request(port)) == (200, None, b"ok")
        threading.Event().wait(0.2)  # let the close reach this side
        assert connection.exchange(request(port)) == (200, None, b"ok")
        connection.close()
    assert len(accepted) == 2


def test_truncated_body_is_a_closed_connection():
    truncated = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"
    with scripted_server([truncated], close_after_each=True) as (port, _):
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, NO_DEADLINE_S)
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


def read_request(conn: socket.socket, pause_s: float = 0.0) -> bytes:
    """One request's bytes (head and Content-Length body), read in small pieces with `pause_s`
    between them (a slow reader), or b"" if the client closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(v.split(b":")[1]) for v in head.split(b"\r\n") if v.lower().startswith(b"content-length")), 0)
    while len(body) < length:
        body += conn.recv(16384)
        time.sleep(pause_s)
    return head + b"\r\n\r\n" + body


@contextmanager
def scripted_connections(*scripts):
    """Each accepted connection, in order, runs the next script(conn) in a thread. Yields the port."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

    def serve() -> None:
        for script in scripts:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, suppress(OSError):
                script(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(timeout=5)


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.mark.parametrize("idle_check_s", [0.0, 60.0])
def test_a_408_on_an_idle_keep_alive_connection_is_a_reconnect(monkeypatch, idle_check_s):
    """The server times the idle connection out with a 408 and closes it: the next request goes
    on a new connection, checked before sending (idle check) or after reading the 408."""
    monkeypatch.setattr(http_wire, "IDLE_CHECK_S", idle_check_s)
    timed_out = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"

    def first(conn):
        read_request(conn)
        conn.sendall(OK)
        time.sleep(0.1)
        conn.sendall(timed_out)

    def second(conn):
        read_request(conn)
        conn.sendall(OK)
        time.sleep(0.3)

    with scripted_connections(first, second) as port:
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, NO_DEADLINE_S)
        assert connection.exchange(request(port)) == (200, None, b"ok")
        gevent.sleep(0.3)
        assert connection.exchange(request(port)) == (200, None, b"ok")
        connection.close()


def test_the_timeout_bounds_the_whole_response_not_each_read():
    """A server trickling its answer (a byte every 0.6 s, 6 s in all) must not hold a 1 s request
    for 6 s: a timeout per read would wait it out. The bound leaves a busy host 2.5 s of margin."""

    def trickle(conn):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        for _ in range(10):
            time.sleep(0.6)
            conn.sendall(b"x")

    with scripted_connections(trickle) as port:
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, 1.0)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            connection.exchange(request(port))
        assert time.monotonic() - started < 3.5


def test_the_timeout_bounds_a_write_the_server_does_not_read():
    """A server that reads nothing for 6 s: a 1-s request's write gives up well before (the bound
    leaves a busy host 2.5 s of margin)."""

    def frozen(conn):
        time.sleep(6)

    with scripted_connections(frozen) as port:
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, 1.0)
        large = build_request(f"127.0.0.1:{port}", "/v2/models/m/infer", b"\x01" * 16_000_000, {})
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            connection.exchange(large)
        assert time.monotonic() - started < 3.5


def test_a_slow_reader_and_a_large_response():
    """The server reads a 2 MB request in 16 KB pieces with pauses, then answers 4.8 MB in pieces."""
    answer = bytes(range(256)) * 18_750

    def slow(conn):
        read_request(conn, pause_s=0.002)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(answer))
        for offset in range(0, len(answer), 100_000):
            conn.sendall(answer[offset : offset + 100_000])
        time.sleep(0.3)

    with scripted_connections(slow) as port:
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, NO_DEADLINE_S)
        big = build_request(f"127.0.0.1:{port}", "/v2/models/m/infer", b"\x02" * 2_000_000, {})
        assert connection.exchange(big) == (200, None, answer)
        connection.close()


def test_a_slow_answer_leaves_the_next_request_its_whole_timeout():
    """A read that waited shortens the socket's timeout to what was left of that request; the
    next request on the kept-alive connection has its own whole timeout again. (In seconds a
    busy host cannot erase: 1.2 s left after the first, the second waits 2.1 of 3.)"""

    def script(conn):
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\na")
        time.sleep(1.8)
        conn.sendall(b"b")
        time.sleep(0.05)
        conn.sendall(b"c")  # read with 1.2 s left
        read_request(conn)
        time.sleep(2.1)  # more than the first request left, less than a whole timeout
        conn.sendall(OK)
        time.sleep(0.3)

    with scripted_connections(script) as port:
        connection = HttpConnection("127.0.0.1", port, NO_DEADLINE_S, 3.0)
        assert connection.exchange(request(port)) == (200, None, b"abc")
        assert connection.exchange(request(port)) == (200, None, b"ok")
        connection.close()
