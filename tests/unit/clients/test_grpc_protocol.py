"""The gRPC wire's HTTP/2 state (`grpc_protocol.GrpcProtocol`) fed bytes: no socket, thread or
clock. Every frame the server may send, built here byte by byte (HPACK blocks by the `hpack`
package's encoder), and what the protocol makes of it: ended calls, settings and windows, the
control frames it answers with. The connection's waiting and deadlines are in
tests/unit/clients/test_wire_grpc.py (a scripted server on loopback)."""

from __future__ import annotations

import struct
import zlib

import pytest
from hpack import Encoder

from loadtests.clients import grpc_protocol
from loadtests.clients.grpc_frames import (
    ACK,
    CONTINUATION,
    DATA,
    DEFAULT_WINDOW,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    MAX_STREAM_ID,
    MESSAGE_PREFIX,
    NO_MESSAGE,
    PADDED,
    PING,
    PREFACE,
    PRIORITY,
    RST_STREAM,
    SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_CONCURRENT_STREAMS,
    SETTINGS_MAX_FRAME_SIZE,
    WINDOW_UPDATE,
    CallFailure,
    frame,
)
from loadtests.clients.grpc_protocol import (
    WINDOW_OPENED,
    ConnectionFailed,
    GoingAway,
    GrpcProtocol,
    PeerSettings,
    StreamState,
)
from loadtests.clients.outcome import TimedChunks

BLOCK = b"\x83\x86"  # a request's header block: its bytes do not matter to the protocol
U32 = struct.Struct(">I")
OK_HEADERS = [(":status", "200"), ("content-type", "application/grpc")]


class Server:
    """The server's side of one connection, as bytes."""

    def __init__(self) -> None:
        self.encoder = Encoder()

    def block(self, fields) -> bytes:
        return self.encoder.encode(fields)

    def headers(self, stream_id: int, fields, flags: int = END_HEADERS) -> bytes:
        return frame(HEADERS, flags, stream_id, self.block(fields))

    def trailers(self, stream_id: int, status: int = 0, message: str | None = None) -> bytes:
        fields = [("grpc-status", str(status))] + ([("grpc-message", message)] if message else [])
        return self.headers(stream_id, fields, END_HEADERS | END_STREAM)

    def response(self, stream_id: int, message: bytes) -> bytes:
        return (
            self.headers(stream_id, OK_HEADERS)
            + frame(DATA, 0, stream_id, MESSAGE_PREFIX.pack(0, len(message)) + message)
            + self.trailers(stream_id)
        )


def settings(*pairs: tuple[int, int]) -> bytes:
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", key, value) for key, value in pairs))


def opened(count: int = 1, body: bytes = b"\0\0\0\0\x01x") -> tuple[GrpcProtocol, list[StreamState]]:
    protocol = GrpcProtocol()
    streams = [StreamState() for _ in range(count)]
    for stream in streams:
        protocol.open_stream(stream, BLOCK, body)
    return protocol, streams


def ended(events) -> list[tuple[int, object]]:
    """The calls that ended, as (stream id, result)."""
    return [(event.stream_id, event.result) for event in events if isinstance(event, StreamState)]


def failure_of(result) -> tuple:
    assert isinstance(result, CallFailure), result
    return result.kind, result.status, result.detail


