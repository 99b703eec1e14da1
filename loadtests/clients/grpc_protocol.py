"""The gRPC client's HTTP/2 connection state, fed bytes: no socket, clock, gevent or greenlet.

`grpc_wire.Connection` owns the socket, TLS, the waiting greenlets, locks and deadlines; it
hands every byte it receives to `GrpcProtocol.receive`, acts on what that returns, and writes
what `take_control` gives (the frames the protocol answers with: SETTINGS and PING acks,
window top-ups, RST_STREAM). Going out, `open_stream` frames a call's HEADERS (and its one
DATA frame when the windows and the server's frame size allow), `next_data` the rest of a
large request within the windows, `cancel` a call given up on. Frame constants, request
framing and the failure type are `grpc_frames.py`.

`receive(data)` returns what the bytes made happen, in the order of their frames:
- a `StreamState` whose call ended: its `result` is the reply message (bytes) or a
  `CallFailure` (grpc-status, an HTTP status without one, RST_STREAM, a GOAWAY above it);
- `PeerSettings`: the server's SETTINGS (the first one: calls may go), and whether its stream
  limit or its windows changed;
- `WINDOW_OPENED`: a WINDOW_UPDATE (a request waiting for window may go on);
- `GoingAway`: a GOAWAY (the calls above its last stream were ended before it, "not processed");
- `ConnectionFailed`: malformed input; nothing after it is read.

    protocol = GrpcProtocol()
    sock.sendall(protocol.preface())
    for event in protocol.receive(sock.recv(65536)): ...
    sock.sendall(protocol.take_control())
"""

from __future__ import annotations

import struct
import zlib
from urllib.parse import unquote

from hpack import Decoder
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
    MAX_WINDOW,
    NO_MESSAGE,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    SETTINGS_ENABLE_PUSH,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    U32,
    WINDOW_REFILL_AT,
    WINDOW_UPDATE,
    CallFailure,
    frame,
    frame_header,
    h2_error_name,
    http_status_failure,
    reset_failure,
)


class StreamState:
    """One call: what it has received so far and, once it ended, its `result`. `waiter` is the
    caller's (what wakes the greenlet waiting for it); the protocol never touches it. `chunks`
    is a list, or the caller's `outcome.TimedChunks` for a streamed call (each DATA payload
    timed as it is parsed)."""

    __slots__ = ("chunks", "headers", "received", "result", "stream_id", "waiter")

    def __init__(self, waiter: object = None) -> None:
        self.waiter = waiter
        self.stream_id: int | None = None  # set when its HEADERS are framed
        self.headers: list[tuple[str, str]] | None = None  # the response's first header block
        self.chunks: list[bytes] = []
        self.received = 0  # DATA bytes since its window was last topped up
        self.result: bytes | CallFailure | None = None


class PeerSettings:
    """The server's SETTINGS arrived (acknowledged in `control`)."""

    __slots__ = ("max_streams_changed", "window_changed")

    def __init__(self, max_streams_changed: bool, window_changed: bool) -> None:
        self.max_streams_changed = max_streams_changed
        self.window_changed = window_changed


class WindowOpened:
    """A WINDOW_UPDATE arrived (for the connection or a stream)."""

    __slots__ = ()


WINDOW_OPENED = WindowOpened()


class GoingAway:
    """A GOAWAY arrived: `last_stream` is the highest stream the server took; `failure` is what
    a call above it got, and what the connection ends with once its remaining calls end."""

    __slots__ = ("failure", "last_stream")

    def __init__(self, last_stream: int, failure: CallFailure) -> None:
        self.last_stream = last_stream
        self.failure = failure


class ConnectionFailed:
    """The server's bytes are not HTTP/2 this client can read; the connection is over."""

    __slots__ = ("failure",)

    def __init__(self, failure: CallFailure) -> None:
        self.failure = failure


