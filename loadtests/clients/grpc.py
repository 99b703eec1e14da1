"""Triton over gRPC: HTTP/2 frames written on gevent sockets, requests serialised once.

The ModelInfer request is protobuf bytes encoded before the test, framed once (HTTP/2
header block and gRPC length prefix, see `grpc_wire.py`), and the response stays bytes
unless it is validated: no protobuf work and no thread hand-off on the timed path.
grpcio under gevent moves every call between an OS thread and the hub (`init_gevent`);
that cost 3-5x perf_analyzer's CPU per request (docs/performance.md). grpcio is still
what the control plane (pre-flight calls) uses, so `enable_gevent()` still runs first.

Connections: `users_per_connection` users share one HTTP/2 connection (streams are
multiplexed), 1 is a connection per user and 0 one per process (`--grpc-connections`).
perf_analyzer shares a channel between up to 6 of its contexts, the default here.
"""

from __future__ import annotations

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException, np_to_triton_dtype, serialize_byte_tensor

from loadtests.addresses import endpoint_tls
from loadtests.clients.base import CONTROL_TIMEOUT_S, RequestFailure, TritonClient
from loadtests.clients.grpc_frames import GRPC_STATUS_NAMES, CallFailure, PreparedCall, prepare_call
from loadtests.clients.grpc_pool import ConnectionPool
from loadtests.clients.grpc_tls import ALPN_H2
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.model_spec import ModelSpec

MODEL_INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"
# perf_analyzer's gRPC client shares one channel (one TCP connection) between up to 6 of its
# concurrent contexts (TRITON_CLIENT_GRPC_CHANNEL_MAX_SHARE_COUNT in tritonclient's C++ library).
DEFAULT_USERS_PER_CONNECTION = 6
CONNECT_TIMEOUT_S = 5.0

# One pool per (address, policy, security) in this process: users share connections through it.
_pools: dict[tuple[str, int, ConnectionSecurity], ConnectionPool] = {}

_gevent_enabled = False


def enable_gevent() -> None:
    """Make grpcio cooperate with gevent. Must run before the first channel is created."""
    global _gevent_enabled
    if not _gevent_enabled:
        import grpc.experimental.gevent as grpc_gevent

        grpc_gevent.init_gevent()
        _gevent_enabled = True


def grpcio_tls(security: ConnectionSecurity, tls: bool) -> dict:
    """tritonclient's TLS arguments for the control plane's grpcio channel (files by path).

    grpcio cannot skip verification, so --ssl-insecure is refused for grpcs:// when the options are read.
    """
    if not tls:
        return {}
    files = security.tls
    return {
        "ssl": True,
        "root_certificates": str(files.ca) if files.ca else None,
        "private_key": str(files.key) if files.key else None,
        "certificate_chain": str(files.cert) if files.cert else None,
    }


def _tensor_bytes(array: np.ndarray) -> bytes:
    if array.dtype == np.object_ or array.dtype.type == np.bytes_:
        # tritonclient >= 2.4x returns a 0-d object array holding the bytes: .tobytes() on it
        # would give the 8-byte object pointer. .item() is the serialised bytes themselves.
        serialized = serialize_byte_tensor(array)
        return serialized.item() if serialized.size else b""
    return np.ascontiguousarray(array).tobytes()


def _status_failure(name: str, details: str) -> RequestFailure:
    """A gRPC status as the failure names users rely on (the same as grpcio's client had)."""
    if name == "DEADLINE_EXCEEDED":
        return RequestFailure("timeout", details)
    if name == "UNAVAILABLE":
        lowered = details.lower()
        if "reset" in lowered or "closed" in lowered or "eof" in lowered:
            return RequestFailure("connection reset", details)
        return RequestFailure("connection refused", details)
    return RequestFailure(f"gRPC {name}", details)


def _failure(error: CallFailure) -> RequestFailure:
    if error.kind == "status":
        return _status_failure(GRPC_STATUS_NAMES.get(error.status, str(error.status)), error.detail)
    if error.kind == "protocol":
        return RequestFailure("bad response", error.detail)
    return RequestFailure(error.kind, error.detail)  # timeout, connection refused/reset