def frames(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """(type, flags, stream id, payload) of each frame in `data`."""
    out, offset = [], 0
    while offset < len(data):
        length = int.from_bytes(data[offset : offset + 3], "big")
        stream_id = U32.unpack_from(data, offset + 5)[0]
        out.append((data[offset + 3], data[offset + 4], stream_id, data[offset + 9 : offset + 9 + length]))
        offset += 9 + length
    return out


# -- going out ---------------------------------------------------------------------------
def test_the_preface_sends_our_settings_and_opens_the_connection_window():
    hello = GrpcProtocol.preface()
    assert hello.startswith(PREFACE)
    (settings_type, _, _, payload), (window_type, _, stream_id, increment) = frames(hello[len(PREFACE) :])
    assert settings_type == SETTINGS and struct.unpack(">HIHI", payload) == (2, 0, 4, 2**31 - 1)
    assert (window_type, stream_id, U32.unpack(increment)[0]) == (WINDOW_UPDATE, 0, 2**31 - 1 - DEFAULT_WINDOW)


def test_a_request_that_fits_is_headers_and_one_data_frame_on_odd_increasing_ids():
    protocol = GrpcProtocol()
    sent = [protocol.open_stream(StreamState(), BLOCK, b"body") for _ in range(3)]
    assert [frames(data) for data in sent] == [
        [(HEADERS, END_HEADERS, sid, BLOCK), (DATA, END_STREAM, sid, b"body")] for sid in (1, 3, 5)
    ]
    assert sorted(protocol.streams) == [1, 3, 5]
    assert protocol.send_window == DEFAULT_WINDOW - 12


def test_a_request_larger_than_the_windows_goes_in_data_frames_as_they_open():
    protocol = GrpcProtocol()
    protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 100), (SETTINGS_MAX_FRAME_SIZE, 16_384)))
    stream = StreamState()
    body = bytes(range(250))
    assert frames(protocol.open_stream(stream, BLOCK, body)) == [(HEADERS, END_HEADERS, 1, BLOCK)]
    data, size = protocol.next_data(1, body)
    assert (frames(data), size) == ([(DATA, 0, 1, body[:100])], 100)
    assert protocol.next_data(1, body[100:]) == (b"", 0)  # the stream's window is spent
    assert protocol.receive(frame(WINDOW_UPDATE, 0, 1, U32.pack(500))) == [WINDOW_OPENED]
    data, size = protocol.next_data(1, body[100:])
    assert (frames(data), size) == ([(DATA, END_STREAM, 1, body[100:])], 150)
    assert 1 not in protocol.send_windows


def test_the_connection_window_and_the_frame_size_bound_each_data_frame():
    protocol = GrpcProtocol()
    protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 2**20), (SETTINGS_MAX_FRAME_SIZE, 16_384)))
    body = b"x" * 70_000
    protocol.open_stream(StreamState(), BLOCK, body)  # over the 64 KiB connection window
    sizes = []
    while (size := protocol.next_data(1, body[sum(sizes) :])[1]) > 0:
        sizes.append(size)
    assert sizes == [16_384] * 3 + [DEFAULT_WINDOW - 3 * 16_384]
    protocol.receive(frame(WINDOW_UPDATE, 0, 0, U32.pack(10_000)))  # the connection's
    assert protocol.next_data(1, body[sum(sizes) :])[1] == 70_000 - DEFAULT_WINDOW


def test_a_cancelled_call_is_reset_once_and_its_late_frames_are_ignored():
    server = Server()
    protocol, (_stream,) = opened()
    assert protocol.cancel(1)
    assert frames(protocol.take_control()) == [(RST_STREAM, 0, 1, U32.pack(8))]
    assert not protocol.cancel(1) and protocol.take_control() == b""
    assert protocol.receive(server.response(1, b"late")) == []


# -- a call's answer -----------------------------------------------------------------------
def test_a_response_ends_its_call_with_the_message():
    server = Server()
    protocol, (stream,) = opened()
    events = protocol.receive(server.response(1, b"hello"))
    assert events == [stream] and stream.result == b"hello"
    assert protocol.streams == {} and protocol.take_control() == b""


def test_responses_split_at_every_offset_read_the_same():
    server = Server()
    data = server.response(1, b"first") + server.response(3, b"second")
    for cut in range(len(data) + 1):
        protocol, _ = opened(2)
        events = protocol.receive(data[:cut]) + protocol.receive(data[cut:])
        assert ended(events) == [(1, b"first"), (3, b"second")], cut
    protocol, _ = opened(2)
    byte_by_byte = [event for i in range(len(data)) for event in protocol.receive(data[i : i + 1])]
    assert ended(byte_by_byte) == [(1, b"first"), (3, b"second")]


