"""Unary gRPC calls over HTTP/2 on gevent sockets, with request frames built before the test.

Not grpcio: under gevent it moves every call between an OS thread and the hub, half the
client's CPU (docs/explanation/performance.md). A unary call is one HEADERS + DATA out, HEADERS, DATA and
trailers back; the header block is constant HPACK literals, and responses are read by a gevent
I/O watcher in the hub that switches straight into the waiting greenlet (no thread).
Frames: `grpc_frames.py`; reading them: `grpc_receive.py`; connection sharing: `grpc_pool.py`;
grpcs://: `grpc_tls.py`.
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
from gevent.hub import Waiter, get_hub
from gevent.lock import Semaphore

from loadtests.clients.grpc_frames import (
    CANCEL,
    DATA,
    DEFAULT_MAX_FRAME,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    MAX_STREAM_ID,
    MAX_WINDOW,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    TIMED_OUT,
    U32,
    WINDOW_UPDATE,
    CallFailure,
    HeaderDecoder,
    PreparedCall,
    StreamState,
    frame,
    frame_header,
    send_without_waiting,
)
from loadtests.clients.grpc_receive import FrameReceiver
from loadtests.clients.grpc_tls import TlsSession


class Connection(FrameReceiver):
    """One HTTP/2 connection to a gRPC server, shared by any number of greenlets. Frames are
    written here (by the calling greenlets) and read by `FrameReceiver` (in the hub)."""

    # Slots: over 30 attributes a plain instance dict stops sharing its keys, and every
    # attribute read on the hot path got slower (measured: +5,000 instructions per call).
    __slots__ = (
        "_buffer",
        "_connect_timeout_s",
        "_continuation",
        "_dead",
        "_headers",
        "_hub",
        "_max_streams",
        "_next_stream_id",
        "_peer_initial_window",
        "_peer_max_frame",
        "_pending_control",
        "_raw",
        "_received_unacknowledged",
        "_send_lock",
        "_send_window",
        "_settings_seen",
        "_sock",
        "_stream_freed",
        "_stream_send_windows",
        "_streams",
        "_tls",
        "_tls_context",
        "_watcher",
        "_window_opened",
        "_write_cut",
        "_writers",
        "host",
        "port",
        "usable",
    )

    def __init__(self, host: str, port: int, connect_timeout_s: float, tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self._tls_context, self._tls = host, port, tls, None  # grpcs://: grpc_tls.py
        self._connect_timeout_s = connect_timeout_s
        self._sock: socket.socket | None = None
        self._watcher = None
        self._hub = get_hub()
        self._send_lock = Semaphore()
        self._writers = 0  # greenlets writing or queued to write: bytes go in their order
        self._write_cut: CallFailure | None = None  # a write interrupted mid-frame (see _write)
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
        self._max_streams: int | None = None  # the server's SETTINGS_MAX_CONCURRENT_STREAMS
        self._stream_freed = gevent.event.Event()
        self._settings_seen = gevent.event.Event()
        # False once it broke, goes away, ran out of stream ids or was retired: no new calls,
        # and it closes when its last stream ends.
        self.usable = False

    # -- connection life ----------------------------------------------------------------
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
        # The server's SETTINGS (its stream limit, windows, frame size) before the first call.
        if not self._settings_seen.wait(self._connect_timeout_s) and self._dead is None:
            self._fail_all(CallFailure("connection refused", "no HTTP/2 SETTINGS from the server"))
        if self._dead is not None:
            raise self._dead
        self.usable = True

    def close(self) -> None:
        if self._dead is None:
            self._fail_all(CallFailure("connection reset", "connection closed by the client"))

    def retire(self) -> None:
        """No new calls; closed once the calls in flight have ended (a replaced connection)."""
        self.usable = False
        if not self._streams:
            self.close()

    def _fail_all(self, failure: CallFailure) -> None:
        self._dead, self.usable = failure, False
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
        self._stream_freed.set()
        self._settings_seen.set()  # a connect waiting for the server's SETTINGS: the connection is over

    def _send(
        self, data: bytes, deadline: float | None = None, stream: StreamState | None = None, block: bytes = b""
    ) -> None:
        """Write whole frames in order. The common case is one non-blocking send() with no switch;
        the rest waits its turn and is bounded by the call's deadline (the write included).
        With `stream`, the bytes open it: its HEADERS (header `block`), then `data` as its one
        DATA frame unless `data` is None. The stream's id must be above every id opened before it
        (RFC 9113 5.1.1), so it is taken as the bytes go out, not before waiting for the lock (a
        waiter can be overtaken: gevent's Semaphore lets a greenlet arriving as it is released
        take it first)."""
        if self._write_cut is not None:
            raise self._write_cut
        if not self._writers and not self._tls and not self._pending_control:
            # Nothing yields before the lock, so bytes stay in order.
            rest = send_without_waiting(self._raw, data if stream is None else self._opened(stream, block, data))
            if not rest:
                return
            data, stream = (
                rest,
                None,
            )  # a frame begun: the rest goes next (the lock is free); cut short, it breaks the connection
        self._writers += 1
        try:
            remaining = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not self._send_lock.acquire(timeout=remaining):
                raise CallFailure("timeout", "the request was still waiting to be written at its deadline")
            try:
                self._write(data if stream is None else self._opened(stream, block, data), deadline)
            finally:
                self._send_lock.release()
        finally:
            self._writers -= 1

    def _write(self, data: bytes, deadline: float | None) -> None:
        """Under the send lock. A write interrupted part-way (deadline, a killed greenlet) leaves
        a frame cut short, which would swallow every later frame of the connection: it takes
        no new calls then, and closes when the calls already sent have their answers."""
        if self._write_cut is not None:
            raise self._write_cut
        sock = self._sock
        try:
            sock.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001))
            # Control frames first: one may be the rest of a frame the hub began (_send_control).
            # (`data` may be the rest of a frame too, but then none were pending: see _send.)
            self._write_control(sock)
            if data:
                sock.sendall(self._tls.encrypt(data) if self._tls else data)
            self._write_control(sock)
        except TimeoutError:
            self._cut_write()
            raise CallFailure("timeout", "the request was still being written at its deadline") from None
        except OSError:
            raise
        except BaseException:
            self._cut_write()
            raise
        finally:
            sock.settimeout(None)

    def _write_control(self, sock) -> None:
        if self._pending_control:
            control, self._pending_control = b"".join(self._pending_control), []
            sock.sendall(self._tls.encrypt(control) if self._tls else control)

    def _cut_write(self) -> None:
        self._write_cut = CallFailure("connection reset", "not sent: a write on the connection was interrupted")
        self._pending_control = []
        self.retire()

    def _send_control(self, data: bytes) -> None:
        """Frames the hub itself answers with (ACKs, window updates, cancels). A greenlet
        may be in the middle of writing a large request: then they go after its frame."""
        if self._sock is None or self._dead is not None or self._write_cut is not None:
            return
        if self._writers or self._tls:  # TLS: a record cut short cannot be re-sent
            self._pending_control.append(data)
            if not self._writers:
                gevent.spawn(self._flush_control)
            return
        try:
            rest = send_without_waiting(self._raw, data)
        except OSError:
            return
        if rest:  # the rest of the frame before any other bytes: the next writer sends it first
            self._pending_control.append(rest)
            gevent.spawn(self._flush_control)

    def _flush_control(self) -> None:
        with contextlib.suppress(OSError, CallFailure):  # the connection died meanwhile: nothing left to answer
            self._send(b"")

    def _send_body(self, stream: StreamState, block: bytes, body: bytes, deadline: float | None) -> int | None:
        """HEADERS (the stream opened as they go out), then DATA frames within the peer's frame
        size and windows (waiting for the server to open them, up to the call's deadline)."""
        window = min(self._send_window, self._peer_initial_window)
        if len(body) <= window and len(body) <= self._peer_max_frame:
            self._send_window -= len(body)
            self._send(body, deadline, stream, block)
            return stream.stream_id
        self._send(None, deadline, stream, block)  # type: ignore[arg-type]  # HEADERS alone
        stream_id = stream.stream_id
        self._stream_send_windows[stream_id] = self._peer_initial_window
        view, offset = memoryview(body), 0
        while offset < len(body):
            available = min(self._send_window, self._stream_send_windows.get(stream_id, 0), self._peer_max_frame)
            if self._dead is not None:
                raise self._dead
            if stream_id not in self._streams:
                return stream_id  # cancelled or reset by the server
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
            self._send(frame_header(len(chunk), DATA, flags, stream_id) + bytes(chunk), deadline)
        self._stream_send_windows.pop(stream_id, None)
        return stream_id

    def _opened(self, stream: StreamState, block: bytes, body: bytes | None) -> bytes:
        """Open the stream (the next id, registered; no switch until the bytes are sent): its
        HEADERS frame, and its one DATA frame unless `body` is None."""
        stream_id = stream.stream_id = self._next_stream_id
        self._next_stream_id += 2
        if self._next_stream_id >= MAX_STREAM_ID:
            self.usable = False  # stream ids run out: the pool opens a new connection
        self._streams[stream_id] = stream
        headers = frame_header(len(block), HEADERS, END_HEADERS, stream_id) + block
        return headers if body is None else headers + frame_header(len(body), DATA, END_STREAM, stream_id) + body

    def unary(self, call: PreparedCall, timeout_s: float | None, chunks: list | None = None) -> bytes:
        """Send one call and wait for its message, all within `timeout_s`; raises CallFailure.
        A streaming call passes its own `chunks` (grpc_frames.TimedChunks): every message the
        server sent, timed as it arrived, is there when this returns or raises."""
        if self._dead is not None:
            raise self._dead
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if self._max_streams is not None and len(self._streams) >= self._max_streams:
            self._wait_for_stream(deadline)
        waiter = Waiter(self._hub)
        stream = StreamState(waiter)
        if chunks is not None:
            stream.chunks = chunks
        timer = None
        try:
            try:
                self._send_body(stream, call.header_block, call.body, deadline)
            except OSError as error:
                if self._dead is None:
                    self._fail_all(CallFailure("connection reset", str(error)))
                raise self._dead from None
            if deadline is not None:
                timer = self._hub.loop.timer(max(deadline - time.monotonic(), 0.0))
                timer.start(waiter.switch, TIMED_OUT)
            result = waiter.get()
            if result is TIMED_OUT:
                self._cancel(stream.stream_id)
        except BaseException:
            # Killed (a stopped run) or failed while sending: the server must not go on with it.
            self._cancel(stream.stream_id)
            raise
        finally:
            if timer is not None:
                timer.close()
            if self._max_streams is not None or not self.usable:
                self._stream_ended()
        if result is TIMED_OUT:
            raise CallFailure("timeout", f"no response within {timeout_s} s")
        if isinstance(result, CallFailure):
            raise result
        return result

    def _cancel(self, stream_id: int | None) -> None:
        """RST_STREAM CANCEL for a call given up on (None: its HEADERS never went out)."""
        if stream_id is not None and self._streams.pop(stream_id, None) is not None:
            self._send_control(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))

    def _stream_ended(self) -> None:
        if self._max_streams is not None:
            self._stream_freed.set()  # a call queued above the server's stream limit may go
        if not self.usable and not self._streams and self._dead is None and self._sock is not None:
            self.close()  # retired, going away, out of stream ids or its write cut: the last call ended

    def _wait_for_stream(self, deadline: float | None) -> None:
        """Above the server's SETTINGS_MAX_CONCURRENT_STREAMS: wait for a stream to end."""
        while self._max_streams is not None and len(self._streams) >= self._max_streams:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                limit = self._max_streams
                raise CallFailure("timeout", f"no free stream (the server allows {limit}) before the deadline")
            self._stream_freed.clear()
            self._stream_freed.wait(remaining)
            if self._dead is not None:
                raise self._dead