class HeaderDecoder:
    """HPACK decoding of response header blocks, with a cache of the blocks that leave the
    dynamic table unchanged (Triton's steady state is a few indexed fields)."""

    def __init__(self) -> None:
        self._decoder = Decoder()
        self._decoder.max_allowed_table_size = 65_536
        self._cache: dict[bytes, list[tuple[str, str]]] = {}

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        cached = self._cache.get(block)
        if cached is not None:
            return cached
        table = self._decoder.header_table.dynamic_entries
        before = (len(table), id(table[0]) if table else None)
        headers = self._decoder.decode(block, raw=False)
        if (len(table), id(table[0]) if table else None) == before:
            # Only indexed fields and unindexed literals: the same bytes always mean the same.
            if len(self._cache) < 256:
                self._cache[block] = headers
        else:
            self._cache.clear()  # the table changed: cached meanings may be stale
        return headers


def call_outcome(trailers: list[tuple[str, str]], chunks: list[bytes], headers=None) -> bytes | CallFailure:
    """A finished call from its trailers (or a trailers-only response) and its DATA: the
    reply message, or the failure. `headers`: the response's first header block (grpc-encoding)."""
    fields = dict(trailers)
    status = fields.get("grpc-status")
    if status != "0":
        if status is not None:
            return CallFailure("status", unquote(fields.get("grpc-message", "")), int(status))
        http_status = fields.get(":status", "200")
        if http_status != "200":
            return http_status_failure(http_status)
        return CallFailure("protocol", "the call ended without grpc-status")
    body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(body) < 5:
        return CallFailure("protocol", NO_MESSAGE)
    message = body[5 : 5 + U32.unpack_from(body, 1)[0]]
    return decompress(message, headers or ()) if body[0] else message


def decompress(message: bytes, headers) -> bytes | CallFailure:
    """A message sent with the compressed flag (we never ask for compression; a server may
    still use gzip or deflate, named by grpc-encoding)."""
    encoding = next((value for name, value in headers if name == "grpc-encoding"), "identity")
    wbits = {"gzip": 31, "deflate": 15}.get(encoding)
    if wbits is None:
        return CallFailure("protocol", f"a compressed message in an unsupported grpc-encoding {encoding!r}")
    try:
        return zlib.decompress(message, wbits)
    except zlib.error as error:
        return CallFailure("protocol", f"a {encoding} message that does not decompress: {error}")


def unpadded(payload: bytes) -> bytes:
    """A PADDED frame's payload without its pad length byte and padding."""
    if payload[0] >= len(payload):
        raise ValueError("padding as long as the frame")
    return payload[1 : len(payload) - payload[0]]