def test_interleaved_streams_and_a_message_over_several_data_frames():
    server = Server()
    protocol, (_one, _three) = opened(2)
    message = b"m" * 40
    body = MESSAGE_PREFIX.pack(0, len(message)) + message
    data = (
        server.headers(1, OK_HEADERS)
        + server.headers(3, OK_HEADERS)
        + frame(DATA, 0, 1, body[:10])
        + frame(DATA, 0, 3, MESSAGE_PREFIX.pack(0, 1) + b"3")
        + frame(DATA, 0, 1, body[10:])
        + server.trailers(3)
        + server.trailers(1)
    )
    assert ended(protocol.receive(data)) == [(3, b"3"), (1, message)]


def test_padded_data_and_headers_with_padding_and_priority():
    server = Server()
    protocol, (stream,) = opened()
    padded_headers = b"\x03" + b"\x00\x00\x00\x00\x0f" + server.block(OK_HEADERS) + b"\0\0\0"
    message = MESSAGE_PREFIX.pack(0, 3) + b"abc"
    data = (
        frame(HEADERS, END_HEADERS | PADDED | PRIORITY, 1, padded_headers)
        + frame(DATA, PADDED, 1, b"\x05" + message + b"\0" * 5)
        + frame(HEADERS, END_HEADERS | END_STREAM | PADDED, 1, b"\x02" + server.block([("grpc-status", "0")]) + b"\0\0")
    )
    assert protocol.receive(data) == [stream] and stream.result == b"abc"


@pytest.mark.parametrize("frame_type", [DATA, HEADERS])
def test_padding_as_long_as_the_frame_is_malformed(frame_type):
    protocol, _ = opened()
    (event,) = protocol.receive(frame(frame_type, PADDED | END_HEADERS, 1, b"\x04abc"))
    assert isinstance(event, ConnectionFailed)
    assert failure_of(event.failure) == (
        "protocol",
        None,
        "malformed HTTP/2 from the server: padding as long as the frame",
    )


def test_a_header_block_in_continuation_frames():
    server = Server()
    protocol, (stream,) = opened()
    long_message = "x" * 40_000
    block = server.block([("grpc-status", "3"), ("grpc-message", long_message)])
    data = (
        frame(HEADERS, END_STREAM, 1, block[:100])
        + frame(CONTINUATION, 0, 1, block[100:20_000])
        + frame(CONTINUATION, END_HEADERS, 1, block[20_000:])
    )
    assert protocol.receive(data) == [stream]
    assert failure_of(stream.result) == ("status", 3, long_message)
    assert ended(protocol.receive(server.response(7, b""))) == []  # not a call of ours, but decoded
    protocol.open_stream(StreamState(), BLOCK, b"x")
    assert ended(protocol.receive(server.response(3, b"again"))) == [(3, b"again")]  # HPACK still in step


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (frame(CONTINUATION, END_HEADERS, 1, b"\x88"), "CONTINUATION without HEADERS"),
        (frame(HEADERS, 0, 1, b"\x88") + frame(DATA, 0, 1, b"x"), "expected CONTINUATION"),
        (frame(HEADERS, 0, 1, b"\x88") + frame(CONTINUATION, END_HEADERS, 3, b""), "CONTINUATION of another stream"),
    ],
)
def test_a_bad_continuation_fails_the_connection(data, reason):
    protocol, _ = opened(2)
    (event,) = protocol.receive(data)
    assert isinstance(event, ConnectionFailed)
    assert event.failure.detail == f"malformed HTTP/2 from the server: {reason}"
    assert protocol.failed is event.failure
    assert protocol.receive(Server().response(1, b"x")) == []  # nothing more is read


def test_trailers_only_response_is_the_status_and_its_message_unquoted():
    server = Server()
    protocol, (stream,) = opened()
    fields = [*OK_HEADERS, ("grpc-status", "5"), ("grpc-message", "Request%20for%20unknown%20model")]
    assert protocol.receive(server.headers(1, fields, END_HEADERS | END_STREAM)) == [stream]
    assert failure_of(stream.result) == ("status", 5, "Request for unknown model")


