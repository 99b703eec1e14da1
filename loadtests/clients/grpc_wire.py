"""Unary gRPC calls over HTTP/2 on gevent sockets, with request frames built before the test.

Not grpcio: under gevent it moves every call between an OS thread and the hub, half the
client's CPU (docs/performance.md). A unary call is one HEADERS + DATA out, HEADERS, DATA and
trailers back; the header block is constant HPACK literals, and responses are read by a gevent
I/O watcher in the hub that switches straight into the waiting greenlet (no thread).
Frames: `grpc_frames.py`; connection sharing: `grpc_pool.py`; grpcs://: `grpc_tls.py`.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import time

import gevent
import gevent.event
import gevent.socket
from gevent import getcurrent
from gevent.hub import Waiter, get_hub
from gevent.lock import Semaphore
from hpack.exceptions import HPACKError

from loadtests.clients.grpc_frames import (
    ACK,
    CANCEL,
    CONTINUATION,
    DATA,
    DEFAULT_MAX_FRAME,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    MAX_STREAM_ID,
    MAX_WINDOW,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    READ_CHUNK,
    RST_STREAM,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
    TIMED_OUT,
    U32,
    WINDOW_REFILL_AT,
    WINDOW_UPDATE,
    CallFailure,
    HeaderDecoder,
    PreparedCall,
    StreamState,
    call_outcome,
    frame,
    frame_header,
    send_without_waiting,
)
from loadtests.clients.grpc_tls import TlsSession


class Connection:
    """One HTTP/2 connection to a gRPC server, shared by any number of greenlets."""

    def __init__(self, host: str, port: int, connect_timeout_s: float, tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self._tls_context, self._tls = host, port, tls, None  # grpcs://: grpc_tls.py
        self._connect_timeout_s = connect_timeout_s
        self._sock: socket.socket | None = None
        self._watcher = None
        self._hub = get_hub()
        self._send_lock = Semaphore()
        self._pending_control: list[bytes] = []
        self._streams: dict[int, StreamState] = {}
        self._next_stream_id = 1
        self._buffer = bytearray()
        self._headers = HeaderDecoder()
        self._continuation: tuple[int, int, bytearray] | None = None  # stream, flags, block
        self._send_window = DEFAULT_WINDOW  # connection-level, ours to spend
        self._peer_initial_window = DEFAULT_WINDOW
        self._stream_send_windows: dict[int, int] = {}
        self._window_opened = gevent.event.Event()
        self._peer_max_frame = DEFAULT_MAX_FRAME
        self._received_unacknowledged = 0
        self._dead: CallFailure | None = None
        self._goaway_last_stream: int | None = None

    # -- connection life ----------------------------------------------------------------
    @property
    def usable(self) -> bool:
        return (
            self._sock is not None
            and self._dead is None
            and self._goaway_last_stream is None
            and self._next_stream_id < MAX_STREAM_ID  # stream ids run out: a new connection
        )

    def open(self) -> None:
        """Connect (TCP and the HTTP/2 preface); raises CallFailure("connection refused")."""
        try:
            # gevent's socket whether or not the process is monkey-patched (tests are not).
            sock = gevent.socket.create_connection((self.host, self.port), timeout=self._connect_timeout_s)
        except OSError as error:
            raise CallFailure("connection refused", str(error)) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls_context is not None:  # raises CallFailure, the socket closed
            self._tls = TlsSession.connect(sock, self._tls_context, self.host, self._connect_timeout_s)
        sock.settimeout(None)
        self._sock = sock
        # The hub must never wait: it reads and answers on the non-blocking socket gevent wraps.
        self._raw = sock._sock
        settings = struct.pack(">HIHI", SETTINGS_ENABLE_PUSH, 0, SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW)
        window = frame(WINDOW_UPDATE, 0, 0, U32.pack(MAX_WINDOW - DEFAULT_WINDOW))
        hello = PREFACE + frame(SETTINGS, 0, 0, settings) + window
        try:
            sock.sendall(self._tls.encrypt(hello) if self._tls else hello)
        except OSError as error:
            self._fail_all(CallFailure("connection reset", str(error)))
            raise self._dead from None
        # Responses are parsed in the hub as bytes arrive (see _on_readable).
        self._watcher = self._hub.loop.io(sock.fileno(), 1)
        self._watcher.start(self._on_readable)

    def close(self) -> None:
        if self._dead is None:
            self._fail_all(CallFailure("connection reset", "connection closed by the client"))

    def _fail_all(self, failure: CallFailure) -> None:
        self._dead = failure
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher.close()
            self._watcher = None
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        streams, self._streams = self._streams, {}
        for stream in streams.values():
            self._wake(stream, failure)
        self._window_opened.set()

    def _send(self, data: bytes) -> None:
        if not self._tls and not self._send_lock.locked() and not self._pending_control:
            # Nothing yields before the lock, so bytes stay in order.
            data = send_without_waiting(self._raw, data)
            if not data:
                return
        with self._send_lock:  # TLS records are made in the order they are sent
            if data:
                self._sock.sendall(self._tls.encrypt(data) if self._tls else data)
            if self._pending_control:
                control, self._pending_control = b"".join(self._pending_control), []
                self._sock.sendall(self._tls.encrypt(control) if self._tls else control)

    def _send_control(self, data: bytes) -> None:
        """Frames the hub itself answers with (ACKs, window updates, cancels). A greenlet
        may be in the middle of writing a large request: then they go after it."""
        if self._sock is None or self._dead is not None:
            return
        if self._send_lock.locked() or self._tls:  # TLS: a record cut short cannot be re-sent
            self._pending_control.append(data)
            if not self._send_lock.locked():
                gevent.spawn(self._flush_control)
            return
        try:
            rest = send_without_waiting(self._raw, data)
        except OSError:
            return
        if rest:
            gevent.spawn(self._send, rest)

    def _flush_control(self) -> None:
        with contextlib.suppress(OSError):  # the connection died meanwhile: nothing left to answer
            self._send(b"")

    def _send_body(self, stream_id: int, body: bytes, header_frame: bytes, deadline: float | None) -> None:
        """HEADERS, then DATA frames within the peer's frame size and windows (waiting for
        the server to open them, up to the call's deadline)."""
        window = min(self._send_window, self._peer_initial_window)
        if len(body) <= window and len(body) <= self._peer_max_frame:
            self._send_window -= len(body)
            self._send(header_frame + frame_header(len(body), DATA, END_STREAM, stream_id) + body)
            return
        self._stream_send_windows[stream_id] = self._peer_initial_window
        self._send(header_frame)
        view, offset = memoryview(body), 0
        while offset < len(body):
            available = min(self._send_window, self._stream_send_windows.get(stream_id, 0), self._peer_max_frame)
            if self._dead is not None:
                raise self._dead
            if stream_id not in self._streams:
                return  # cancelled or reset by the server
            if available <= 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise CallFailure("timeout", "the server's flow-control window stayed closed")
                self._window_opened.clear()
                self._window_opened.wait(remaining)
                continue
            chunk = view[offset : offset + available]
            offset += len(chunk)
            self._send_window -= len(chunk)
            self._stream_send_windows[stream_id] -= len(chunk)
            flags = END_STREAM if offset >= len(body) else 0
            self._send(frame_header(len(chunk), DATA, flags, stream_id) + bytes(chunk))
        self._stream_send_windows.pop(stream_id, None)

    def unary(self, call: PreparedCall, timeout_s: float | None) -> bytes:
        """Send one call and wait for its message; raises CallFailure."""
        if self._dead is not None:
            raise self._dead
        stream_id = self._next_stream_id
        self._next_stream_id += 2
        waiter = Waiter(self._hub)
        self._streams[stream_id] = StreamState(waiter)
        timer = None
        header_frame = frame_header(len(call.header_block), HEADERS, END_HEADERS, stream_id) + call.header_block
        try:
            try:
                deadline = None if timeout_s is None else time.monotonic() + timeout_s
                self._send_body(stream_id, call.body, header_frame, deadline)
            except OSError as error:
                self._fail_all(CallFailure("connection reset", str(error)))
                raise self._dead from None
            if timeout_s is not None:
                timer = self._hub.loop.timer(timeout_s)
                timer.start(waiter.switch, TIMED_OUT)
            result = waiter.get()
        except BaseException:
            # Killed (a stopped run) or failed while sending: the server must not go on with it.
            if self._streams.pop(stream_id, None) is not None:
                self._send_control(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))
            raise
        finally:
            if timer is not None:
                timer.close()
        if result is TIMED_OUT:
            if self._streams.pop(stream_id, None) is not None:
                self._send_control(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))
            raise CallFailure("timeout", f"no response within {timeout_s} s")
        if isinstance(result, CallFailure):
            raise result
        return result

    def _wake(self, stream: StreamState, result) -> None:
        # Runs in the hub (I/O watcher or _fail_all from a greenlet): a Waiter switches
        # straight into the greenlet waiting on it.
        if getcurrent() is self._hub:
            stream.waiter.switch(result)
        else:  # a greenlet closing the connection: the hub delivers it
            self._hub.loop.run_callback(stream.waiter.switch, result)

    # -- receiving (runs in the hub) ------------------------------------------------------
    def _on_readable(self) -> None:
        try:
            data = self._raw.recv(READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as error:
            self._fail_all(CallFailure("connection reset", str(error)))
            return
        if self._tls is not None and data:
            try:
                data = self._tls.decrypt(data)  # None: no whole TLS record yet
            except CallFailure as failure:
                return self._fail_all(failure)
        if data is None:
            return
        if not data:
            self._fail_all(CallFailure("connection reset", "connection closed by the server"))
            return
        buffer = self._buffer
        if buffer:
            buffer += data
            data = bytes(buffer)
            buffer.clear()
        offset, end = 0, len(data)
        try:
            while end - offset >= 9:
                length = data[offset] << 16 | data[offset + 1] << 8 | data[offset + 2]
                if end - offset - 9 < length:
                    break
                frame_type, flags = data[offset + 3], data[offset + 4]
                stream_id = U32.unpack_from(data, offset + 5)[0] & 0x7FFFFFFF
                payload = data[offset + 9 : offset + 9 + length]
                offset += 9 + length
                self._on_frame(frame_type, flags, stream_id, payload)
                if self._dead is not None:
                    return
        except (HPACKError, struct.error, IndexError, ValueError) as error:
            self._fail_all(CallFailure("protocol", f"malformed HTTP/2 from the server: {error}"))
            return
        if offset < end:
            buffer += data[offset:]

    def _on_frame(self, frame_type: int, flags: int, stream_id: int, payload: bytes) -> None:
        if self._continuation is not None and frame_type != CONTINUATION:
            raise ValueError("expected CONTINUATION")
        if frame_type == DATA:
            self._on_data(flags, stream_id, payload)
        elif frame_type == HEADERS:
            if flags & PADDED:
                payload = payload[1 : len(payload) - payload[0]]
            if flags & PRIORITY:
                payload = payload[5:]
            if flags & END_HEADERS:
                self._on_headers(stream_id, flags, payload)
            else:
                self._continuation = (stream_id, flags, bytearray(payload))
        elif frame_type == CONTINUATION:
            if self._continuation is None:
                raise ValueError("CONTINUATION without HEADERS")
            first_stream, first_flags, block = self._continuation
            block += payload
            if flags & END_HEADERS:
                self._continuation = None
                self._on_headers(first_stream, first_flags, bytes(block))
        elif frame_type == SETTINGS:
            if not flags & ACK:
                self._on_settings(payload)
                self._send_control(frame(SETTINGS, ACK, 0))
        elif frame_type == PING:
            if not flags & ACK:
                self._send_control(frame(PING, ACK, 0, payload))
        elif frame_type == WINDOW_UPDATE:
            increment = U32.unpack(payload)[0] & 0x7FFFFFFF
            if stream_id == 0:
                self._send_window += increment
            elif stream_id in self._stream_send_windows:
                self._stream_send_windows[stream_id] += increment
            self._window_opened.set()
        elif frame_type == RST_STREAM:
            stream = self._streams.pop(stream_id, None)
            if stream is not None:
                code = U32.unpack(payload)[0]
                # REFUSED_STREAM (7): the server never processed it.
                kind = "connection refused" if code == 7 else "connection reset"
                self._wake(stream, CallFailure(kind, f"stream reset by the server (HTTP/2 error {code})"))
        elif frame_type == GOAWAY:
            last_stream = U32.unpack_from(payload, 0)[0] & 0x7FFFFFFF
            code = U32.unpack_from(payload, 4)[0]
            self._goaway_last_stream = last_stream
            detail = f"server going away (HTTP/2 GOAWAY {code}): {payload[8:].decode(errors='replace')}"
            for sid in [sid for sid in self._streams if sid > last_stream]:
                self._wake(self._streams.pop(sid), CallFailure("connection reset", detail))
            if not self._streams:
                self._fail_all(CallFailure("connection reset", detail))

    def _on_settings(self, payload: bytes) -> None:
        for index in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, index)
            if key == SETTINGS_INITIAL_WINDOW_SIZE:
                delta = value - self._peer_initial_window
                self._peer_initial_window = value
                for sid in self._stream_send_windows:
                    self._stream_send_windows[sid] += delta
                self._window_opened.set()
            elif key == SETTINGS_MAX_FRAME_SIZE:
                self._peer_max_frame = value

    def _on_data(self, flags: int, stream_id: int, payload: bytes) -> None:
        self._received_unacknowledged += len(payload)
        if self._received_unacknowledged >= WINDOW_REFILL_AT:
            self._send_control(frame(WINDOW_UPDATE, 0, 0, U32.pack(self._received_unacknowledged)))
            self._received_unacknowledged = 0
        if flags & PADDED:
            payload = payload[1 : len(payload) - payload[0]]
        stream = self._streams.get(stream_id)
        if stream is None:
            return  # a cancelled call's late data
        stream.chunks.append(payload)
        stream.received += len(payload)
        if stream.received >= WINDOW_REFILL_AT:
            self._send_control(frame(WINDOW_UPDATE, 0, stream_id, U32.pack(stream.received)))
            stream.received = 0
        if flags & END_STREAM:
            self._streams.pop(stream_id)
            self._wake(stream, CallFailure("protocol", "stream ended without grpc-status"))

    def _on_headers(self, stream_id: int, flags: int, block: bytes) -> None:
        headers = self._headers.decode(block)  # always, to keep the HPACK table in step
        stream = self._streams.get(stream_id)
        if stream is None:
            return
        if not stream.headers_seen and not flags & END_STREAM:
            stream.headers_seen = True
            status = next((v for k, v in headers if k == ":status"), "")
            if status != "200":
                self._streams.pop(stream_id)
                self._wake(stream, CallFailure("protocol", f"HTTP status {status} from the gRPC server"))
            return
        if not flags & END_STREAM:
            return
        # Trailers (or a trailers-only error response): the call's outcome.
        self._streams.pop(stream_id)
        self._wake(stream, call_outcome(headers, stream.chunks))
