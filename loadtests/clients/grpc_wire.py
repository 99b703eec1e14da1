"""Unary gRPC calls over HTTP/2 on gevent sockets, with request frames built before the test.

Not grpcio: under gevent it moves every call between an OS thread and the hub, half the
client's CPU (docs/explanation/performance.md). A unary call is one HEADERS + DATA out, HEADERS, DATA and
trailers back; the header block is constant HPACK literals, and responses are read by a gevent
I/O watcher in the hub that switches straight into the waiting greenlet (no thread).
This module is the I/O around the protocol: the socket, TLS (`grpc_tls.py`), the waiting
greenlets, the send lock and the deadlines. What the bytes mean, both ways, is
`grpc_protocol.GrpcProtocol` (fed what is read, it returns the calls that ended and what else
happened, and the control frames to answer with); the request's bytes: `grpc_frames.py`;
connection sharing: `grpc_pool.py`.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time

import gevent
import gevent.event
import gevent.socket
from gevent import getcurrent
from gevent.hub import Waiter, get_hub
from gevent.lock import Semaphore

from loadtests.clients.grpc_frames import MAX_STREAM_ID, READ_CHUNK, CallFailure, PreparedCall
from loadtests.clients.grpc_protocol import ConnectionFailed, GoingAway, GrpcProtocol, PeerSettings, StreamState
from loadtests.clients.grpc_tls import TlsSession

TIMED_OUT = object()  # what a call's timer hands its waiter


def send_without_waiting(sock, data: bytes) -> bytes:
    """What one non-blocking send() on the raw socket left of `data`: a small request goes whole,
    without gevent's sendall() (which adds a getsockopt() call each time)."""
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    return data[sent:]