@pytest.mark.parametrize(
    ("trailers", "expected"),
    [
        ([("grpc-status", "0")], ("protocol", None, NO_MESSAGE)),
        ([("x-other", "1")], ("protocol", None, "the call ended without grpc-status")),
        (
            [("grpc-status", "14"), ("grpc-message", "Exceeds maximum queue size")],
            ("status", 14, "Exceeds maximum queue size"),
        ),
    ],
)
def test_trailers_after_headers_without_a_message(trailers, expected):
    server = Server()
    protocol, (stream,) = opened()
    protocol.receive(server.headers(1, OK_HEADERS) + server.headers(1, trailers, END_HEADERS | END_STREAM))
    assert failure_of(stream.result) == expected


def test_data_that_ends_the_stream_without_trailers():
    server = Server()
    protocol, (stream,) = opened()
    assert protocol.receive(server.headers(1, OK_HEADERS) + frame(DATA, END_STREAM, 1, b"\0\0\0\0\0")) == [stream]
    assert failure_of(stream.result) == ("protocol", None, "stream ended without grpc-status")


@pytest.mark.parametrize(
    ("http_status", "grpc_status"),
    [(400, 13), (401, 16), (403, 7), (404, 12), (429, 14), (502, 14), (503, 14), (504, 14), (500, 2)],
)
def test_an_http_status_without_grpc_status_maps_as_the_grpc_spec_says_and_cancels_the_stream(http_status, grpc_status):
    server = Server()
    protocol, (stream,) = opened()
    events = protocol.receive(server.headers(1, [(":status", str(http_status)), ("content-type", "text/plain")]))
    assert events == [stream]
    assert failure_of(stream.result) == (
        "status",
        grpc_status,
        f"HTTP {http_status} from the gRPC server (no grpc-status)",
    )
    assert frames(protocol.take_control()) == [(RST_STREAM, 0, 1, U32.pack(8))]
    assert protocol.receive(frame(DATA, END_STREAM, 1, b"upstream says no")) == []  # the rest is ignored


def test_a_non_200_status_with_grpc_status_is_that_status():
    server = Server()
    protocol, (stream,) = opened()
    protocol.receive(server.headers(1, [(":status", "503"), ("grpc-status", "14"), ("grpc-message", "busy")]))
    assert failure_of(stream.result) == ("status", 14, "busy")


def compressed_answer(encoding: str, payload: bytes):
    """A call's result when its answer is `payload` flagged compressed, in `encoding`."""
    server = Server()
    protocol, (stream,) = opened()
    protocol.receive(
        server.headers(1, [*OK_HEADERS, ("grpc-encoding", encoding)])
        + frame(DATA, 0, 1, MESSAGE_PREFIX.pack(1, len(payload)) + payload)
        + server.trailers(1)
    )
    return stream.result


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_messages_are_decompressed(encoding):
    message = b"compressible " * 1000
    packer = zlib.compressobj(wbits=31 if encoding == "gzip" else 15)
    assert compressed_answer(encoding, packer.compress(message) + packer.flush()) == message


@pytest.mark.parametrize(
    ("encoding", "payload", "says"),
    [
        ("snappy", b"abc", "a compressed message in an unsupported grpc-encoding 'snappy'"),
        ("gzip", b"not gzip", "a gzip message that does not decompress: "),
    ],
)
def test_a_compressed_message_that_cannot_be_read_fails_clearly(encoding, payload, says):
    kind, _, detail = failure_of(compressed_answer(encoding, payload))
    assert kind == "protocol" and detail.startswith(says)


