"""Triton over HTTP/REST (KServe v2), with the binary tensor extension by default.

Request bodies are generated once with tritonclient's public `generate_request_body`
and posted through one geventhttpclient connection per user (cooperative with
Locust's gevent loop, and no new connection per request).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from http.client import HTTPException

import gevent
import numpy as np
import tritonclient.http as httpclient
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

from loadtests.clients.base import CONTROL_TIMEOUT_S, RequestFailure, TritonClient, connection_failure
from loadtests.clients.control import LIVE_PATH, TritonControl, infer_path
from loadtests.errors import ServerError
from loadtests.model_spec import ModelSpec

INFER_HEADER = "Inference-Header-Content-Length"
CONNECTION_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HttpWire:
    path: str
    body: bytes
    headers: dict[str, str]


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ServerError(f"'{address}' is not a host:port address (e.g. 127.0.0.1:8000)")
    return host, int(port)


class HttpClient(TritonClient):
    """Triton HTTP client for one user. `binary=False` sends and receives JSON tensors."""

    protocol = "http"

    def __init__(self, address: str, timeout_s: float, request_event, binary: bool = True) -> None:
        super().__init__(address, timeout_s, request_event)
        self._host, self._port = _split_address(address)
        self.binary = binary
        self._http = self._connect()
        # Pre-flight over the same address, through the suite's one control-plane reader.
        self.control = TritonControl(address, timeout_s=CONTROL_TIMEOUT_S)

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
        return HttpWire(infer_path(model.name), body, headers)

    def _connect(self) -> HTTPClient:
        return HTTPClient(
            self._host,
            self._port,
            concurrency=1,
            connection_timeout=min(CONNECTION_TIMEOUT_S, self.timeout_s),
            network_timeout=self.timeout_s,
        )

    def warm(self) -> bool:
        try:
            self._http.get(LIVE_PATH).read()
        except (TimeoutError, gevent.Timeout, OSError, HTTPException):
            self._http.close()
            self._http = self._connect()
            return False
        return True

    def wire_bytes(self, wire: HttpWire) -> int:
        return len(wire.body)

    def _send(self, wire: HttpWire):
        try:
            response = self._http.post(wire.path, body=wire.body, headers=wire.headers)
            body = response.read()
        except (TimeoutError, gevent.Timeout, OSError, HTTPException) as error:
            # geventhttpclient returns a keep-alive socket to its pool after a timeout
            # mid-response; the next request would then read this request's late
            # response as its own. A failed connection is never reused.
            self._http.close()
            self._http = self._connect()
            raise _transport_failure(error) from None
        if response.status_code != 200:
            raise RequestFailure(f"HTTP {response.status_code}", _error_text(body))
        return response, body

    def _response_length(self, response) -> int:
        return len(response[1])

    def _decode(self, response) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        raw, body = response
        header_length = raw.get(INFER_HEADER)
        try:
            result = httpclient.InferResult.from_response_body(
                body, header_length=int(header_length) if header_length else None
            )
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
    if isinstance(error, HTTPConnectionClosed):
        return RequestFailure("connection reset", str(error))
    if isinstance(error, OSError):
        return connection_failure(error)
    return RequestFailure("bad response", str(error))  # a malformed or truncated response


def _error_text(body: bytes) -> str:
    try:
        return str(json.loads(body).get("error", body[:200]))
    except (ValueError, AttributeError):
        return body[:200].decode(errors="replace")