class Connection:
    """One HTTP/2 connection to a gRPC server, shared by any number of greenlets. Frames are
    written by the calling greenlets and read in the hub (`_on_readable`); the connection's
    state is its `GrpcProtocol`."""

    # Slots: over 30 attributes a plain instance dict stops sharing its keys, and every
    # attribute read on the hot path got slower (measured: +5,000 instructions per call).
    __slots__ = (
        "_coalescing",
        "_connect_timeout_s",
        "_dead",
        "_hub",
        "_pending_control",
        "_protocol",
        "_raw",
        "_send_lock",
        "_settings_seen",
        "_sock",
        "_stream_freed",
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
        self._protocol = GrpcProtocol()
        self._send_lock = Semaphore()
        self._writers = 0  # greenlets writing or queued to write: bytes go in their order
        self._write_cut: CallFailure | None = None  # a write interrupted mid-frame (see _write)
        self._pending_control: list[bytes] = []
        # True while the hub hands this read's answers to their greenlets (_on_readable): the
        # requests they send meanwhile are gathered and written together once it is done.
        self._coalescing = False
        self._window_opened = gevent.event.Event()
        self._dead: CallFailure | None = None
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
        hello = self._protocol.preface()
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
        if not self._protocol.streams:
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
        for stream in self._protocol.end_all():
            self._wake(stream, failure)
        self._window_opened.set()
        self._stream_freed.set()
        self._settings_seen.set()  # a connect waiting for the server's SETTINGS: the connection is over

    # -- reading (in the hub) -------------------------------------------------------------
    def _on_readable(self) -> None:
        """Bytes arrived: the protocol reads every whole frame; its control frames go out, then
        each ended call's greenlet is switched to straight from the hub."""
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
        protocol = self._protocol
        events = protocol.receive(data)
        if protocol.control:
            self._send_control(protocol.take_control())
        self._coalescing = True
        try:
            for event in events:
                if event.__class__ is StreamState:
                    self._wake(event, event.result)
                elif self._dead is None:
                    self._on_event(event)
        finally:
            self._coalescing = False
        if self._pending_control and not self._writers:
            # What the woken greenlets sent (their next requests), in one write: a server that
            # batches (Triton's dynamic batcher) sees them arrive together, as grpc++'s client
            # writes a channel's pending calls together; sixteen sends one by one reached it
            # spread over the time the client took to turn the answers around.
            gathered, self._pending_control = b"".join(self._pending_control), []
            self._send_control(gathered)

    def _on_event(self, event) -> None:
        """What the server's frames changed, other than a call's end."""
        if isinstance(event, PeerSettings):
            if event.max_streams_changed:
                self._stream_freed.set()
            if event.window_changed:
                self._window_opened.set()
            self._settings_seen.set()
        elif isinstance(event, GoingAway):
            self.usable = False
            if not self._protocol.streams:
                self._fail_all(event.failure)
        elif isinstance(event, ConnectionFailed):
            self._fail_all(event.failure)
        else:  # WINDOW_OPENED
            self._window_opened.set()

    def _wake(self, stream: StreamState, result) -> None:
        # Runs in the hub (I/O watcher or _fail_all from a greenlet): a Waiter switches
        # straight into the greenlet waiting on it.
        if getcurrent() is self._hub:
            stream.waiter.switch(result)
        else:  # a greenlet closing the connection: the hub delivers it
            self._hub.loop.run_callback(stream.waiter.switch, result)

    # -- writing (in the calling greenlets) -----------------------------------------------
    def _send(
        self, data: bytes, deadline: float | None = None, stream: StreamState | None = None, block: bytes = b""
    ) -> None:
        """Write whole frames in order. The common case is one non-blocking send() with no switch;
        the rest waits its turn and is bounded by the call's deadline (the write included).
        With `stream`, the bytes open it: its HEADERS (header `block`), then `data` (its request
        body) as its one DATA frame if the windows allow. The stream's id must be above every id
        opened before it (RFC 9113 5.1.1), so it is taken as the bytes go out, not before waiting
        for the lock (a waiter can be overtaken: gevent's Semaphore lets a greenlet arriving as
        it is released take it first)."""
        if self._write_cut is not None:
            raise self._write_cut
        if self._coalescing and not self._writers and not self._tls and self._dead is None:
            # Sent from a greenlet the hub is handing answers to: written with the others at the
            # end of that read (_on_readable), in the order they came (the stream ids' order).
            self._pending_control.append(data if stream is None else self._opened(stream, block, data))
            return
        if not self._writers and not self._tls and not self._pending_control:
            # Nothing yields before the lock, so bytes stay in order.
            rest = send_without_waiting(self._raw, data if stream is None else self._opened(stream, block, data))
            if not rest:
                return
            # A frame begun: the rest goes next (the lock is free); cut short, it breaks the connection.
            data, stream = rest, None
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
        """Frames the protocol answers with (ACKs, window updates, cancels). A greenlet
        may be in the middle of writing a large request: then they go after its frame."""
        if self._sock is None or self._dead is not None or self._write_cut is not None:
            return
        # After bytes still waiting (the rest of a frame, requests gathered while the hub hands
        # out answers): they go first. TLS: a record cut short cannot be re-sent.
        if self._writers or self._tls or self._pending_control or self._coalescing:
            self._pending_control.append(data)
            if not self._writers and not self._coalescing:
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

    def _send_body(self, stream: StreamState, block: bytes, body: bytes, deadline: float | None) -> None:
        """HEADERS (the stream opened as they go out) and, if the windows allow, the body as one
        DATA frame; else DATA frames within the server's frame size and windows, waiting for it
        to open them up to the call's deadline."""
        self._send(body, deadline, stream, block)
        protocol, stream_id = self._protocol, stream.stream_id
        if stream_id not in protocol.send_windows:
            return  # sent whole
        try:
            rest = memoryview(body)
            while rest:
                if self._dead is not None:
                    raise self._dead
                if stream_id not in protocol.streams:
                    return  # cancelled or reset by the server
                data, size = protocol.next_data(stream_id, rest)
                if not size:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise CallFailure("timeout", "the server's flow-control window stayed closed")
                    self._window_opened.clear()
                    self._window_opened.wait(remaining)
                    continue
                rest = rest[size:]
                self._send(data, deadline)
        finally:
            protocol.send_windows.pop(stream_id, None)

    def _opened(self, stream: StreamState, block: bytes, body: bytes) -> bytes:
        """The stream opened (no switch until the bytes are sent): its HEADERS, and its body as
        one DATA frame if the windows allow (grpc_protocol.GrpcProtocol.open_stream)."""
        protocol = self._protocol
        data = protocol.open_stream(stream, block, body)
        if protocol.next_stream_id >= MAX_STREAM_ID:
            self.usable = False  # stream ids run out: the pool opens a new connection
        return data

    def unary(self, call: PreparedCall, timeout_s: float | None, chunks: list | None = None) -> bytes:
        """Send one call and wait for its message, all within `timeout_s`; raises CallFailure.
        A streaming call passes its own `chunks` (outcome.TimedChunks): every message the
        server sent, timed as it arrived, is there when this returns or raises."""
        if self._dead is not None:
            raise self._dead
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        protocol = self._protocol
        if protocol.max_streams is not None and len(protocol.streams) >= protocol.max_streams:
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
                # A timer counts from the loop's clock, which is the time of its last turn: after the
                # process ran on without turning it (a long computation, a host that held it off
                # the CPU), a deadline from that clock would fire at once. Brought up to now first,
                # and after the time left is read: a pause between the two reads then makes the
                # timer later by the pause, where the other order made it end that much early.
                left = max(deadline - time.monotonic(), 0.0)
                self._hub.loop.update_now()
                timer = self._hub.loop.timer(left)
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
            if protocol.max_streams is not None or not self.usable:
                self._stream_ended()
        if result is TIMED_OUT:
            raise CallFailure("timeout", f"no response within {timeout_s} s")
        if isinstance(result, CallFailure):
            raise result
        return result

    def _cancel(self, stream_id: int | None) -> None:
        """RST_STREAM CANCEL for a call given up on (None: its HEADERS never went out)."""
        if stream_id is not None and self._protocol.cancel(stream_id):
            self._send_control(self._protocol.take_control())

    def _stream_ended(self) -> None:
        if self._protocol.max_streams is not None:
            self._stream_freed.set()  # a call queued above the server's stream limit may go
        if not self.usable and not self._protocol.streams and self._dead is None and self._sock is not None:
            self.close()  # retired, going away, out of stream ids or its write cut: the last call ended

    def _wait_for_stream(self, deadline: float | None) -> None:
        """Above the server's SETTINGS_MAX_CONCURRENT_STREAMS: wait for a stream to end."""
        protocol = self._protocol
        while protocol.max_streams is not None and len(protocol.streams) >= protocol.max_streams:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                limit = protocol.max_streams
                raise CallFailure("timeout", f"no free stream (the server allows {limit}) before the deadline")
            self._stream_freed.clear()
            self._stream_freed.wait(remaining)
            if self._dead is not None:
                raise self._dead
