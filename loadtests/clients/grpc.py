"""Triton over gRPC: HTTP/2 frames written on gevent sockets, requests serialised once.

The ModelInfer request is protobuf bytes encoded before the test, framed once (HTTP/2
header block and gRPC length prefix: `grpc_frames.py`), sent and read on the socket of
`grpc_wire.py` (the response's frames parsed by `grpc_protocol.py`), and the response stays
bytes unless it is validated: no protobuf work and no thread hand-off on the timed path.
grpcio under gevent moves every call between an OS thread and the hub (`init_gevent`);
that cost 3-5x perf_analyzer's CPU per request (docs/explanation/performance.md). The control
plane (pre-flight, statistics) uses the same wire (control_grpc.py): no grpcio channel exists
in the Locust process, so grpcio is never told about gevent (tritonclient's generated
protobuf messages and its InferResult decoder are all it uses of tritonclient.grpc).

Connections: `users_per_connection` users share one HTTP/2 connection (streams are
multiplexed), 1 is a connection per user and 0 one per process (`--grpc-connections`).
perf_analyzer shares a channel between up to 6 of its contexts, the default here. The pools
are the process's (`Connections`, owned by SuiteProcess): with several replicas there is one
pool per replica, a user holds a slot in each replica it sends to, and `--balance` picks the
replica of each request (round robin) or of each user (pin-user), see replicas.py.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException, np_to_triton_dtype, serialize_byte_tensor

from loadtests.clients.base import CONTROL_TIMEOUT_S, SequenceStep, TritonClient
from loadtests.clients.connections import Connections
from loadtests.clients.control_grpc import TritonGrpcControl
from loadtests.clients.failures import BAD_RESPONSE, RequestFailure, grpc_failure
from loadtests.clients.grpc_frames import (
    GRPC_STATUS_NAMES,
    MESSAGE_PREFIX,
    CallFailure,
    PreparedCall,
    PreparedStreamCall,
    prepare_call,
    request_header_block,
)
from loadtests.clients.grpc_pool import ConnectionPool
from loadtests.clients.replicas import ROUND_ROBIN
from loadtests.clients.trace_ids import PLACEHOLDER, TRACEPARENT, TRACEPARENT_HEADER, split_at_placeholder
from loadtests.config.addresses import TritonTarget
from loadtests.config.model_spec import ModelSpec
from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError

MODEL_INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"
MODEL_STREAM_INFER_METHOD = "/inference.GRPCInferenceService/ModelStreamInfer"
# A streamed request asks for its final response even when it is empty (the model sent only the
# flag), so its end is always seen; every response carries the request's id.
EMPTY_FINAL_RESPONSE = "triton_enable_empty_final_response"
# perf_analyzer's gRPC client shares one channel (one TCP connection) between up to 6 of its
# concurrent contexts (TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT in tritonclient's C++ library).
DEFAULT_USERS_PER_CONNECTION = 6


def _tensor_bytes(array: np.ndarray) -> bytes:
    if array.dtype == np.object_ or array.dtype.type == np.bytes_:
        # tritonclient >= 2.4x returns a 0-d object array holding the bytes: .tobytes() on it
        # would give the 8-byte object pointer. .item() is the serialised bytes themselves.
        serialized = serialize_byte_tensor(array)
        return serialized.item() if serialized.size else b""
    return np.ascontiguousarray(array).tobytes()


def _failure(error: CallFailure) -> RequestFailure:
    """The wire's CallFailure in the suite's vocabulary (failures.py): a server's status by its
    class, whatever the wire saw itself by its own name."""
    if error.kind == "status":
        return grpc_failure(GRPC_STATUS_NAMES.get(error.status, str(error.status)), error.detail)
    if error.kind == "protocol":
        return RequestFailure(BAD_RESPONSE.name, error.detail)
    return RequestFailure(error.kind, error.detail)  # timeout, connection refused/reset


class GrpcClient(TritonClient):
    """Triton gRPC client for one user; `users_per_connection` and `balance` as in the module
    docstring. `target` is --triton-grpc's (one replica or several)."""

    protocol = "grpc"

    def __init__(
        self,
        target: TritonTarget,
        timeout_s: float,
        request_event,
        connections: Connections,
        users_per_connection: int = DEFAULT_USERS_PER_CONNECTION,
        balance: str = ROUND_ROBIN,
        security: ConnectionSecurity | None = None,
    ) -> None:
        self.target = target
        self._tls = target.tls  # grpcs://: every replica speaks TLS
        self.security = security or ConnectionSecurity()
        self._chooser = connections.chooser(target, balance)
        super().__init__(target, timeout_s, request_event)
        self._connections = connections
        self.users_per_connection = users_per_connection
        # This user's slot in the pool of each replica it has sent to.
        self._slots: dict[str, tuple[ConnectionPool, int]] = {}
        self._stream_ids = 0  # the ids of the streamed requests it prepared

    # -- control plane ----------------------------------------------------------------
    @property
    def control(self) -> TritonGrpcControl:
        """Pre-flight's calls to this client's first replica, on the suite's own wire."""
        return TritonGrpcControl(self.target.only(self.target.replicas[0]), CONTROL_TIMEOUT_S, self.security)

    def server_live(self) -> bool:
        if self._tls:  # the data plane's own handshake first: its failure names the reason in one line
            try:
                pool, slot = self._slot(self.address)
                pool.connection(slot)
            except CallFailure as error:
                raise ServerError(error.detail) from None
        return self.control.server_live()

    def model_ready(self, model: str) -> bool:
        return self.control.model_ready(model)

    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        control = self.control
        return control.model_metadata(model), control.model_config(model)

    def replica_clients(self) -> list[TritonClient]:
        replicas = self._chooser.replicas
        others = [replicas.endpoint(r) for r in replicas.current() if r != self.address]
        return [
            GrpcClient(self.target.only(r), self.timeout_s, self.request_event, Connections(), security=self.security)
            for r in others
        ]

    # -- data plane ---------------------------------------------------------------------
    def _slot(self, replica: str) -> tuple[ConnectionPool, int]:
        if replica not in self._slots:
            tls = self.security if self._tls else None
            pool = self._connections.grpc_pool(self._chooser.replicas.endpoint(replica), self.users_per_connection, tls)
            self._slots[replica] = (pool, pool.slot_for_new_user())
        return self._slots[replica]

    def warm(self) -> bool:
        try:
            for replica in self._chooser.targets():
                pool, slot = self._slot(replica)
                pool.connection(slot)
        except CallFailure:
            return False
        return True

    def prepare(
        self,
        model: ModelSpec,
        inputs: dict[str, np.ndarray],
        endpoint: str,
        batch_size: int,
        sequence: SequenceStep | None = None,
    ) -> PreparedCall:
        request = service_pb2.ModelInferRequest(model_name=model.name)
        ids = self.trace_ids
        if ids is not None and not ids.in_header:
            request.id = PLACEHOLDER
        if sequence is not None:
            # ModelInferRequest.parameters, as tritonclient sets them: the ID as int64_param
            # (workloads/sequences.py keeps IDs below 2**63), the flags as bool_param.
            request.parameters["sequence_id"].int64_param = sequence.correlation_id
            request.parameters["sequence_start"].bool_param = sequence.start
            request.parameters["sequence_end"].bool_param = sequence.end
        for name, array in inputs.items():
            tensor = request.inputs.add()
            tensor.name = name
            tensor.datatype = np_to_triton_dtype(array.dtype)
            tensor.shape.extend(array.shape)
            request.raw_input_contents.append(_tensor_bytes(array))
        for output in model.outputs:
            request.outputs.add().name = output.name
        if model.decoupled:  # streamed (grpc_stream.py); not traced: its id is the stream's own
            return self._stream_call(request, endpoint)
        message = request.SerializeToString()
        call = self._call(message)
        if ids is not None and ids.in_header:
            metadata = (*self.security.headers, (TRACEPARENT_HEADER, TRACEPARENT.format(PLACEHOLDER)))
            block = prepare_call(self.address, MODEL_INFER_METHOD, message, self.timeout_s, metadata, self._tls)
            call = replace(call, traced=split_at_placeholder(block.header_block), traced_in_header=True)
        elif ids is not None:
            call = replace(call, traced=split_at_placeholder(call.body))
        return call

    def _stream_call(self, request: service_pb2.ModelInferRequest, endpoint: str) -> PreparedStreamCall:
        """A decoupled model's request, for GrpcStreamClient (grpc_stream.py)."""
        self._stream_ids += 1
        request.id = f"{endpoint}#{self._stream_ids}"
        request.parameters[EMPTY_FINAL_RESPONSE].bool_param = True
        message = request.SerializeToString()
        block = request_header_block(
            self.address, MODEL_STREAM_INFER_METHOD, self.timeout_s, self.security.headers, self._tls
        )
        return PreparedStreamCall(block, MESSAGE_PREFIX.pack(0, len(message)) + message, request_id=request.id)

    def _call(self, message: bytes) -> PreparedCall:
        return prepare_call(self.address, MODEL_INFER_METHOD, message, self.timeout_s, self.security.headers, self._tls)

    def _traced(self, wire: PreparedCall) -> PreparedCall:
        """The call with the next trace id in its message (the same length as the placeholder)."""
        self.trace_id, stamped = self.trace_ids.stamp(wire.traced)
        if stamped is None:
            return wire
        if wire.traced_in_header:
            return PreparedCall(stamped, wire.body)
        return PreparedCall(wire.header_block, stamped)

    def wire_bytes(self, wire: PreparedCall) -> int:
        return wire.message_bytes

    def _send(self, wire: PreparedCall | bytes) -> bytes:
        if isinstance(wire, bytes):  # a bare serialised request (tests)
            wire = self._call(wire)
        elif wire.traced is not None:
            wire = self._traced(wire)
        self.replica = replica = self._chooser.next()
        pool, slot = self._slot(replica)
        try:
            return pool.connection(slot).unary(wire, self.timeout_s)
        except CallFailure as error:
            failure = _failure(error)
            if failure.failure_class.backs_off:
                self._chooser.failed(replica)
            raise failure from None

    def _response_length(self, response: bytes) -> int:
        return len(response)

    def _decode(self, raw: bytes) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        response = service_pb2.ModelInferResponse.FromString(raw)
        result = grpcclient.InferResult(response)
        try:
            arrays = {o.name: result.as_numpy(o.name) for o in response.outputs}
        except InferenceServerException as error:
            raise RequestFailure("validation: undecodable response", str(error)) from None
        return arrays, {o.name: o.datatype for o in response.outputs}

    def close(self) -> None:
        slots, self._slots = self._slots, {}
        for pool, slot in slots.values():
            pool.release(slot)
