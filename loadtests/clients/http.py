"""Triton over HTTP/REST (KServe v2), with the binary tensor extension by default.

Request bodies are generated once with tritonclient's public `generate_request_body`,
framed once as a whole HTTP/1.1 request, and written on one keep-alive gevent socket per
user (`http_wire.py`: only what an inference response needs is parsed). tritonclient's
own client is used for the pre-flight calls and to decode outputs for validation.
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

from loadtests.addresses import endpoint_tls
from loadtests.clients.base import CONTROL_TIMEOUT_S, RequestFailure, TritonClient, connection_failure
from loadtests.clients.control import LIVE_PATH, TritonControl, infer_path
from loadtests.clients.http_wire import ConnectionClosed, HttpConnection, ResponseError, build_request
from loadtests.connection_security import ConnectionSecurity
from loadtests.errors import ServerError
from loadtests.model_spec import ModelSpec

INFER_HEADER = "Inference-Header-Content-Length"
CONNECTION_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HttpWire:
    """`request` is the whole HTTP request on the wire (request line, headers, body)."""

    path: str
    body: bytes
    headers: dict[str, str]
    request: bytes = b""


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ServerError(f"'{address}' is not a host:port address (e.g. 127.0.0.1:8000)")
    return host, int(port)


class HttpClient(TritonClient):
    """Triton HTTP client for one user. `binary=False` sends and receives JSON tensors."""

    protocol = "http"

    def __init__(
        self,
        address: str,
        timeout_s: float,
        request_event,
        binary: bool = True,
        security: ConnectionSecurity | None = None,
    ) -> None:
        super().__init__(address, timeout_s, request_event)
        self._authority, tls = endpoint_tls(address)  # "https://host:port": TLS
        self._host, self._port = _split_address(self._authority)
        self.binary = binary
        self.security = security or ConnectionSecurity()
        self._http = HttpConnection(
            self._host,
            self._port,
            connect_timeout_s=min(CONNECTION_TIMEOUT_S, timeout_s),
            timeout_s=timeout_s,
            tls=self.security.context(context_class=gevent.ssl.SSLContext) if tls else None,
        )
        self._headers = dict(self.security.headers)  # --header, on every request
        self._health_request = build_request(self._authority, LIVE_PATH, b"", self._headers, method="GET")
        # Pre-flight over the same address, through the suite's one control-plane reader.
        self.control = TritonControl(address, timeout_s=CONTROL_TIMEOUT_S, security=self.security)

    # -- control plane ----------------------------------------------------------------
    def server_live(self) -> bool:
        return self.control.server_live()

    def model_ready(self, model: str) -> bool:
        return self.control.model_ready(model)

    def model_metadata_and_config(self, model: str) -> tuple[dict, dict]:
        return self.control.model_metadata(model), self.control.model_config(model)

    # -- data plane ---------------------------------------------------------------------
    def prepare(self, model: ModelSpec, inputs: dict[str, np.ndarray], endpoint: str, batch_size: int) -> HttpWire:
        tensors = []
        for name, array in inputs.items():
            tensor = httpclient.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
            tensor.set_data_from_numpy(array, binary_data=self.binary)
            tensors.append(tensor)
        outputs = [httpclient.InferRequestedOutput(o.name, binary_data=self.binary) for o in model.outputs]
        body, json_size = httpclient.InferenceServerClient.generate_request_body(tensors, outputs=outputs)
        headers = {INFER_HEADER: str(json_size)} if json_size is not None else {}
        headers.update(self._headers)
        path = infer_path(model.name)
        return HttpWire(path, body, headers, build_request(self._authority, path, body, headers))

    def warm(self) -> bool:
        try:
            self._http.exchange(self._health_request)
        except (OSError, ResponseError, ValueError):
            return False
        return True

    def wire_bytes(self, wire: HttpWire) -> int:
        return len(wire.body)

    def _send(self, wire: HttpWire) -> tuple[int | None, bytes]:
        try:
            # A failed exchange closes its connection: a late response to a timed-out
            # request is never read as the next request's.
            status, header_length, body = self._http.exchange(wire.request)
        except (TimeoutError, gevent.Timeout, OSError, ResponseError, ValueError, HTTPException) as error:
            raise _transport_failure(error) from None
        if status != 200:
            raise RequestFailure(f"HTTP {status}", _error_text(body))
        return header_length, body

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
        self._http.close()


def _transport_failure(error: BaseException) -> RequestFailure:
    if isinstance(error, TimeoutError | gevent.Timeout):
        return RequestFailure("timeout", str(error))
    if isinstance(error, ConnectionClosed):
        return RequestFailure("connection reset", str(error))
    if isinstance(error, OSError):
        return connection_failure(error)
    return RequestFailure("bad response", str(error))  # a malformed or truncated response


def _error_text(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", body[:200]))
    except (ValueError, AttributeError):
        return body[:200].decode(errors="replace")
