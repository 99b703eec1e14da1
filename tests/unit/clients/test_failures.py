"""Failures are counted under stable, low-cardinality names, and successes around them are kept."""

from __future__ import annotations

import json
import socket
import struct
import threading
from contextlib import contextmanager

from loadtests.server import TritonPorts
from tests.helpers import run_cli


@contextmanager
def resetting_server():
    """Accepts connections and resets them at once: a fault a real Triton cannot produce on demand."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.recv(65536)
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


GRPC_PROBE = """
import json, sys
from locust.event import EventHook
from loadtests.clients.base import PreparedRequest
from loadtests.clients.connections import Connections
from loadtests.clients.grpc import GrpcClient
from loadtests.config.addresses import TritonTarget
names = []
event = EventHook()
event.add_listener(lambda exception=None, **_: names.append(str(exception) if exception else None))
client = GrpcClient(TritonTarget.parse("--triton-grpc", sys.argv[1], "grpc"), 2.0, event, Connections())
request = PreparedRequest("identity [grpc]", "identity", 1, b"")
client.infer(request)
client.close()
print(json.dumps(names))
"""


def test_grpc_connection_refused_and_reset():
    with TritonPorts.held() as closed:
        result = run_cli(["-c", GRPC_PROBE, f"127.0.0.1:{closed.grpc}"], timeout=60)
    assert json.loads(result.stdout) == ["connection refused"], result.stderr
    with resetting_server() as address:
        result = run_cli(["-c", GRPC_PROBE, address], timeout=60)
    assert json.loads(result.stdout)[0] in {"connection reset", "connection refused"}, result.stderr
