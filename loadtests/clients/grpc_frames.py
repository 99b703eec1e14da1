"""gRPC over HTTP/2, the bytes: frame headers, the constant HPACK request header block, the
length-prefixed message and a stream's messages split from its DATA, grpc-status names, and
the failure a call raises (with the mapping of RST_STREAM codes and HTTP statuses onto it).

Built once per endpoint before the test (`prepare_call`), so a request costs one write of
bytes that never change. The connection's state, fed the server's bytes, is
`grpc_protocol.GrpcProtocol`; the connection that sends and reads them is `grpc_wire.Connection`.

What the wire handles of HTTP/2 (RFC 9113) and gRPC's mapping onto it:
- connection preface, SETTINGS (and its ACK; the first call waits for the server's),
  MAX_CONCURRENT_STREAMS (calls above it wait for a stream), PING answered, GOAWAY (streams
  above its last stream fail as "connection reset" "not processed (GOAWAY)", those below
  finish, then the connection closes);
- flow control both ways: it advertises the largest windows and tops the connection
  window up; a request larger than the server's window waits for WINDOW_UPDATE;
- HEADERS with CONTINUATION, padding and priority; HPACK decoding by the `hpack` package,
  with a cache of header blocks that leave the dynamic table unchanged (Triton's steady
  state is a few indexed fields);
- deadlines over the whole call: `grpc-timeout` is sent, the write is bounded too, and a
  call still unanswered at its deadline is cancelled with RST_STREAM (CANCEL) and fails as a
  timeout; a greenlet killed mid-call (a stopped run) cancels its stream the same way;
- statuses as grpcio and the gRPC spec map them: RST_STREAM codes (`reset_failure`), an HTTP
  status without grpc-status (`http_status_failure`); gzip/deflate replies decompressed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from types import MappingProxyType

from loadtests.clients.outcome import TimedChunks

# -- HTTP/2 constants (RFC 9113) --------------------------------------------------------
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
SETTINGS_ENABLE_PUSH, SETTINGS_MAX_CONCURRENT_STREAMS = 0x2, 0x3
SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_FRAME_SIZE = 0x4, 0x5
CANCEL = 0x8
MAX_WINDOW = 2**31 - 1
DEFAULT_WINDOW = 65_535
DEFAULT_MAX_FRAME = 16_384
MAX_STREAM_ID = 2**31 - 1
# Give the server back the connection window once this much of it is used (not per frame).
WINDOW_REFILL_AT = 2**30
READ_CHUNK = 256 * 1024

FRAME_HEADER = struct.Struct(">HBBBI")  # length (16 high bits, 8 low), type, flags, stream
U32 = struct.Struct(">I")
MESSAGE_PREFIX = struct.Struct(">BI")  # gRPC: compressed flag, message length

GRPC_STATUS_NAMES = MappingProxyType(
    {
        0: "OK",
        1: "CANCELLED",
        2: "UNKNOWN",
        3: "INVALID_ARGUMENT",
        4: "DEADLINE_EXCEEDED",
        5: "NOT_FOUND",
        6: "ALREADY_EXISTS",
        7: "PERMISSION_DENIED",
        8: "RESOURCE_EXHAUSTED",
        9: "FAILED_PRECONDITION",
        10: "ABORTED",
        11: "OUT_OF_RANGE",
        12: "UNIMPLEMENTED",
        13: "INTERNAL",
        14: "UNAVAILABLE",
        15: "DATA_LOSS",
        16: "UNAUTHENTICATED",
    }
)


H2_ERROR_NAMES = (
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
)
# RST_STREAM error code -> gRPC status, as grpcio maps them; any other code is INTERNAL (13).
RST_STREAM_STATUS = MappingProxyType({7: 14, 8: 1, 11: 8, 12: 7})
# The gRPC spec's HTTP-to-gRPC mapping for a response without grpc-status; others UNKNOWN (2).
HTTP_STATUS_GRPC = MappingProxyType({400: 13, 401: 16, 403: 7, 404: 12, 429: 14, 502: 14, 503: 14, 504: 14})


class CallFailure(Exception):
    """A call that returned no message. `kind` is one of: "status" (the server's grpc-status,
    in `status`), "timeout", "connection refused", "connection reset", "protocol"."""

    def __init__(self, kind: str, detail: str = "", status: int | None = None) -> None:
        super().__init__(kind if status is None else f"{kind} {status}")
        self.kind = kind
        self.detail = detail
        self.status = status


def h2_error_name(code: int) -> str:
    return H2_ERROR_NAMES[code] if code < len(H2_ERROR_NAMES) else f"error {code:#x}"


def reset_failure(code: int) -> CallFailure:
    """A call's stream reset by the server (RST_STREAM), as its gRPC status."""
    name = h2_error_name(code)
    if code == 7:
        return CallFailure("status", "stream refused by the server (HTTP/2 REFUSED_STREAM): not processed", 14)
    return CallFailure("status", f"stream closed by the server with HTTP/2 {name}", RST_STREAM_STATUS.get(code, 13))


