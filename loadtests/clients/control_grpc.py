"""The one reader of Triton's control plane over gRPC: liveness, readiness, statistics, metadata,
config and the repository index, on the suite's own HTTP/2 wire (no grpcio channel).

    control = TritonGrpcControl(settings.triton_grpc)        # its first replica, e.g. 127.0.0.1:8001
    control.statistics(["identity"])["identity"]["1"]["inference_count"]   # as over HTTP
    control.model_config("identity")["max_batch_size"]

Triton's gRPC API has ModelStatistics, ModelMetadata and ModelConfig: a target reached
over gRPC only is observed as fully as one over HTTP. The answers are the same documents
as HTTP's `/v2/models/<m>/stats`, `/v2/models/<m>` and `/v2/models/<m>/config` (protobuf
as JSON, field names as in the .proto). Protobuf's JSON rules would leave out every zero value
(a model without batching had no `max_batch_size`) and write 64-bit numbers as strings (a
queue delay "1000"); `_document` prints the zeros and turns every 64-bit field, by the
.proto's types, back into a number, so each document equals HTTP's (a test compares them for
every model).

Each call is one unary call on a connection of its own (grpc_wire.Connection, TLS for
grpcs://, --header as metadata), closed when it is answered: the control plane makes a few
calls per run and per statistics interval, never on the timed path. So the Locust process
has one gRPC stack, the data plane's; grpcio is not used (tritonclient's generated protobuf
messages are).

`open_control(target)` picks the reader by the target's protocol: gRPC this one, HTTP the
HTTP one (loadtests/clients/control.py).

Failures: one ServerError line naming the call, e.g.
    gRPC ModelStatistics grpc://127.0.0.1:8001: connection refused: [Errno 111] Connection refused
    gRPC ModelMetadata grpc://127.0.0.1:8001: NOT_FOUND: Request for unknown model: 'x' is not found
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.json_format import MessageToDict
from tritonclient.grpc import service_pb2

from loadtests.clients.connections import CONNECT_TIMEOUT_S
from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl
from loadtests.clients.grpc_frames import GRPC_STATUS_NAMES, CallFailure, prepare_call
from loadtests.clients.grpc_pool import ConnectionPool
from loadtests.clients.grpc_tls import ALPN_H2
from loadtests.config.addresses import TritonTarget
from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError

SERVICE = "/inference.GRPCInferenceService/"
INT64_TYPES = frozenset(
    (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_SINT64,
     FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64)
)  # fmt: skip


def open_control(
    target: TritonTarget, timeout_s: float = DEFAULT_TIMEOUT_S, security: ConnectionSecurity | None = None
) -> TritonControl | TritonGrpcControl:
    """The control-plane reader of a target's first replica: over gRPC for a gRPC target, else HTTP."""
    if target.protocol == "grpc":
        return TritonGrpcControl(target, timeout_s=timeout_s, security=security)
    return TritonControl(target.control_address_of(target.first), timeout_s=timeout_s, security=security)


