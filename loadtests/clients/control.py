"""The one reader of Triton's control plane over HTTP/REST, and the one place its routes are spelled.

    control = TritonControl("127.0.0.1:8000", "127.0.0.1:8002", timeout_s=5.0)
    control.server_ready()                                # True
    control.model_config("identity")["max_batch_size"]    # 64
    control.statistics(["identity"])["identity"]["1"]["inference_count"]
    control.load("identity", config={**config, "max_batch_size": 8})   # explicit model control only
    control.unload("identity")

Routes (KServe v2 and Triton's extensions: docs/protocol/extension_statistics.md and
extension_model_repository.md in triton-inference-server/server):

    GET  /v2/health/live, /v2/health/ready, /v2/models/<m>/ready    200 or not
    GET  /v2                                server metadata
    GET  /v2/models/<m>, /v2/models/<m>/config
    GET  /v2/models/stats, /v2/models/<m>/stats                     {"model_stats": [...]}
    POST /v2/repository/index               {"ready": bool} -> [{"name", "version", "state", "reason"}]
    POST /v2/repository/models/<m>/load     {"parameters": {"config": "<ModelConfig as a JSON string>"}}
    POST /v2/repository/models/<m>/unload   {"parameters": {"unload_dependents": bool}}
    GET  http://<metrics address>/metrics   Prometheus text (its own port, 8002 by default)

Transport: the standard library's http.client, one short connection per call, deliberately.
Under Locust the standard library is monkey-patched, so a call waiting on Triton yields to
the users' greenlets; in plain commands (serve, bench, tests) it simply blocks. It needs no
gevent hub (geventhttpclient does), no tritonclient (which wraps every failure in its own
exception and retries nothing we want), and unlike urllib it never routes loopback traffic
through an HTTP(S)_PROXY from the environment.

Timeouts: `timeout_s` bounds the connection and then each wait for Triton to say something;
the remaining budget is re-applied before each stage, so a server that accepts and then
never answers (a frozen Triton) fails after about `timeout_s`, not a multiple of it.

Failures: every one is a ServerError with one line naming the request, e.g.
    GET http://127.0.0.1:8000/v2/models/x/config: HTTP 404 Request for unknown model: 'x' is not found
    GET http://127.0.0.1:8000/v2: ConnectionRefusedError: [Errno 111] Connection refused
Health checks (`server_live`, `server_ready`, `model_ready`) answer False when Triton says
no (any status but 200) and raise the ServerError only when there is no Triton to ask.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from loadtests.config.security import ConnectionSecurity
from loadtests.errors import ServerError

DEFAULT_TIMEOUT_S = 5.0
# Triton answers a load once the model is initialised (and warmed up): minutes for a big one.
LOAD_TIMEOUT_S = 300.0
LIVE_PATH = "/v2/health/live"
READY_PATH = "/v2/health/ready"
# The first bytes of an HTTP/2 server's SETTINGS frame (length, then type 4) where http.client
# expected a status line: what Triton's gRPC port answers an HTTP/1.1 request with.
HTTP2_FRAME_START = "\x00\x00"
# Triton's 4xx bodies are short JSON errors; a longer one (an HTML proxy page) is cut here.
ERROR_BODY_CHARS = 200


def model_path(model: str) -> str:
    """/v2/models/<model>, the name escaped (a name may hold characters a URL path cannot)."""
    return f"/v2/models/{quote(model, safe='')}"


def infer_path(model: str) -> str:
    """The data plane's route, kept here so that Triton's routes are spelled in one module."""
    return f"{model_path(model)}/infer"


def generate_stream_path(model: str) -> str:
    """A decoupled model's data-plane route over HTTP (generate extension, clients/http_stream.py)."""
    return f"{model_path(model)}/generate_stream"


def _trace_path(model: str | None) -> str:
    return f"{model_path(model)}/trace/setting" if model else "/v2/trace/setting"


def base_url(address: str) -> str:
    """host:port as the options give it, or a URL already: 'localhost:8000' -> 'http://localhost:8000'."""
    address = address.rstrip("/")
    return address if address.startswith(("http://", "https://")) else f"http://{address}"


def metrics_url(metrics_address: str) -> str:
    """Triton's Prometheus page: 'localhost:8002' -> 'http://localhost:8002/metrics'."""
    return f"{base_url(metrics_address)}/metrics"


