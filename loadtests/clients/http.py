"""Triton over HTTP/REST (KServe v2), with the binary tensor extension by default.

Request bodies are generated once with tritonclient's public `generate_request_body`,
framed once as a whole HTTP/1.1 request, and written on one keep-alive gevent socket per
user and replica (`http_wire.py`; only what an inference response needs is parsed, by
`http_protocol.py`).
tritonclient's own client is used to decode outputs for validation.

Several replicas (`--triton-http a:8000,b:8000` or a name resolving to several): the user
keeps one connection per replica and `--balance` picks the replica of each request (round
robin) or of the user (pin-user), see replicas.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from http.client import HTTPException

import gevent
import gevent.ssl
import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from loadtests.clients.base import CONTROL_TIMEOUT_S, SequenceStep, TritonClient
from loadtests.clients.connections import Connections
from loadtests.clients.control import LIVE_PATH, TritonControl, generate_stream_path, infer_path
from loadtests.clients.failures import (
    BAD_RESPONSE,
    CONNECTION_RESET,
    TIMEOUT,
    RequestFailure,
    connection_failure,
    http_failure,
)
from loadtests.clients.generate import generate_body
from loadtests.clients.http_protocol import ConnectionClosed, ResponseError
from loadtests.clients.http_wire import HttpConnection, build_request
from loadtests.clients.replicas import ROUND_ROBIN
from loadtests.clients.trace_ids import PLACEHOLDER, TRACEPARENT, TRACEPARENT_HEADER, split_at_placeholder
from loadtests.config.addresses import TritonTarget
from loadtests.config.model_spec import ModelSpec
from loadtests.config.security import ConnectionSecurity

INFER_HEADER = "Inference-Header-Content-Length"
CONNECTION_TIMEOUT_S = 5.0
EVENT_STREAM = "text/event-stream"


@dataclass(frozen=True)
class HttpWire:
    """`request` is the whole HTTP request on the wire (request line, headers, body)."""

    path: str
    body: bytes
    headers: dict[str, str]
    request: bytes = b""
    # --trace-sample: `request` split around its id's place (clients/trace_ids.py), else None.
    traced: tuple[bytes, bytes] | None = None
    # A decoupled model's generate_stream request: the model, to read its events' outputs.
    model: ModelSpec | None = None


class HttpClient(TritonClient):
    """Triton HTTP client for one user. `binary=False` sends and receives JSON tensors.
    `target` is --triton-http's (one replica or several); `connections` is the process's (a
    client of its own when not given)."""

    protocol = "http"

    def __init__(
        self,
        target: TritonTarget,
        timeout_s: float,
        request_event,
        binary: bool = True,
        connections: Connections | None = None,
        balance: str = ROUND_ROBIN,
        security: ConnectionSecurity | None = None,
    ) -> None:
        self.target = target
        self._tls = target.tls  # https://: every replica speaks TLS
        self._chooser = (connections or Connections()).chooser(target, balance)
        super().__init__(target, timeout_s, request_event)
        self.binary = binary
        self.security = security or ConnectionSecurity()
        self._connections: dict[str, HttpConnection] = {}
        self._headers = dict(self.security.headers)  # --header, on every request
        self._health_request = build_request(self.address, LIVE_PATH, b"", self._headers, method="GET")
        # Pre-flight over the first address, through the suite's one control-plane reader.
        self.control = TritonControl(
            target.control_address_of(self.address), timeout_s=CONTROL_TIMEOUT_S, security=self.security
        )

    def _connection(self, replica: str) -> HttpConnection:
        connection = self._connections.get(replica)
        if connection is None:
            host, port = self._chooser.replicas.endpoint(replica)
            timeout_s = self.timeout_s
            connection = HttpConnection(
                host,
                port,
                connect_timeout_s=min(CONNECTION_TIMEOUT_S, timeout_s),
                timeout_s=timeout_s,
                tls=self.security.context(context_class=gevent.ssl.SSLContext) if self._tls else None,
            )
            self._connections[replica] = connection
        return connection

    # -- control plane ----------------------------------------------------------------
    def server_live(self) -> bool:
        return self.control.server_live()

    def model_ready(self, model: str) -> bool:
        return self.control.model_ready(model)

    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        return self.control.model_metadata(model), self.control.model_config(model)

    def replica_clients(self) -> list[TritonClient]:
        replicas = self._chooser.replicas
        others = [replicas.endpoint(r) for r in replicas.current() if r != self.address]
        return [
            HttpClient(self.target.only(r), self.timeout_s, self.request_event, self.binary, security=self.security)
            for r in others
        ]

    # -- data plane ---------------------------------------------------------------------
    def prepare(
        self,
        model: ModelSpec,
        inputs: dict[str, np.ndarray],
        endpoint: str,
        batch_size: int,
        sequence: SequenceStep | None = None,
    ) -> HttpWire:
        if model.decoupled:  # streamed through generate_stream (http_stream.py); not traced
            return self._generate_stream(model, inputs)
        tensors = []
        for name, array in inputs.items():
            tensor = httpclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(array, binary_data=self.binary)
            tensors.append(tensor)
        outputs = [httpclient.InferRequestedOutput(o.name, binary_data=self.binary) for o in model.outputs]
        # Sequence parameters go in the request's JSON `parameters` (sequence_id, sequence_start,
        # sequence_end), as tritonclient writes them.
        flags = {}
        if sequence is not None:
            flags = {"sequence_id": sequence.correlation_id, "sequence_start": sequence.start}
            flags["sequence_end"] = sequence.end
        ids = self.trace_ids
        if ids is not None and not ids.in_header:
            flags["request_id"] = PLACEHOLDER
        body, json_size = httpclient.InferenceServerClient.generate_request_body(tensors, outputs=outputs, **flags)
        headers = {INFER_HEADER: str(json_size)} if json_size is not None else {}
        headers.update(self._headers)
        path = infer_path(model.name)
        request = build_request(self.address, path, body, headers)
        traced = None
        if ids is not None:  # the id in the body (Triton's file), or in a traceparent header
            header = {TRACEPARENT_HEADER: TRACEPARENT.format(PLACEHOLDER)} if ids.in_header else {}
            traced = split_at_placeholder(build_request(self.address, path, body, {**headers, **header}))
        return HttpWire(path, body, headers, request, traced)

    def _generate_stream(self, model: ModelSpec, inputs: dict[str, np.ndarray]) -> HttpWire:
        """A decoupled model's request, for HttpStreamClient (http_stream.py): generate's JSON."""
        body = generate_body(model, inputs)
        path = generate_stream_path(model.name)
        headers = {"Accept": EVENT_STREAM, **self._headers}
        request = build_request(self.address, path, body, headers, content_type="application/json")
        return HttpWire(path, body, headers, request, model=model)

    def warm(self) -> bool:
        try:
            for replica in self._chooser.targets():
                self._connection(replica).exchange(self._health_request)
        except (OSError, ResponseError, ValueError):
            return False
        return True

    def wire_bytes(self, wire: HttpWire) -> int:
        return len(wire.body)

    def _send(self, wire: HttpWire) -> tuple[int | None, bytes]:
        self.replica = replica = self._chooser.next()
        connection = self._connection(replica)
        try:
            # A failed exchange closes its connection: a late response to a timed-out
            # request is never read as the next request's.
            status, header_length, body = connection.exchange(self._request_bytes(wire))
        except (TimeoutError, gevent.Timeout, OSError, ResponseError, ValueError, HTTPException) as error:
            failure = _transport_failure(error)
            if failure.failure_class.backs_off:
                self._chooser.failed(replica)
            raise failure from None
        if status != 200:
            failure = http_failure(status, _error_text(body))
            if failure.failure_class.backs_off:
                self._chooser.failed(replica)
            raise failure
        return header_length, body

    def _request_bytes(self, wire: HttpWire) -> bytes:
        if wire.traced is None:
            return wire.request
        self.trace_id, stamped = self.trace_ids.stamp(wire.traced)
        return wire.request if stamped is None else stamped

    def _response_length(self, response: tuple[int | None, bytes]) -> int:
        return len(response[1])

    def _decode(self, response: tuple[int | None, bytes]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        header_length, body = response
        try:
            result = httpclient.InferResult.from_response_body(body, header_length=header_length)
        except (InferenceServerException, ValueError) as error:
            raise RequestFailure("validation: undecodable response", str(error)) from None
        described = result.get_response().get("outputs", [])
        datatypes = {o["name"]: o["datatype"] for o in described}
        return {name: result.as_numpy(name) for name in datatypes}, datatypes

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()


def _transport_failure(error: BaseException) -> RequestFailure:
    if isinstance(error, TimeoutError | gevent.Timeout):
        return RequestFailure(TIMEOUT.name, str(error))
    if isinstance(error, ConnectionClosed):
        return RequestFailure(CONNECTION_RESET.name, str(error))
    if isinstance(error, OSError):
        return connection_failure(error)
    return RequestFailure(BAD_RESPONSE.name, str(error))  # a malformed or truncated response


def _error_text(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", body[:200]))
    except (ValueError, AttributeError):
        return body[:200].decode(errors="replace")
