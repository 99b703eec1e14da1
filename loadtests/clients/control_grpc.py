"""The one reader of Triton's control plane over gRPC: statistics, metadata and config.

    control = TritonGrpcControl(settings.triton_grpc)        # its first replica, e.g. 127.0.0.1:8001
    control.statistics(["identity"])["identity"]["1"]["inference_count"]   # as over HTTP
    control.model_config("identity")["max_batch_size"]

Triton's gRPC API has ModelStatistics, ModelMetadata and ModelConfig: a target reached
over gRPC only is observed as fully as one over HTTP. The answers are the same documents
as HTTP's `/v2/models/<m>/stats`, `/v2/models/<m>` and `/v2/models/<m>/config` (protobuf
as JSON, field names as in the .proto), with protobuf's JSON rules: 64-bit counters come
as strings ("12", turned back into numbers here) and zero counters are left out (the
statistics' readers default a missing counter to 0: recording/server_stats.py).

`open_control(target)` picks the reader by the target's protocol: gRPC this one, HTTP the
HTTP one (loadtests/clients/control.py).

Failures: one ServerError line naming the call, e.g.
    gRPC ModelStatistics 127.0.0.1:8001: UNAVAILABLE: failed to connect to all addresses
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import MessageToDict

from loadtests.clients.control import DEFAULT_TIMEOUT_S, TritonControl
from loadtests.config.addresses import TritonTarget
from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError


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

    def server_metadata(self) -> dict[str, Any]:
        return self._call("ServerMetadata", lambda client, kw: client.get_server_metadata(**kw))

    def model_metadata(self, model: str) -> dict[str, Any]:
        return self._call("ModelMetadata", lambda client, kw: client.get_model_metadata(model, **kw))

    def model_config(self, model: str) -> dict[str, Any]:
        answer = self._call("ModelConfig", lambda client, kw: client.get_model_config(model, **kw))
        return answer.get("config", answer)

    def repository_index(self) -> list[dict[str, Any]]:
        """Every model in the repositories: [{"name", "version", "state", "reason"}] (as over HTTP)."""
        answer = self._call("RepositoryIndex", lambda client, kw: client.get_model_repository_index(**kw))
        return list(answer.get("models", []))

    def statistics(self, models: list[str] | None = None) -> dict[str, dict[str, dict]]:
        """Raw statistics per model and loaded version, as TritonControl.statistics returns them."""
        out: dict[str, dict[str, dict]] = {}
        for model in models if models is not None else [""]:
            answer = self._call("ModelStatistics", lambda client, kw, m=model: client.get_inference_statistics(m, **kw))
            for entry in answer.get("model_stats", []):
                out.setdefault(entry["name"], {})[str(entry.get("version", ""))] = _counters(entry)
            if model:
                out.setdefault(model, {})
        return out

    def _call(self, what: str, call) -> dict[str, Any]:
        import tritonclient.grpc as grpcclient
        from tritonclient.utils import InferenceServerException

        from loadtests.clients.grpc import enable_gevent, grpcio_tls

        enable_gevent()  # grpcio cooperates with gevent only if told before its first channel
        security = self.security or ConnectionSecurity()
        kwargs = {"client_timeout": self.timeout_s, "headers": dict(security.headers) or None}
        try:
            client = grpcclient.InferenceServerClient(self.target.first, **grpcio_tls(security, self.target.tls))
        except InferenceServerException as error:
            raise ServerError(f"gRPC {what} {self.address}: {_reason(error)}") from None
        try:
            answer = call(client, kwargs)
        except InferenceServerException as error:
            raise ServerError(f"gRPC {what} {self.address}: {_reason(error)}") from None
        finally:
            client.close()
        return MessageToDict(answer, preserving_proto_field_name=True)


def _counters(value: Any, key: str = "") -> Any:
    """protobuf's JSON strings for 64-bit counters back to numbers, as HTTP's JSON has them
    (names and versions stay strings)."""
    if isinstance(value, dict):
        return {k: _counters(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_counters(v, key) for v in value]
    if isinstance(value, str) and key not in ("name", "version") and value.isdigit():
        return int(value)
    return value


def _reason(error: Exception) -> str:
    """tritonclient's "[StatusCode.UNAVAILABLE] ..." on one line, the status first."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text.replace("[StatusCode.", "").replace("] ", ": ", 1)[:200]