@dataclass(frozen=True)
class TritonControl:
    """Triton's control plane at `http_address` (and its metrics page at `metrics_address`).

    Immutable and cheap: make another for a different timeout, e.g. a short one for the last
    scrape of a run (`TritonControl(address, timeout_s=1.0)`).
    """

    http_address: str
    metrics_address: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    # TLS files and --header values (https:// addresses speak TLS with them; headers go on every request).
    security: ConnectionSecurity | None = None

    # -- health ------------------------------------------------------------------------------
    def server_live(self) -> bool:
        return self._ok(LIVE_PATH)

    def server_ready(self) -> bool:
        return self._ok(READY_PATH)

    def model_ready(self, model: str) -> bool:
        return self._ok(f"{model_path(model)}/ready")

    # -- metadata and config -------------------------------------------------------------------
    def server_metadata(self) -> dict[str, Any]:
        """{"name": "triton", "version": "2.51.0", "extensions": [...]}"""
        return self._json("GET", "/v2")

    def model_metadata(self, model: str) -> dict[str, Any]:
        """{"name", "versions", "platform", "inputs": [{"name", "datatype", "shape"}], "outputs"}"""
        return self._json("GET", model_path(model))

    def model_config(self, model: str) -> dict[str, Any]:
        """The model's configuration as Triton loaded it (the ModelConfig message as JSON)."""
        return self._json("GET", f"{model_path(model)}/config")

    # -- statistics and metrics ------------------------------------------------------------------
    def statistics(self, models: list[str] | None = None) -> dict[str, dict[str, dict]]:
        """Raw statistics per model and loaded version: {model: {"1": model_stats entry}}.

        One request per model named (all of them, or an error); None: every loaded model in one.
        """
        if models is None:
            return _by_model_and_version(self._json("GET", "/v2/models/stats"), "/v2/models/stats")
        out: dict[str, dict[str, dict]] = {}
        for model in models:
            path = f"{model_path(model)}/stats"
            out[model] = _by_model_and_version(self._json("GET", path), path).get(model, {})
        return out

    def metrics_text(self) -> str:
        """Triton's Prometheus text exposition (parsed by loadtests.triton_stats.metrics)."""
        if not self.metrics_address:
            raise ServerError("no Triton metrics address given (e.g. --triton-metrics 127.0.0.1:8002)")
        url = metrics_url(self.metrics_address)
        body = _request("GET", url, None, self.timeout_s, self.security)
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ServerError(f"GET {url}: not UTF-8 text ({error})") from None

    # -- the model repository (Triton's model repository extension) -------------------------------
    def repository_index(self, ready: bool = False) -> list[dict[str, Any]]:
        """Every model in the repositories: [{"name", "version", "state": "READY"|"UNAVAILABLE"|..., "reason"}].

        `ready=True` lists only the models ready for inference. A model never loaded has no
        "version" or "state" in Triton's answer.
        """
        return self._json("POST", "/v2/repository/index", {"ready": ready})

    def load(self, model: str, config: dict[str, Any] | None = None, timeout_s: float = LOAD_TIMEOUT_S) -> None:
        """Load (or reload) a model; returns once Triton has it ready, raises ServerError if it failed.

        `config` replaces the repository's config.pbtxt for this load: a whole ModelConfig as a
        dict (start from `model_config(model)` and change what you try). Triton accepts loads
        only when started with --model-control-mode=explicit; it refuses them otherwise.

        The config `model_config` returns is auto-completed (Triton 2.51 fills the dynamic
        batcher's preferred_batch_size with max_batch_size): change or drop such derived
        fields with the field they came from. A config Triton refuses is answered with HTTP 500
        "failed to poll from model repository"; the reason is only in Triton's log.

        Back to the repository's config.pbtxt: `unload(model)` then `load(model)`. A plain
        `load(model)` right after an override keeps the override (Triton 2.51: the model's
        files did not change, so it does not reread them).

        `timeout_s` is the load's own (not the instance's): Triton answers only once the model
        is initialised.
        """
        body = {"parameters": {"config": json.dumps(config)}} if config is not None else {}
        path = f"/v2/repository/models/{quote(model, safe='')}/load"
        _request("POST", f"{base_url(self.http_address)}{path}", body, timeout_s, self.security)

    def unload(self, model: str, unload_dependents: bool = False) -> None:
        """Unload a model (and, with `unload_dependents`, the models an ensemble loaded with it).

        Triton answers at once and unloads in the background: until it is done the index says
        "UNLOADING" and in-flight requests finish. A `load` meanwhile waits for it."""
        body = {"parameters": {"unload_dependents": unload_dependents}}
        self._json("POST", f"/v2/repository/models/{quote(model, safe='')}/unload", body)

    # -- transport ---------------------------------------------------------------------------
    def trace_setting(self, model: str | None = None) -> dict[str, Any]:
        """Triton's trace settings (`/v2/trace/setting`), a model's when `model` is given:
        {"trace_level": ["OFF"], "trace_rate": "1000", "trace_count": "-1", "log_frequency": "0",
        "trace_file": "/tmp/trace.json", "trace_mode": "triton"} (numbers as strings)."""
        return self._json("GET", _trace_path(model))

    def update_trace_setting(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        """POST the changed trace settings; a None value clears a model's own (it then follows
        the global one). Returns the settings as they now are."""
        return self._json("POST", _trace_path(model), changes)

    def _ok(self, path: str) -> bool:
        try:
            status, _ = _exchange("GET", f"{base_url(self.http_address)}{path}", None, self.timeout_s, self.security)
        except (OSError, http.client.HTTPException) as error:
            raise _transport_error("GET", f"{base_url(self.http_address)}{path}", error, self.timeout_s) from None
        return status == http.client.OK

    def _json(self, method: str, path: str, body: dict | None = None) -> Any:
        url = f"{base_url(self.http_address)}{path}"
        answer = _request(method, url, body, self.timeout_s, self.security)
        if not answer.strip():
            return {}  # load and unload answer 200 with an empty body
        try:
            return json.loads(answer)
        except ValueError as error:
            raise ServerError(f"{method} {url}: not JSON ({error})") from None


def _by_model_and_version(document: Any, path: str) -> dict[str, dict[str, dict]]:
    try:
        out: dict[str, dict[str, dict]] = {}
        for entry in document["model_stats"]:
            out.setdefault(entry["name"], {})[str(entry["version"])] = entry
        return out
    except (KeyError, TypeError) as error:
        raise ServerError(f"GET {path}: not a statistics response ({type(error).__name__}: {error})") from None


def _request(
    method: str, url: str, body: dict | None, timeout_s: float, security: ConnectionSecurity | None = None
) -> bytes:
    """The response body of a 200; anything else is one ServerError line naming the request."""
    try:
        status, answer = _exchange(method, url, body, timeout_s, security)
    except (OSError, http.client.HTTPException) as error:
        raise _transport_error(method, url, error, timeout_s) from None
    if status != http.client.OK:
        raise ServerError(f"{method} {url}: HTTP {status} {_error_text(answer)}".rstrip())
    return answer


def _error_text(answer: bytes) -> str:
    """Triton's {"error": "..."} message, or the start of whatever else came back, on one line."""
    text = answer.decode("utf-8", "replace")
    with contextlib.suppress(ValueError, AttributeError):  # not JSON, or not an object
        text = str(json.loads(text).get("error", text))
    return " ".join(text.split())[:ERROR_BODY_CHARS]


def _transport_error(method: str, url: str, error: Exception, timeout_s: float) -> ServerError:
    if isinstance(error, TimeoutError):
        return ServerError(f"{method} {url}: timed out after {timeout_s:g} s")
    if isinstance(error, ssl.SSLError):  # a wrong CA, a refused client certificate, not TLS at all
        return ServerError(f"TLS handshake failed: {method} {url}: {tls_reason(error)}")
    # Refused and reset connections are OSErrors; a malformed or cut response an HTTPException.
    if isinstance(error, OSError):
        return ServerError(f"cannot reach Triton: {method} {url}: {type(error).__name__}: {error}")
    if isinstance(error, http.client.BadStatusLine) and str(error).startswith(HTTP2_FRAME_START):
        # An HTTP/2 server's first frame (SETTINGS) where an HTTP/1.1 status line belongs.
        return ServerError(
            f"{method} {url}: the answer is HTTP/2 (binary frames), not HTTP/1.1: this is a gRPC port, "
            "probably Triton's (8001 by default); give --triton-http Triton's HTTP port (8000 by default)"
        )
    return ServerError(f"{method} {url}: {type(error).__name__}: {printable(str(error))}")


def printable(text: str) -> str:
    """Text from the network on one readable line: control bytes escaped (\\x00), at most 200 characters."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in " ".join(text.split()))[:ERROR_BODY_CHARS]


def answers_http1(address: str, timeout_s: float = 2.0, security: ConnectionSecurity | None = None) -> bool:
    """Whether HOST:PORT answers an HTTP/1.1 request at all (any status): a port given as gRPC
    that answers is an HTTP port."""
    try:
        _exchange("GET", f"{base_url(address)}{LIVE_PATH}", None, timeout_s, security)
    except (OSError, http.client.HTTPException):
        return False
    return True


def tls_reason(error: ssl.SSLError) -> str:
    """An SSLError on one line: "CERTIFICATE_VERIFY_FAILED (certificate verify failed: self-signed ...)"."""
    detail = getattr(error, "verify_message", None) or " ".join(str(error).split())
    return f"{error.reason or type(error).__name__} ({detail})"


def _exchange(
    method: str, url: str, body: dict | None, timeout_s: float, security: ConnectionSecurity | None = None
) -> tuple[int, bytes]:
    deadline = time.monotonic() + timeout_s
    scheme, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    security = security or ConnectionSecurity()
    if scheme == "https":
        connection = http.client.HTTPSConnection(host, timeout=timeout_s, context=security.context())
    else:
        connection = http.client.HTTPConnection(host, timeout=timeout_s)
    try:
        connection.connect()
        payload = json.dumps(body).encode() if body is not None else None
        headers = dict(security.headers)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        _set_remaining(connection, deadline)
        connection.request(method, f"/{path}", body=payload, headers=headers)
        _set_remaining(connection, deadline)
        response = connection.getresponse()
        _set_remaining(connection, deadline)
        return response.status, response.read()
    finally:
        connection.close()


def _set_remaining(connection: http.client.HTTPConnection, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    if connection.sock is not None:
        connection.sock.settimeout(remaining)