class GrpcProtocol:
    """One HTTP/2 client connection's state (see the module docstring). `streams` holds the
    calls in flight by stream id; `max_streams` is the server's SETTINGS_MAX_CONCURRENT_STREAMS
    (None: no limit); `send_window` the connection's window ours to spend, `send_windows` the
    windows of streams whose request goes in several DATA frames."""

    # Slots: read on every frame (see grpc_wire.Connection's note).
    __slots__ = (
        "_buffer",
        "_continuation",
        "_headers",
        "_received_unacknowledged",
        "control",
        "failed",
        "last_stream",
        "max_streams",
        "next_stream_id",
        "peer_initial_window",
        "peer_max_frame",
        "send_window",
        "send_windows",
        "streams",
    )

    def __init__(self) -> None:
        self.streams: dict[int, StreamState] = {}
        self.next_stream_id = 1
        self.max_streams: int | None = None
        self.send_window = DEFAULT_WINDOW
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame = DEFAULT_MAX_FRAME
        self.send_windows: dict[int, int] = {}
        self.last_stream: int | None = None  # the last GOAWAY's
        self.control: list[bytes] = []  # frames to send (take_control)
        self.failed: CallFailure | None = None
        self._buffer = bytearray()  # the start of a frame not yet whole
        self._continuation: tuple[int, int, bytearray] | None = None  # stream, flags, block so far
        self._headers = HeaderDecoder()
        self._received_unacknowledged = 0

    # -- going out ----------------------------------------------------------------------
    @staticmethod
    def preface() -> bytes:
        """The connection's first bytes: the preface, our SETTINGS (no push, the largest stream
        window) and the connection window opened to the largest."""
        settings = struct.pack(">HIHI", SETTINGS_ENABLE_PUSH, 0, SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW)
        window = frame(WINDOW_UPDATE, 0, 0, U32.pack(MAX_WINDOW - DEFAULT_WINDOW))
        return PREFACE + frame(SETTINGS, 0, 0, settings) + window

    def open_stream(self, stream: StreamState, block: bytes, body: bytes) -> bytes:
        """Open `stream` on the next id (RFC 9113 5.1.1: above every id opened before, so take it
        as the bytes go out): its HEADERS, and `body` as its one DATA frame when it fits the
        windows and the server's frame size. Otherwise the body waits for `next_data`."""
        stream_id = stream.stream_id = self.next_stream_id
        self.next_stream_id += 2
        self.streams[stream_id] = stream
        headers = frame_header(len(block), HEADERS, END_HEADERS, stream_id) + block
        length = len(body)
        if length <= self.send_window and length <= self.peer_initial_window and length <= self.peer_max_frame:
            self.send_window -= length
            return headers + frame_header(length, DATA, END_STREAM, stream_id) + body
        self.send_windows[stream_id] = self.peer_initial_window
        return headers

    def next_data(self, stream_id: int, rest) -> tuple[bytes, int]:
        """The next DATA frame of a request sent in several, from `rest` (what is left of its
        body), and how many of its bytes it carries: (b"", 0) while the windows are closed or
        once the stream is gone (cancelled, reset). The last one ends the stream."""
        window = self.send_windows.get(stream_id)
        if window is None or stream_id not in self.streams:
            self.send_windows.pop(stream_id, None)
            return b"", 0
        size = min(self.send_window, window, self.peer_max_frame, len(rest))
        if size <= 0:
            return b"", 0
        self.send_window -= size
        if size == len(rest):
            del self.send_windows[stream_id]
            return frame_header(size, DATA, END_STREAM, stream_id) + bytes(rest), size
        self.send_windows[stream_id] = window - size
        return frame_header(size, DATA, 0, stream_id) + bytes(rest[:size]), size

    def cancel(self, stream_id: int) -> bool:
        """Forget a call given up on (a deadline, a killed greenlet): its RST_STREAM (CANCEL)
        goes into `control`. False if it had already ended."""
        self.send_windows.pop(stream_id, None)
        if self.streams.pop(stream_id, None) is None:
            return False
        self.control.append(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))
        return True

    def end_all(self) -> list[StreamState]:
        """Every call in flight, forgotten (the connection is over: the caller fails them)."""
        streams, self.streams = list(self.streams.values()), {}
        self.send_windows.clear()
        return streams

    def take_control(self) -> bytes:
        """The frames the protocol answers with since the last call, in order."""
        control, self.control = b"".join(self.control), []
        return control

    # -- coming in ----------------------------------------------------------------------
    def receive(self, data: bytes) -> list:
        """Every whole frame in `data` (and the partial frame kept from before): what happened."""
        events: list = []
        if self.failed is not None:
            return events
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
                self._on_frame(frame_type, flags, stream_id, payload, events)
        except (HPACKError, struct.error, IndexError, ValueError) as error:
            self.failed = CallFailure("protocol", f"malformed HTTP/2 from the server: {error}")
            events.append(ConnectionFailed(self.failed))
            return events
        if offset < end:
            buffer += data[offset:]
        return events

    def _on_frame(self, frame_type: int, flags: int, stream_id: int, payload: bytes, events: list) -> None:
        if self._continuation is not None and frame_type != CONTINUATION:
            raise ValueError("expected CONTINUATION")
        if frame_type == DATA:
            self._on_data(flags, stream_id, payload, events)
        elif frame_type == HEADERS:
            if flags & PADDED:
                payload = unpadded(payload)
            if flags & PRIORITY:
                payload = payload[5:]
            if flags & END_HEADERS:
                self._on_headers(stream_id, flags, payload, events)
            else:
                self._continuation = (stream_id, flags, bytearray(payload))
        elif frame_type == CONTINUATION:
            if self._continuation is None:
                raise ValueError("CONTINUATION without HEADERS")
            first_stream, first_flags, block = self._continuation
            if stream_id != first_stream:
                raise ValueError("CONTINUATION of another stream")
            block += payload
            if flags & END_HEADERS:
                self._continuation = None
                self._on_headers(first_stream, first_flags, bytes(block), events)
        elif frame_type == SETTINGS:
            if not flags & ACK:
                events.append(self._on_settings(payload))
                self.control.append(frame(SETTINGS, ACK, 0))
        elif frame_type == PING:
            if not flags & ACK:
                self.control.append(frame(PING, ACK, 0, payload))
        elif frame_type == WINDOW_UPDATE:
            increment = U32.unpack(payload)[0] & 0x7FFFFFFF
            if stream_id == 0:
                self.send_window += increment
            elif stream_id in self.send_windows:
                self.send_windows[stream_id] += increment
            events.append(WINDOW_OPENED)
        elif frame_type == RST_STREAM:
            code = U32.unpack(payload)[0]  # before the stream is forgotten: malformed fails it too
            stream = self.streams.pop(stream_id, None)
            if stream is not None:
                self.send_windows.pop(stream_id, None)
                stream.result = reset_failure(code)
                events.append(stream)
        elif frame_type == GOAWAY:
            events.append(self._on_goaway(payload, events))

    def _on_goaway(self, payload: bytes, events: list) -> GoingAway:
        """Streams above the last one the server took were never processed; those at or below
        it run to completion (a graceful shutdown sends two GOAWAYs, the second lowering it)."""
        last_stream = U32.unpack_from(payload, 0)[0] & 0x7FFFFFFF
        name = h2_error_name(U32.unpack_from(payload, 4)[0])
        debug = payload[8:].decode(errors="replace")
        self.last_stream = last_stream
        detail = f"server going away (HTTP/2 GOAWAY {name}{': ' + debug if debug else ''}): not processed (GOAWAY)"
        for stream_id in [stream_id for stream_id in self.streams if stream_id > last_stream]:
            stream = self.streams.pop(stream_id)
            self.send_windows.pop(stream_id, None)
            stream.result = CallFailure("connection reset", detail)
            events.append(stream)
        return GoingAway(last_stream, CallFailure("connection reset", detail))

    def _on_settings(self, payload: bytes) -> PeerSettings:
        max_streams_changed = window_changed = False
        for index in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, index)
            if key == SETTINGS_MAX_CONCURRENT_STREAMS:
                self.max_streams = value
                max_streams_changed = True
            elif key == SETTINGS_INITIAL_WINDOW_SIZE:
                delta = value - self.peer_initial_window
                self.peer_initial_window = value
                for stream_id in self.send_windows:
                    self.send_windows[stream_id] += delta
                window_changed = True
            elif key == SETTINGS_MAX_FRAME_SIZE:
                self.peer_max_frame = value
        return PeerSettings(max_streams_changed, window_changed)

    def _on_data(self, flags: int, stream_id: int, payload: bytes, events: list) -> None:
        self._received_unacknowledged += len(payload)
        if self._received_unacknowledged >= WINDOW_REFILL_AT:
            self.control.append(frame(WINDOW_UPDATE, 0, 0, U32.pack(self._received_unacknowledged)))
            self._received_unacknowledged = 0
        if flags & PADDED:
            payload = unpadded(payload)
        stream = self.streams.get(stream_id)
        if stream is None:
            return  # a cancelled call's late data
        stream.chunks.append(payload)
        stream.received += len(payload)
        if stream.received >= WINDOW_REFILL_AT:
            self.control.append(frame(WINDOW_UPDATE, 0, stream_id, U32.pack(stream.received)))
            stream.received = 0
        if flags & END_STREAM:
            del self.streams[stream_id]
            stream.result = CallFailure("protocol", "stream ended without grpc-status")
            events.append(stream)

    def _on_headers(self, stream_id: int, flags: int, block: bytes, events: list) -> None:
        headers = self._headers.decode(block)  # always, to keep the HPACK table in step
        stream = self.streams.get(stream_id)
        if stream is None:
            return
        if stream.headers is None and not flags & END_STREAM:
            stream.headers = headers
            status = next((v for k, v in headers if k == ":status"), "")
            if status != "200":  # not a gRPC answer (a proxy's error page): the HTTP status says why
                del self.streams[stream_id]
                self.control.append(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))
                grpc_status = next((v for k, v in headers if k == "grpc-status"), None)
                stream.result = call_outcome(headers, []) if grpc_status else http_status_failure(status)
                events.append(stream)
            return
        if not flags & END_STREAM:
            return
        # Trailers (or a trailers-only error response): the call's outcome.
        del self.streams[stream_id]
        stream.result = call_outcome(headers, stream.chunks, stream.headers)
        events.append(stream)
