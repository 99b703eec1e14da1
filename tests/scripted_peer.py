"""A scripted gRPC server (HTTP/2, the `h2` package as the SERVER) for what Triton does not do on
demand: SETTINGS changed mid-connection, MAX_CONCURRENT_STREAMS, tiny windows, CONTINUATION,
padding, GOAWAY in two steps, RST_STREAM codes, trailers-only answers, compressed messages,
HTTP statuses without grpc-status, PING, a server that stops reading.

Real sockets on 127.0.0.1 port 0, one thread per accepted connection; a test passes the
`script(peer)` each connection runs (`PeerConnection` below: read requests, answer them frame by
frame). The client under test runs in the test's own gevent hub (the wire uses gevent's sockets
whether or not the process is patched), so the two never share a loop.

    with H2Peer(lambda peer: peer.serve_forever()) as server:
        connection = Connection("127.0.0.1", server.port, connect_timeout_s=2)
"""

from __future__ import annotations

import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from h2.settings import SettingCodes

from loadtests.clients.grpc_frames import GOAWAY, MESSAGE_PREFIX, SETTINGS, frame, prepare_call

METHOD = "/inference.GRPCInferenceService/ModelInfer"


def grpc_message(payload: bytes, encoding: str | None = None) -> bytes:
    """A length-prefixed gRPC message, compressed (flag 1) with `encoding` if given."""
    if encoding == "gzip":
        packer = zlib.compressobj(wbits=31)
        payload = packer.compress(payload) + packer.flush()
    elif encoding == "deflate":
        payload = zlib.compress(payload)
    return MESSAGE_PREFIX.pack(1 if encoding else 0, len(payload)) + payload


def call_for(port: int, message: bytes, timeout_s: float | None = 5.0):
    return prepare_call(f"127.0.0.1:{port}", METHOD, message, timeout_s)


