"""The gRPC transport designs compared in bench/client-cost.md, each reduced to a `caller`:
a function that sends the prepared ModelInfer message once and returns the response bytes.

- grpcio, grpcio-local: today's client, grpcio's blocking call under `init_gevent`
  (every call handed between the gevent hub and an OS thread); `-local` gives each
  channel its own TCP connection (`grpc.use_local_subchannel_pool`).
- wire-user, wire-shared: `loadtests.clients.grpc_wire`, HTTP/2 frames written on gevent
  sockets, responses parsed in the hub; a connection per user, or one per process.
- h2lib: the same idea on the `h2` package's HTTP/2 state machine (one connection per
  user, the user's greenlet reads its own response).
- sender: a helper process without gevent runs grpc.aio for every user; requests and
  completions cross one pipe each way in batches (one wake-up carries all completions
  that are ready).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Callable

MODEL_INFER = "/inference.GRPCInferenceService/ModelInfer"
TIMEOUT_S = 10.0
Caller = Callable[[], bytes]


class Grpcio:
    def __init__(self, address: str, local_pool: bool = False) -> None:
        import grpc
        import grpc.experimental.gevent as grpc_gevent

        grpc_gevent.init_gevent()
        self._grpc = grpc
        self.address = address
        self.options = [("grpc.use_local_subchannel_pool", 1)] if local_pool else []
        self.channels = []

    def caller(self, message: bytes) -> Caller:
        channel = self._grpc.insecure_channel(self.address, options=self.options)
        self.channels.append(channel)
        method = channel.unary_unary(MODEL_INFER)
        return lambda: method(message, timeout=TIMEOUT_S)

    def close(self) -> None:
        for channel in self.channels:
            channel.close()


class Wire:
    def __init__(self, address: str, users_per_connection: int) -> None:
        from loadtests.clients.grpc_frames import prepare_call
        from loadtests.clients.grpc_pool import ConnectionPool
        from loadtests.config.addresses import TritonTarget

        target = TritonTarget.parse("--address", address, "grpc")
        self.pool = ConnectionPool(target.replicas[0], users_per_connection)
        self.address, self.prepare_call = address, prepare_call

    def caller(self, message: bytes) -> Caller:
        slot = self.pool.slot_for_new_user()
        pool = self.pool
        call = self.prepare_call(self.address, MODEL_INFER, message, TIMEOUT_S)
        return lambda: pool.connection(slot).unary(call, TIMEOUT_S)

    def close(self) -> None:
        for slot in range(len(self.pool._slots)):
            self.pool.release(slot)


class H2Lib:
    """The h2 package's state machine; the caller's greenlet reads until its stream ends."""

    def __init__(self, address: str) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port)
        self.sockets = []

    def caller(self, message: bytes) -> Caller:
        import socket

        import h2.config
        import h2.connection
        import h2.events

        sock = socket.create_connection((self.host, self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sockets.append(sock)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        conn.initiate_connection()
        conn.increment_flow_control_window(2**31 - 1 - 65535)
        sock.sendall(conn.data_to_send())
        body = struct.pack(">BI", 0, len(message)) + message
        headers = [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", MODEL_INFER.encode()),
            (b":authority", f"{self.host}:{self.port}".encode()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        ]

        def call() -> bytes:
            stream_id = conn.get_next_available_stream_id()
            conn.send_headers(stream_id, headers)
            conn.send_data(stream_id, body, end_stream=True)
            sock.sendall(conn.data_to_send())
            chunks, status = [], None
            while status is None:
                data = sock.recv(65536)
                if not data:
                    raise ConnectionResetError("closed")
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.DataReceived):
                        chunks.append(event.data)
                        conn.acknowledge_received_data(event.flow_controlled_length, stream_id)
                    elif isinstance(event, h2.events.TrailersReceived):
                        status = dict(event.headers).get(b"grpc-status")
                    elif isinstance(event, h2.events.StreamReset):
                        raise ConnectionResetError("reset")
                pending = conn.data_to_send()
                if pending:
                    sock.sendall(pending)
            if status != b"0":
                raise RuntimeError(f"grpc-status {status}")
            return b"".join(chunks)[5:]

        return call

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


SENDER_SOURCE = r"""
import asyncio, os, struct, sys
import grpc

async def main(address, read_fd, write_fd):
    channel = grpc.aio.insecure_channel(address)
    method = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0))
    out = os.fdopen(write_fd, "wb", 0)
    ready = []
    flush_scheduled = False

    def flush():
        nonlocal flush_scheduled
        flush_scheduled = False
        out.write(b"".join(ready))
        ready.clear()

    async def one(tag, message):
        nonlocal flush_scheduled
        try:
            reply = await method(message, timeout=10)
            ready.append(struct.pack(">IBI", tag, 0, len(reply)) + reply)
        except grpc.aio.AioRpcError as error:
            ready.append(struct.pack(">IBI", tag, 1, 0))
        if not flush_scheduled:  # everything that completes in this loop turn goes in one write
            flush_scheduled = True
            loop.call_soon(flush)

    while True:
        head = await reader.readexactly(8)
        tag, length = struct.unpack(">II", head)
        message = await reader.readexactly(length)
        asyncio.ensure_future(one(tag, message))

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


class Sender:
    """Design (d): a process without gevent sends; the user greenlets wait on tags."""

    def __init__(self, address: str) -> None:
        import gevent
        from gevent.hub import Waiter, get_hub
        from gevent.os import make_nonblocking

        to_child_r, self._to_child_w = os.pipe()
        self._from_child_r, from_child_w = os.pipe()
        self._process = subprocess.Popen(
            [sys.executable, "-c", SENDER_SOURCE, address, str(to_child_r), str(from_child_w)],
            pass_fds=(to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        make_nonblocking(self._from_child_r)
        self._Waiter, self._hub = Waiter, get_hub()
        self._waiters: dict[int, object] = {}
        self._next_tag = 0
        self._buffer = b""
        self._watcher = self._hub.loop.io(self._from_child_r, 1)
        self._watcher.start(self._on_readable)
        self._gevent = gevent

    def _on_readable(self) -> None:
        try:
            data = os.read(self._from_child_r, 1 << 20)
        except BlockingIOError:
            return
        data = self._buffer + data
        offset = 0
        while len(data) - offset >= 9:
            tag, failed, length = struct.unpack_from(">IBI", data, offset)
            if len(data) - offset - 9 < length:
                break
            reply = data[offset + 9 : offset + 9 + length]
            offset += 9 + length
            self._waiters.pop(tag).switch(RuntimeError("failed") if failed else reply)
        self._buffer = data[offset:]

    def caller(self, message: bytes) -> Caller:
        from gevent.os import nb_write

        def call() -> bytes:
            tag = self._next_tag
            self._next_tag += 1
            waiter = self._waiters[tag] = self._Waiter(self._hub)
            nb_write(self._to_child_w, struct.pack(">II", tag, len(message)) + message)
            result = waiter.get()
            if isinstance(result, Exception):
                raise result
            return result

        return call

    def close(self) -> None:
        self._watcher.stop()
        self._process.kill()
        self._process.wait()


DESIGNS: dict[str, Callable[[str], object]] = {
    "grpcio": Grpcio,
    "grpcio-local": lambda address: Grpcio(address, local_pool=True),
    "wire-user": lambda address: Wire(address, 1),
    "wire-shared": lambda address: Wire(address, 0),
    "h2lib": H2Lib,
    "sender": Sender,
}
