"""Triton over gRPC: one channel per user, requests serialised once.

The ModelInfer method is called with no serializers, so the prepared request is
protobuf bytes encoded before the test and the response stays bytes unless it is
validated: no protobuf work on the timed path.

grpcio blocks the gevent loop unless `grpc.experimental.gevent.init_gevent()` runs
before any channel exists; `enable_gevent()` does that once per process and the
users call it before opening a client. Measured here: 8 users against a model that
sleeps 20 ms reached 365 requests/s (8 OS threads: 379), and Locust exited cleanly.
"""

from __future__ import annotations

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2
from tritonclient.utils import InferenceServerException, np_to_triton_dtype, serialize_byte_tensor

from loadtests.clients.base import CONTROL_TIMEOUT_S, RequestFailure, TritonClient
from loadtests.model_spec import ModelSpec

# Triton's own client raises these limits: inference payloads exceed gRPC's 4 MB default.
MAX_MESSAGE_BYTES = 2**31 - 1
# Reconnect soon after Triton comes back: grpc's default backoff grows to 120 s (measured:
# users resumed about 6 s after a restart). Capped at 800 ms, plus grpc's 20 % jitter,
# a channel retries within a second; while it waits, calls fail at once as UNAVAILABLE.
RECONNECT_BACKOFF_MS = 100
MAX_RECONNECT_BACKOFF_MS = 800
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
    ("grpc.min_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
    ("grpc.max_reconnect_backoff_ms", MAX_RECONNECT_BACKOFF_MS),
]

MODEL_INFER_METHOD = "/inference.GRPCInferenceService/ModelInfer"

_gevent_enabled = False


def enable_gevent() -> None:
    """Make grpcio cooperate with gevent. Must run before the first channel is created."""
    global _gevent_enabled
    if not _gevent_enabled:
        import grpc.experimental.gevent as grpc_gevent

        grpc_gevent.init_gevent()
        _gevent_enabled = True


def _tensor_bytes(array: np.ndarray) -> bytes:
    if array.dtype == np.object_ or array.dtype.type == np.bytes_:
        return serialize_byte_tensor(array).tobytes()
    return np.ascontiguousarray(array).tobytes()


def _failure(error: grpc.RpcError) -> RequestFailure:
    code = error.code()
    details = error.details() or ""
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return RequestFailure("timeout", details)
    if code == grpc.StatusCode.UNAVAILABLE:
        lowered = details.lower()
        if "reset" in lowered or "closed" in lowered or "eof" in lowered:
            return RequestFailure("connection reset", details)
        return RequestFailure("connection refused", details)
    return RequestFailure(f"gRPC {code.name}", details)


class GrpcClient(TritonClient):
    """Triton gRPC client for one user."""

    protocol = "grpc"

    def __init__(self, address: str, timeout_s: float, request_event) -> None:
        super().__init__(address, timeout_s, request_event)
        enable_gevent()
        self._channel = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
        # Raw bytes in and out (no serializers): see the module docstring.
        self._model_infer = self._channel.unary_unary(MODEL_INFER_METHOD)
        self._control: grpcclient.InferenceServerClient | None = None

    # -- control plane ----------------------------------------------------------------
    @property
    def control(self) -> grpcclient.InferenceServerClient:
        if self._control is None:
            self._control = grpcclient.InferenceServerClient(self.address)
        return self._control

    def server_live(self) -> bool:
        return bool(self.control.is_server_live(client_timeout=CONTROL_TIMEOUT_S))

    def model_ready(self, model: str) -> bool:
        return bool(self.control.is_model_ready(model, client_timeout=CONTROL_TIMEOUT_S))

    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        metadata = self.control.get_model_metadata(model, as_json=True, client_timeout=CONTROL_TIMEOUT_S)
        config = self.control.get_model_config(model, as_json=True, client_timeout=CONTROL_TIMEOUT_S)
        return metadata, config.get("config", config)

    # -- data plane ---------------------------------------------------------------------
    def warm(self) -> bool:
        try:
            grpc.channel_ready_future(self._channel).result(timeout=CONTROL_TIMEOUT_S)
        except grpc.FutureTimeoutError:
            return False
        return True

    def prepare(self, model: ModelSpec, inputs: dict[str, np.ndarray], endpoint: str, batch_size: int) -> bytes:
        request = service_pb2.ModelInferRequest(model_name=model.name)
        for name, array in inputs.items():
            tensor = request.inputs.add()
            tensor.name = name
            tensor.datatype = np_to_triton_dtype(array.dtype)
            tensor.shape.extend(array.shape)
            request.raw_input_contents.append(_tensor_bytes(array))
        for output in model.outputs:
            request.outputs.add().name = output.name
        return request.SerializeToString()

    def _send(self, wire: bytes) -> bytes:
        try:
            return self._model_infer(wire, timeout=self.timeout_s)
        except grpc.RpcError as error:
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
        self._channel.close()
        if self._control is not None:
            self._control.close()