class PeerConnection:
    """One accepted connection, driven by a test's script (runs in the peer's thread)."""

    def __init__(self, sock: socket.socket, settings: dict[int, int], auto_window: bool) -> None:
        self.sock = sock
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.local_settings = h2.settings.Settings(client=False, initial_values=settings)
        self.h2.initiate_connection()
        # The stream limit is advertised, then enforced here as servers do (RST_STREAM
        # REFUSED_STREAM on the stream above it), not by h2 (which would end the connection).
        self.stream_limit = settings.get(SettingCodes.MAX_CONCURRENT_STREAMS)
        enforced = {key: value for key, value in settings.items() if key != SettingCodes.MAX_CONCURRENT_STREAMS}
        self.h2.local_settings = h2.settings.Settings(client=False, initial_values=enforced)
        # h2 reads its frame size limit only when it is built (or when a change is acknowledged).
        self.h2.max_inbound_frame_size = self.h2.local_settings.max_frame_size
        self.h2.incoming_buffer.max_frame_size = self.h2.max_inbound_frame_size
        self.open_streams: set[int] = set()
        self.refused: list[int] = []
        self.most_open = 0
        self.auto_window = auto_window  # give the client back the window of every DATA frame
        self.requests: dict[int, dict] = {}  # stream id -> {"headers", "body", "ended"}
        self.ended: list[int] = []  # whole requests not yet taken by next_request()
        self.resets: dict[int, int] = {}  # stream id -> RST_STREAM code the client sent
        self.events: list[object] = []
        self.closed = False
        self.flush()

    # -- reading -------------------------------------------------------------------------
    def pump(self, timeout_s: float = 5.0) -> bool:
        """Read once and handle what came; False when the client closed or nothing came."""
        self.sock.settimeout(timeout_s)
        try:
            data = self.sock.recv(1 << 20)
        except (TimeoutError, OSError):
            return False
        if not data:
            self.closed = True
            return False
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as error:
            self.events.append(error)
            self.closed = True
            return False
        for event in events:
            self._on_event(event)
        self.flush()
        return True

    def _on_event(self, event) -> None:
        self.events.append(event)
        if isinstance(event, h2.events.RequestReceived):
            if self.stream_limit is not None and len(self.open_streams) >= self.stream_limit:
                self.refused.append(event.stream_id)
                self.h2.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                return
            self.open_streams.add(event.stream_id)
            self.most_open = max(self.most_open, len(self.open_streams))
            self.requests[event.stream_id] = {"headers": dict(event.headers), "body": bytearray(), "ended": False}
        elif isinstance(event, h2.events.DataReceived):
            if self.auto_window and event.flow_controlled_length:
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if event.stream_id in self.requests:
                self.requests[event.stream_id]["body"] += event.data
        elif isinstance(event, h2.events.StreamEnded) and event.stream_id in self.requests:
            self.requests[event.stream_id]["ended"] = True
            self.ended.append(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.resets[event.stream_id] = event.error_code
            self.open_streams.discard(event.stream_id)

    def goaway(self, last_stream_id: int, code: int = 0, debug: bytes = b"") -> None:
        """A GOAWAY frame (written raw: h2 sends nothing more after its own)."""
        self.send_raw(frame(GOAWAY, 0, 0, struct.pack(">II", last_stream_id, code) + debug))

    def limit_streams(self, limit: int) -> None:
        """A SETTINGS frame mid-connection lowering (or raising) MAX_CONCURRENT_STREAMS."""
        self.stream_limit = limit
        self.send_raw(frame(SETTINGS, 0, 0, struct.pack(">HI", SettingCodes.MAX_CONCURRENT_STREAMS, limit)))

    def next_request(self, timeout_s: float = 5.0) -> int:
        """The stream id of the next whole request (headers and body)."""
        end = time.monotonic() + timeout_s
        while not self.ended:
            if time.monotonic() > end or (not self.pump(max(end - time.monotonic(), 0.01)) and self.closed):
                raise TimeoutError("no whole request from the client")
        return self.ended.pop(0)

    def message(self, stream_id: int) -> bytes:
        body = bytes(self.requests[stream_id]["body"])
        return body[5 : 5 + struct.unpack_from(">I", body, 1)[0]]

    # -- writing -------------------------------------------------------------------------
    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def send_raw(self, data: bytes) -> None:
        self.flush()
        self.sock.sendall(data)

    def respond(
        self,
        stream_id: int,
        message: bytes | None = None,
        status: int = 0,
        encoding: str | None = None,
        pad: int | None = None,
        text: str = "",
    ) -> None:
        """A whole answer: headers, the message (an echo of the request if None), trailers. A
        stream the client has given up on meanwhile (RST_STREAM, h2 forgot it) gets none, as a
        server drops the answer to a cancelled call."""
        if not self._still_open(stream_id):
            return
        headers = [(":status", "200"), ("content-type", "application/grpc")]
        if encoding:
            headers.append(("grpc-encoding", encoding))
        self.h2.send_headers(stream_id, headers)
        body = grpc_message(self.message(stream_id) if message is None else message, encoding)
        self.send_data(stream_id, body, pad=pad)
        trailers = [("grpc-status", str(status))] + ([("grpc-message", text)] if text else [])
        self.h2.send_headers(stream_id, trailers, end_stream=True)
        self.open_streams.discard(stream_id)
        self.flush()

    def _still_open(self, stream_id: int) -> bool:
        self.pump(0.001)  # an RST_STREAM already on its way is read first
        return stream_id not in self.resets and stream_id in self.h2.streams and not self.h2.streams[stream_id].closed

    def send_data(self, stream_id: int, body: bytes, pad: int | None = None) -> None:
        """DATA within the client's windows and frame size, waiting for WINDOW_UPDATE."""
        view = memoryview(body)
        while view:
            room = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if pad is not None:
                room -= pad + 1
            if room <= 0:
                self.flush()
                if not self.pump():
                    raise TimeoutError("the client never opened its window")
                continue
            self.h2.send_data(stream_id, bytes(view[:room]), pad_length=pad)
            view = view[room:]
        self.flush()

    def trailers_only(self, stream_id: int, status: int, message: str = "") -> None:
        headers = [(":status", "200"), ("content-type", "application/grpc"), ("grpc-status", str(status))]
        self.h2.send_headers(stream_id, headers + ([("grpc-message", message)] if message else []), end_stream=True)
        self.open_streams.discard(stream_id)
        self.flush()

    def serve_forever(self) -> None:
        """Echo every request until the client goes."""
        while not self.closed:
            if self.ended:
                self.respond(self.ended.pop(0))
            else:
                self.pump(0.2)


class H2Peer:
    """A listening scripted server: each accepted connection runs `script(PeerConnection)` in a thread.
    `settings`: the server's SETTINGS (h2.settings.SettingCodes keys); `recv_buffer`: SO_RCVBUF of
    accepted sockets (small: a peer that stops reading blocks a large write sooner)."""

    def __init__(
        self,
        script: Callable[[PeerConnection], None],
        settings: dict[int, int] | None = None,
        recv_buffer: int | None = None,
        auto_window: bool = True,
    ) -> None:
        self.script, self.settings, self.auto_window = script, settings or {}, auto_window
        self.listener = socket.create_server(("127.0.0.1", 0))
        if recv_buffer is not None:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
        self.port = self.listener.getsockname()[1]
        self.connections: list[PeerConnection] = []
        self.errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> H2Peer:
        self._accepting.start()
        return self

    def __exit__(self, *exc) -> None:
        self.listener.close()
        for peer in self.connections:
            peer.closed = True
            peer.sock.close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self.errors and exc[0] is None:
            raise self.errors[0]

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._run, args=(sock,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _run(self, sock: socket.socket) -> None:
        try:
            peer = PeerConnection(sock, self.settings, self.auto_window)
            self.connections.append(peer)
            self.script(peer)
        except OSError:
            pass  # the client (or the test's end) closed the socket
        except BaseException as error:  # reported by __exit__: a script's own mistake
            self.errors.append(error)