class GrpcClient(TritonClient):
    """Triton gRPC client for one user; `users_per_connection` as in the module docstring."""

    protocol = "grpc"

    def __init__(
        self,
        address: str,
        timeout_s: float,
        request_event,
        users_per_connection: int = DEFAULT_USERS_PER_CONNECTION,
        security: ConnectionSecurity | None = None,
    ) -> None:
        super().__init__(address, timeout_s, request_event)
        enable_gevent()  # for the control plane's grpcio channel
        self._authority, self._tls = endpoint_tls(address)  # "grpcs://host:port": TLS
        self.security = security or ConnectionSecurity()
        key = (address, users_per_connection, self.security)
        if key not in _pools:
            context = self.security.context(ALPN_H2) if self._tls else None
            _pools[key] = ConnectionPool(self._authority, users_per_connection, CONNECT_TIMEOUT_S, context)
        self._pool = _pools[key]
        self._slot = self._pool.slot_for_new_user()
        self._control: grpcclient.InferenceServerClient | None = None

    # -- control plane ----------------------------------------------------------------
    @property
    def control(self) -> grpcclient.InferenceServerClient:
        if self._control is None:
            self._control = grpcclient.InferenceServerClient(self._authority, **grpcio_tls(self.security, self._tls))
        return self._control

    def _calls(self) -> dict:
        """What every control-plane call takes: the timeout and --header as gRPC metadata."""
        return {"client_timeout": CONTROL_TIMEOUT_S, "headers": dict(self.security.headers) or None}

    def server_live(self) -> bool:
        if self._tls:  # the data plane's own handshake first: its failure names the reason in one line
            try:
                self._pool.connection(self._slot)
            except CallFailure as error:
                raise ServerError(error.detail) from None
        return bool(self.control.is_server_live(**self._calls()))

    def model_ready(self, model: str) -> bool:
        return bool(self.control.is_model_ready(model, **self._calls()))

    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        metadata = self.control.get_model_metadata(model, as_json=True, **self._calls())
        config = self.control.get_model_config(model, as_json=True, **self._calls())
        return metadata, config.get("config", config)

    # -- data plane ---------------------------------------------------------------------
    def warm(self) -> bool:
        try:
            self._pool.connection(self._slot)
        except CallFailure:
            return False
        return True

    def prepare(self, model: ModelSpec, inputs: dict[str, np.ndarray], endpoint: str, batch_size: int) -> PreparedCall:
        request = service_pb2.ModelInferRequest(model_name=model.name)
        for name, array in inputs.items():
            tensor = request.inputs.add()
            tensor.name = name
            tensor.datatype = np_to_triton_dtype(array.dtype)
            tensor.shape.extend(array.shape)
            request.raw_input_contents.append(_tensor_bytes(array))
        for output in model.outputs:
            request.outputs.add().name = output.name
        return self._call(request.SerializeToString())

    def _call(self, message: bytes) -> PreparedCall:
        return prepare_call(
            self._authority, MODEL_INFER_METHOD, message, self.timeout_s, self.security.headers, self._tls
        )

    def wire_bytes(self, wire: PreparedCall) -> int:
        return wire.message_bytes

    def _send(self, wire: PreparedCall | bytes) -> bytes:
        if isinstance(wire, bytes):  # a bare serialised request (tests)
            wire = self._call(wire)
        try:
            return self._pool.connection(self._slot).unary(wire, self.timeout_s)
        except CallFailure as error:
            raise _failure(error) from None

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
        if self._slot is not None:
            self._pool.release(self._slot)
            self._slot = None
        if self._control is not None:
            # Dropped here, while the hub runs: left to the interpreter's exit, tritonclient's
            # __del__ closes the grpcio channel again and waits on a hub that is gone (a hang
            # seen in tests/test_grpc_transport.py's deadline probe).
            control, self._control = self._control, None
            control.close()
            del control