def http_status_failure(http_status: str) -> CallFailure:
    """A response whose HTTP :status is not 200 and that carries no grpc-status."""
    status = HTTP_STATUS_GRPC.get(int(http_status), 2) if http_status.isdigit() else 2
    return CallFailure("status", f"HTTP {http_status} from the gRPC server (no grpc-status)", status)


def frame_header(length: int, frame_type: int, flags: int, stream_id: int) -> bytes:
    return FRAME_HEADER.pack(length >> 8, length & 0xFF, frame_type, flags, stream_id)


def frame(frame_type: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return frame_header(len(payload), frame_type, flags, stream_id) + payload


def hpack_int(value: int, prefix_bits: int, first_byte: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first_byte | value,))
    out = bytearray((first_byte | limit,))
    value -= limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name: bytes | int, value: bytes) -> bytes:
    """An HPACK literal without indexing (the dynamic table is never touched, so the
    block is the same bytes on every request): name by static index or as a string."""
    head = hpack_int(name, 4) if isinstance(name, int) else b"\x00" + hpack_int(len(name), 7) + name
    return head + hpack_int(len(value), 7) + value


def grpc_timeout(timeout_s: float) -> bytes:
    """The `grpc-timeout` header value: at most 8 digits and a unit."""
    for unit, scale in ((b"u", 1e6), (b"m", 1e3), (b"S", 1.0), (b"M", 1 / 60), (b"H", 1 / 3600)):
        value = int(timeout_s * scale + 0.999)
        if value < 100_000_000:
            return str(max(value, 1)).encode() + unit
    return b"99999999H"


def request_header_block(
    authority: str, path: str, timeout_s: float | None, metadata: tuple[tuple[str, str], ...] = (), tls: bool = False
) -> bytes:
    """The request's HPACK block; `metadata` (--header, lower-case names) after gRPC's own fields."""
    block = [
        b"\x83",  # :method POST (static index 3)
        b"\x87" if tls else b"\x86",  # :scheme https (static index 7) or http (6)
        hpack_literal(4, path.encode()),  # :path
        hpack_literal(1, authority.encode()),  # :authority
        hpack_literal(31, b"application/grpc"),  # content-type
        hpack_literal(b"te", b"trailers"),
    ]
    if timeout_s:
        block.append(hpack_literal(b"grpc-timeout", grpc_timeout(timeout_s)))
    block += [hpack_literal(name.encode("latin-1"), value.encode("latin-1")) for name, value in metadata]
    return b"".join(block)


@dataclass(frozen=True)
class PreparedCall:
    """A unary call's constant parts: the header block and the length-prefixed message."""

    header_block: bytes
    body: bytes  # gRPC framing: flag byte, 4-byte length, message
    # --trace-sample: `body` (Triton's file: the request's id) or `header_block` (OpenTelemetry:
    # a traceparent header) split around the id's place (clients/trace_ids.py), else None.
    traced: tuple[bytes, bytes] | None = None
    traced_in_header: bool = False

    @property
    def message_bytes(self) -> int:
        return len(self.body) - 5


@dataclass(frozen=True)
class PreparedStreamCall(PreparedCall):
    """A streamed request's call (ModelStreamInfer, clients/grpc_stream.py): also the request
    id every response of it carries."""

    request_id: str = ""


def prepare_call(
    authority: str,
    path: str,
    message: bytes,
    timeout_s: float | None,
    metadata: tuple[tuple[str, str], ...] = (),
    tls: bool = False,
) -> PreparedCall:
    """Frame one unary call's request once, for every connection to `authority`."""
    return PreparedCall(
        request_header_block(authority, path, timeout_s, metadata, tls), MESSAGE_PREFIX.pack(0, len(message)) + message
    )


NO_MESSAGE = "grpc-status 0 without a message"  # a unary call's failure; a stream's zero responses


def timed_messages(chunks: TimedChunks) -> list[tuple[bytes, int]]:
    """A stream's gRPC messages in order, each with the arrival time of the DATA frame that
    completed it. Raises CallFailure("protocol") for a message cut short or compressed (the
    suite never asks for compression)."""
    data = b"".join(chunks)
    ends, total = [], 0
    for chunk in chunks:
        total += len(chunk)
        ends.append(total)
    messages, offset, index = [], 0, 0
    while offset < len(data):
        if len(data) - offset < 5:
            raise CallFailure("protocol", "a stream message cut short in its length prefix")
        compressed, length = MESSAGE_PREFIX.unpack_from(data, offset)
        end = offset + 5 + length
        if end > len(data):
            raise CallFailure("protocol", "a stream message cut short")
        if compressed:
            raise CallFailure("protocol", "a compressed stream message (none was asked for)")
        while ends[index] < end:
            index += 1
        messages.append((data[offset + 5 : end], chunks.times[index]))
        offset = end
    return messages
