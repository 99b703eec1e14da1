"""--trace-sample's request ids on the gRPC wire, as a server receives them (a scripted HTTP/2
peer: what Triton's OpenTelemetry mode reads is the `traceparent` header, its file mode the
ModelInferRequest's `id`). The joins against a real Triton are in tests/system/tracing/."""

from __future__ import annotations

import re

import numpy as np
from locust.event import EventHook
from tritonclient.grpc import service_pb2

from loadtests.clients import Connections
from loadtests.clients.base import PreparedRequest
from loadtests.clients.grpc import GrpcClient
from loadtests.clients.trace_ids import TRACEPARENT_HEADER
from loadtests.config.addresses import TritonTarget
from loadtests.config.model_spec import ModelSpec, TensorSpec
from tests.scripted_peer import H2Peer

MODEL = ModelSpec("m", "1", "python", 8, (TensorSpec("INPUT0", "FP32", (4,)),), (TensorSpec("OUTPUT0", "FP32", (4,)),))
TRACEPARENT = re.compile(r"^00-0{16}([0-9a-f]{16})-0{15}1-01$")


def received(every: int, in_header: bool, requests: int) -> list[tuple[dict, service_pb2.ModelInferRequest]]:
    """The headers and message of each request a traced GrpcClient sent to a peer that echoes."""
    with H2Peer(lambda peer: peer.serve_forever()) as server:
        connections = Connections()
        target = TritonTarget.parse("--triton-grpc", f"127.0.0.1:{server.port}", "grpc")
        client = GrpcClient(target, 5.0, EventHook(), connections)
        client.trace_ids = connections.trace_ids
        connections.trace_ids.configure(every, in_header=in_header)
        wire = client.prepare(MODEL, {"INPUT0": np.ones((1, 4), np.float32)}, "m [grpc]", 1)
        for _ in range(requests):
            client.infer(PreparedRequest("m [grpc]", "m", 1, wire))
        client.close()
        peer = server.connections[0]
        seen = []
        for stream_id in sorted(peer.requests):
            message = service_pb2.ModelInferRequest.FromString(peer.message(stream_id))
            seen.append((dict(peer.requests[stream_id]["headers"]), message))
    return seen


def test_opentelemetry_mode_puts_a_traceparent_on_one_request_in_n():
    seen = received(every=5, in_header=True, requests=12)
    traced = [headers[TRACEPARENT_HEADER] for headers, _ in seen if TRACEPARENT_HEADER in headers]
    assert [TRACEPARENT_HEADER in headers for headers, _ in seen] == [index % 5 == 0 for index in range(12)]
    ids = [TRACEPARENT.match(value).group(1) for value in traced]  # a valid W3C traceparent each
    assert len(set(ids)) == len(ids) == 3
    assert all(message.id == "" for _, message in seen)  # the id rides in the header only


def test_file_mode_gives_every_request_its_own_id_in_the_message():
    seen = received(every=1, in_header=False, requests=6)
    ids = [message.id for _, message in seen]
    assert all(re.fullmatch(r"[0-9a-f]{16}", value) for value in ids), ids
    assert len(set(ids)) == 6 and len({value[:6] for value in ids}) == 1  # one process's prefix
    assert all(TRACEPARENT_HEADER not in headers for headers, _ in seen)
