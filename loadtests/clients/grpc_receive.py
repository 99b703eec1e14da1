"""The receiving half of `grpc_wire.Connection`: frames read and answered in the hub.

A gevent I/O watcher calls `_on_readable` when bytes arrive; every whole frame is handled at
once and a finished call's greenlet is switched to straight from the hub (no thread, no extra
greenlet). SETTINGS, PING and the window top-up are answered through the connection's
`_send_control`; RST_STREAM, GOAWAY and HTTP statuses become the calls' `CallFailure`s.
"""

from __future__ import annotations

import struct

from gevent import getcurrent
from hpack.exceptions import HPACKError

from loadtests.clients.grpc_frames import (
    ACK,
    CANCEL,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PADDED,
    PING,
    PRIORITY,
    READ_CHUNK,
    RST_STREAM,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    U32,
    WINDOW_REFILL_AT,
    WINDOW_UPDATE,
    CallFailure,
    StreamState,
    call_outcome,
    frame,
    h2_error_name,
    http_status_failure,
    reset_failure,
)


class FrameReceiver:
    """Frames in, for `grpc_wire.Connection` (whose __init__ sets the state used here)."""

    __slots__ = ()

    def _wake(self, stream: StreamState, result) -> None:
        # Runs in the hub (I/O watcher or _fail_all from a greenlet): a Waiter switches
        # straight into the greenlet waiting on it.
        if getcurrent() is self._hub:
            stream.waiter.switch(result)
        else:  # a greenlet closing the connection: the hub delivers it
            self._hub.loop.run_callback(stream.waiter.switch, result)

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
                self._settings_seen.set()
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
                self._wake(stream, reset_failure(U32.unpack(payload)[0]))
        elif frame_type == GOAWAY:
            self._on_goaway(payload)

    def _on_goaway(self, payload: bytes) -> None:
        """Streams above the last one the server took were never processed; those at or below
        it run to completion (a graceful shutdown sends two GOAWAYs, the second lowering it)."""
        last_stream = U32.unpack_from(payload, 0)[0] & 0x7FFFFFFF
        name = h2_error_name(U32.unpack_from(payload, 4)[0])
        debug = payload[8:].decode(errors="replace")
        self.usable = False
        detail = f"server going away (HTTP/2 GOAWAY {name}{': ' + debug if debug else ''}): not processed (GOAWAY)"
        for sid in [sid for sid in self._streams if sid > last_stream]:
            self._wake(self._streams.pop(sid), CallFailure("connection reset", detail))
        if not self._streams:
            self._fail_all(CallFailure("connection reset", detail))

    def _on_settings(self, payload: bytes) -> None:
        for index in range(0, len(payload) - 5, 6):
            key, value = struct.unpack_from(">HI", payload, index)
            if key == SETTINGS_MAX_CONCURRENT_STREAMS:
                self._max_streams = value
                self._stream_freed.set()
            elif key == SETTINGS_INITIAL_WINDOW_SIZE:
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
        if stream.headers is None and not flags & END_STREAM:
            stream.headers = headers
            status = next((v for k, v in headers if k == ":status"), "")
            if status != "200":  # not a gRPC answer (a proxy's error page): the HTTP status says why
                self._streams.pop(stream_id)
                self._send_control(frame(RST_STREAM, 0, stream_id, U32.pack(CANCEL)))
                grpc_status = next((v for k, v in headers if k == "grpc-status"), None)
                self._wake(stream, call_outcome(headers, []) if grpc_status else http_status_failure(status))
            return
        if not flags & END_STREAM:
            return
        # Trailers (or a trailers-only error response): the call's outcome.
        self._streams.pop(stream_id)
        self._wake(stream, call_outcome(headers, stream.chunks, stream.headers))