@dataclass(frozen=True)
class TritonGrpcControl:
    """Triton's control plane at a gRPC target's first replica (grpcs:// speaks TLS)."""

    target: TritonTarget
    timeout_s: float = DEFAULT_TIMEOUT_S
    security: ConnectionSecurity | None = None

    @property
    def address(self) -> str:
        """The address as the run directory records it (grpc://HOST:PORT)."""
        return self.target.control_address_of(self.target.first)

    def server_live(self) -> bool:
        return self._call("ServerLive", service_pb2.ServerLiveRequest(), service_pb2.ServerLiveResponse).live

    def model_ready(self, model: str) -> bool:
        request = service_pb2.ModelReadyRequest(name=model)
        return self._call("ModelReady", request, service_pb2.ModelReadyResponse).ready

    def server_metadata(self) -> dict[str, Any]:
        return _document(
            self._call("ServerMetadata", service_pb2.ServerMetadataRequest(), service_pb2.ServerMetadataResponse)
        )

    def model_metadata(self, model: str) -> dict[str, Any]:
        request = service_pb2.ModelMetadataRequest(name=model)
        return _document(self._call("ModelMetadata", request, service_pb2.ModelMetadataResponse))

    def model_config(self, model: str) -> dict[str, Any]:
        request = service_pb2.ModelConfigRequest(name=model)
        answer = _document(self._call("ModelConfig", request, service_pb2.ModelConfigResponse))
        return answer.get("config", answer)

    def repository_index(self, ready: bool = False) -> list[dict[str, Any]]:
        """Every model in the repositories: [{"name", "version", "state", "reason"}] (as over HTTP);
        `ready=True` lists only the models ready for inference."""
        request = service_pb2.RepositoryIndexRequest(ready=ready)
        answer = _document(self._call("RepositoryIndex", request, service_pb2.RepositoryIndexResponse))
        return list(answer.get("models", []))

    def statistics(self, models: list[str] | None = None) -> dict[str, dict[str, dict]]:
        """Raw statistics per model and loaded version, as TritonControl.statistics returns them."""
        out: dict[str, dict[str, dict]] = {}
        for model in models if models is not None else [""]:
            request = service_pb2.ModelStatisticsRequest(name=model)
            answer = _document(self._call("ModelStatistics", request, service_pb2.ModelStatisticsResponse))
            for entry in answer.get("model_stats", []):
                out.setdefault(entry["name"], {})[str(entry.get("version", ""))] = entry
            if model:
                out.setdefault(model, {})
        return out

    def _call(self, method: str, request, response_type):
        """One unary call on a connection of its own; ServerError (one line) when it fails."""
        security = self.security or ConnectionSecurity()
        context = security.context(ALPN_H2) if self.target.tls else None
        pool = ConnectionPool(self.target.replicas[0], 1, min(self.timeout_s, CONNECT_TIMEOUT_S), context)
        slot = pool.slot_for_new_user()
        call = prepare_call(
            self.target.first, SERVICE + method, request.SerializeToString(), self.timeout_s, security.headers,
            self.target.tls,
        )  # fmt: skip
        try:
            raw = pool.connection(slot).unary(call, self.timeout_s)
        except CallFailure as error:
            raise ServerError(f"gRPC {method} {self.address}: {_reason(error)}") from None
        finally:
            pool.release(slot)
        try:
            return response_type.FromString(raw)
        except Exception as error:  # protobuf's DecodeError
            raise ServerError(f"gRPC {method} {self.address}: undecodable answer ({error})") from None


def _document(message) -> dict[str, Any]:
    """The message as HTTP's JSON has it: every field, zeros included, 64-bit numbers as numbers."""
    document = MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)
    return _numbers(message.DESCRIPTOR, document)


def _numbers(descriptor: Descriptor, document: dict[str, Any]) -> dict[str, Any]:
    for key, value in document.items():
        field = descriptor.fields_by_name.get(key)
        if field is None:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            inner = field.message_type.fields_by_name["value"]
            document[key] = {name: _number(inner, item) for name, item in value.items()}
        elif isinstance(value, list):
            document[key] = [_number(field, item) for item in value]
        else:
            document[key] = _number(field, value)
    return document


def _number(field: FieldDescriptor, value: Any) -> Any:
    if field.message_type is not None and isinstance(value, dict):
        return _numbers(field.message_type, value)
    if field.type in INT64_TYPES and isinstance(value, str):
        return int(value)
    return value


def _reason(error: CallFailure) -> str:
    """The status name and Triton's message ("NOT_FOUND: Request for unknown model ..."), or
    what the wire saw itself ("connection refused: ...", "timeout: ..."), on one line."""
    what = GRPC_STATUS_NAMES.get(error.status, str(error.status)) if error.kind == "status" else error.kind
    detail = " ".join(str(error.detail).split())
    return f"{what}: {detail}"[:200] if detail else what