def test_a_streamed_call_times_each_data_frame_as_it_is_parsed():
    server = Server()
    protocol = GrpcProtocol()
    stream = StreamState()
    stream.chunks = TimedChunks()
    protocol.open_stream(stream, BLOCK, b"x")
    pieces = [MESSAGE_PREFIX.pack(0, 1) + bytes([n]) for n in range(3)]
    protocol.receive(server.headers(1, OK_HEADERS) + frame(DATA, 0, 1, pieces[0]))
    protocol.receive(frame(DATA, 0, 1, pieces[1]) + frame(DATA, 0, 1, pieces[2]) + server.trailers(1))
    assert list(stream.chunks) == pieces
    assert len(stream.chunks.times) == 3 and stream.chunks.times == sorted(stream.chunks.times)


# -- RST_STREAM and GOAWAY -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status", "detail"),
    [
        (0x7, 14, "stream refused by the server (HTTP/2 REFUSED_STREAM): not processed"),
        (0x8, 1, "stream closed by the server with HTTP/2 CANCEL"),
        (0xB, 8, "stream closed by the server with HTTP/2 ENHANCE_YOUR_CALM"),
        (0xC, 7, "stream closed by the server with HTTP/2 INADEQUATE_SECURITY"),
        (0x2, 13, "stream closed by the server with HTTP/2 INTERNAL_ERROR"),
        (0x0, 13, "stream closed by the server with HTTP/2 NO_ERROR"),
        (0x99, 13, "stream closed by the server with HTTP/2 error 0x99"),
    ],
)
def test_rst_stream_codes_map_to_grpc_statuses(code, status, detail):
    protocol, (_one, three) = opened(2)
    assert protocol.receive(frame(RST_STREAM, 0, 3, U32.pack(code))) == [three]
    assert failure_of(three.result) == ("status", status, detail)
    assert list(protocol.streams) == [1]  # the other call goes on
    assert protocol.receive(frame(RST_STREAM, 0, 3, U32.pack(code))) == []  # an ended stream's: ignored


def test_goaway_fails_the_calls_above_its_last_stream_and_lets_the_others_finish():
    server = Server()
    protocol, (_one, _three, five) = opened(3)
    events = protocol.receive(frame(GOAWAY, 0, 0, U32.pack(MAX_STREAM_ID) + U32.pack(0)))
    (going,) = events
    assert isinstance(going, GoingAway) and going.last_stream == MAX_STREAM_ID and len(protocol.streams) == 3
    events = protocol.receive(frame(GOAWAY, 0, 0, U32.pack(3) + U32.pack(0) + b"shutting down"))
    detail = "server going away (HTTP/2 GOAWAY NO_ERROR: shutting down): not processed (GOAWAY)"
    assert events[0] is five and failure_of(five.result) == ("connection reset", None, detail)
    assert isinstance(events[1], GoingAway) and events[1].last_stream == 3 == protocol.last_stream
    assert failure_of(events[1].failure) == ("connection reset", None, detail)
    assert ended(protocol.receive(server.response(1, b"a") + server.response(3, b"b"))) == [(1, b"a"), (3, b"b")]


def test_goaway_with_an_error_and_no_debug_data():
    protocol, (stream,) = opened()
    events = protocol.receive(frame(GOAWAY, 0, 0, U32.pack(0) + U32.pack(0xB)))
    detail = "server going away (HTTP/2 GOAWAY ENHANCE_YOUR_CALM): not processed (GOAWAY)"
    assert ended(events) == [(1, stream.result)] and stream.result.detail == detail
    assert protocol.streams == {}


# -- SETTINGS, PING, WINDOW_UPDATE -----------------------------------------------------------
def test_settings_are_acknowledged_and_say_what_changed():
    protocol = GrpcProtocol()
    (event,) = protocol.receive(settings((SETTINGS_MAX_CONCURRENT_STREAMS, 2)))
    assert isinstance(event, PeerSettings) and (event.max_streams_changed, event.window_changed) == (True, False)
    assert protocol.max_streams == 2
    assert frames(protocol.take_control()) == [(SETTINGS, ACK, 0, b"")]
    (event,) = protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 1_000), (SETTINGS_MAX_FRAME_SIZE, 65_536)))
    assert (event.max_streams_changed, event.window_changed) == (False, True)
    assert (protocol.peer_initial_window, protocol.peer_max_frame) == (1_000, 65_536)
    assert frames(protocol.take_control()) == [(SETTINGS, ACK, 0, b"")]
    assert protocol.receive(frame(SETTINGS, ACK, 0)) == [] and protocol.take_control() == b""  # our own, acked


