"""The suite's OTLP/HTTP receiver: Triton's OpenTelemetry traces, on the master (or single process).

Triton in opentelemetry mode (`--trace-config mode=opentelemetry --trace-config
opentelemetry,url=HOST:PORT/v1/traces`) posts OTLP/HTTP JSON (`resourceSpans`, checked on the
bundled tritonserver): per traced request three spans of one trace, `InferRequest` (the
protocol's receive and send events), the model's (`triton.model_name`, REQUEST_START,
QUEUE_START, ...) and `compute` (COMPUTE_*), with the same event names as the trace file's
timestamps, in Unix ns. The trace id is the one the client's `traceparent` gave (16 zeros and
the request's id, clients/trace_ids.py), so spans are grouped by it.

    receiver = OtlpReceiver("0.0.0.0", 4318); receiver.start()
    receiver.traces()   # [ServerTrace(request_id, model, timestamps), ...]
"""

from __future__ import annotations

import json
import time

from gevent.pywsgi import WSGIServer

from loadtests.clients.trace_ids import ID_WIDTH
from loadtests.tracing.triton_file import ServerTrace

TRACES_PATH = "/v1/traces"
MODEL_ATTRIBUTE = "triton.model_name"


class OtlpReceiver:
    """Collects spans by trace id; `address` is HOST:PORT as given."""

    def __init__(self, host: str, port: int) -> None:
        self.address = f"{host}:{port}"
        self._spans: dict[str, dict] = {}
        self.rejected: list[str] = []  # one line per request it could not read
        self.last_arrival = 0.0
        self._server = WSGIServer((host, port), self._app, log=None, error_log=None)

    def start(self) -> None:
        """Listen now (raises OSError when the address is taken)."""
        self._server.start()

    def stop(self) -> None:
        self._server.stop(timeout=1)

    def clear(self) -> None:
        self._spans, self.rejected = {}, []

    def _app(self, environ, start_response):
        if environ.get("PATH_INFO") != TRACES_PATH or environ.get("REQUEST_METHOD") != "POST":
            start_response("404 Not Found", [("Content-Length", "0")])
            return [b""]
        body = environ["wsgi.input"].read()
        try:
            self.add(json.loads(body))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            kind = environ.get("CONTENT_TYPE", "")
            self.rejected.append(f"an OTLP request of {len(body)} bytes ({kind}) not read: {error}")
            start_response("400 Bad Request", [("Content-Length", "0")])
            return [b""]
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")])
        return [b"{}"]

    def add(self, document: dict) -> None:
        """One OTLP/HTTP JSON export: every span's events and model into its trace."""
        self.last_arrival = time.monotonic()
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    entry = self._spans.setdefault(span["traceId"], {"model": "", "stamps": {}})
                    for event in span.get("events", []):
                        entry["stamps"][event["name"]] = int(event["timeUnixNano"])
                    for attribute in span.get("attributes", []):
                        if attribute.get("key") == MODEL_ATTRIBUTE:
                            entry["model"] = attribute["value"].get("stringValue", "")

    def traces(self) -> list[ServerTrace]:
        return [
            ServerTrace(trace_id[-ID_WIDTH:], entry["model"], dict(entry["stamps"]))
            for trace_id, entry in self._spans.items()
        ]