def test_an_initial_window_change_applies_to_the_open_streams():
    protocol = GrpcProtocol()
    protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 1_000)))
    body = b"x" * 5_000
    protocol.open_stream(StreamState(), BLOCK, body)
    assert protocol.next_data(1, body)[1] == 1_000
    protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 100)))  # lowered: the stream's window is -900
    assert protocol.send_windows == {1: -900}
    protocol.receive(frame(WINDOW_UPDATE, 0, 1, U32.pack(950)))
    assert protocol.next_data(1, body[1_000:])[1] == 50
    protocol.receive(settings((SETTINGS_INITIAL_WINDOW_SIZE, 3_100)))  # raised by 3,000
    assert protocol.next_data(1, body[1_050:])[1] == 3_000


def test_ping_is_answered_with_its_payload():
    protocol = GrpcProtocol()
    assert protocol.receive(frame(PING, 0, 0, b"12345678")) == []
    assert frames(protocol.take_control()) == [(PING, ACK, 0, b"12345678")]
    assert protocol.receive(frame(PING, ACK, 0, b"87654321")) == [] and protocol.take_control() == b""


def test_window_updates_for_the_connection_and_a_stream():
    protocol, _ = opened()
    protocol.send_windows[1] = 10
    assert protocol.receive(frame(WINDOW_UPDATE, 0, 0, U32.pack(0x80000000 | 100))) == [WINDOW_OPENED]  # reserved bit
    assert protocol.send_window == DEFAULT_WINDOW - 6 + 100
    protocol.receive(frame(WINDOW_UPDATE, 0, 1, U32.pack(5)) + frame(WINDOW_UPDATE, 0, 7, U32.pack(5)))
    assert protocol.send_windows == {1: 15}  # stream 7 is not ours: ignored


def test_received_data_tops_up_the_windows_it_used(monkeypatch):
    monkeypatch.setattr(grpc_protocol, "WINDOW_REFILL_AT", 100)
    server = Server()
    protocol, (_stream,) = opened()
    protocol.receive(server.headers(1, OK_HEADERS) + frame(DATA, 0, 1, b"x" * 60))
    assert protocol.take_control() == b""
    protocol.receive(frame(DATA, 0, 1, b"x" * 60))
    assert frames(protocol.take_control()) == [
        (WINDOW_UPDATE, 0, 0, U32.pack(120)),
        (WINDOW_UPDATE, 0, 1, U32.pack(120)),
    ]


# -- malformed input -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        frame(WINDOW_UPDATE, 0, 0, b"\0\0\x01"),  # 3 bytes, not 4
        frame(RST_STREAM, 0, 1, b""),
        frame(GOAWAY, 0, 0, b"\0\0"),
        frame(HEADERS, END_HEADERS, 1, b"\xff\xff\xff\xff"),  # an HPACK index far past any table
        frame(DATA, PADDED, 1, b""),
    ],
)
def test_malformed_frames_fail_the_connection_as_protocol(data):
    protocol, (stream,) = opened()
    (event,) = protocol.receive(data)
    assert isinstance(event, ConnectionFailed)
    kind, _, detail = failure_of(event.failure)
    assert kind == "protocol" and detail.startswith("malformed HTTP/2 from the server: ")
    assert stream.result is None and 1 in protocol.streams  # the connection fails its calls


def test_frames_of_unknown_types_are_ignored():
    server = Server()
    protocol, (stream,) = opened()
    assert protocol.receive(frame(0x2, 0, 1, b"\0" * 5) + frame(0xFA, 0xFF, 0, b"ext")) == []
    assert protocol.receive(server.response(1, b"ok")) == [stream]
