"""`--prometheus-port`: the load generator's own metrics, for a Grafana beside Triton's.

Served by the master (or the single process), from the same merged numbers as the run
directory: requests, failures (by name), inferences, exact latency quantiles (since test
start) and the last window's throughput per endpoint; the latest server-side breakdown
per model; users and workers.

    curl -s 127.0.0.1:9646/metrics | grep triton_loadtest_latency
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gevent.pywsgi import WSGIServer

from loadtests.run.live_snapshot import LiveSnapshot

PREFIX = "triton_loadtest"
QUANTILES = (("0.5", "p50"), ("0.9", "p90"), ("0.95", "p95"), ("0.99", "p99"), ("0.999", "p99.9"), ("1", "max"))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{key}="{_escape(str(value))}"' for key, value in labels.items()) + "}"


def _family(name: str, kind: str, help_text: str, samples: Iterable[tuple[str, float]]) -> list[str]:
    lines = [f"# HELP {PREFIX}_{name} {help_text}", f"# TYPE {PREFIX}_{name} {kind}"]
    lines += [f"{PREFIX}_{name}{labels} {value:g}" for labels, value in samples]
    return lines


def render(snapshot: LiveSnapshot) -> str:
    """Prometheus text exposition format (version 0.0.4) of a live snapshot."""
    ep = snapshot.endpoints

    def who(e) -> dict[str, str]:
        return {"endpoint": e.name, "model": e.model, "protocol": e.protocol}

    lines: list[str] = []
    lines += _family(
        "requests_total", "counter", "Requests sent, failed or not.", [(_labels(**who(e)), e.requests) for e in ep]
    )
    lines += _family(
        "failures_total",
        "counter",
        "Failed requests by failure name.",
        [(_labels(**who(e), failure=name), count) for e in ep for name, count in sorted(e.failures.items())],
    )
    lines += _family(
        "late_total",
        "counter",
        "Open-loop requests sent more than 1 ms after their intended time.",
        [(_labels(**who(e)), e.late) for e in ep],
    )
    lines += _family(
        "dropped_total",
        "counter",
        "Open-loop requests dropped at --max-in-flight (--drop-when-saturated).",
        [(_labels(**who(e)), e.dropped) for e in ep],
    )
    lines += _family(
        "inferences_total",
        "counter",
        "Inferences (batch-weighted successful requests).",
        [(_labels(**who(e)), e.inferences) for e in ep],
    )
    lines += _family(
        "latency_microseconds",
        "gauge",
        "Exact latency quantiles since the test started (HdrHistogram), in microseconds.",
        [(_labels(**who(e), quantile=q), e.latency_us[key]) for e in ep for q, key in QUANTILES],
    )
    lines += _family(
        "inferences_per_second",
        "gauge",
        "Inferences per second in the last closed window.",
        [(_labels(**who(e)), e.window_infer_per_s) for e in ep],
    )
    lines += _server_families(snapshot)
    lines += _family("users", "gauge", "Running users (all workers).", [("", snapshot.users)])
    lines += _family("workers", "gauge", "Connected workers (0 for a single process).", [("", snapshot.workers)])
    return "\n".join(lines) + "\n"


# The server-side breakdown per model: (metric name, ModelDelta attribute, help text).
SERVER_GAUGES = (
    ("server_avg_batch", "avg_batch", "Average executed batch size, latest server interval."),
    ("server_queue_microseconds", "queue_us", "Average queue time per request, latest server interval."),
    ("server_compute_infer_microseconds", "compute_infer_us", "Average compute infer time, latest server interval."),
)


def _server_families(snapshot: LiveSnapshot) -> list[str]:
    server = sorted(snapshot.server.items())
    lines: list[str] = []
    for name, attribute, help_text in SERVER_GAUGES:
        lines += _family(name, "gauge", help_text, [(_labels(model=m), getattr(d, attribute)) for m, d in server])
    return lines


def serve(host: str, port: int, snapshot: Callable[[], LiveSnapshot]) -> WSGIServer:
    """Start the exporter in the gevent loop; returns the server (stop() it to close)."""

    def app(environ, start_response):
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"see /metrics\n"]
        body = render(snapshot()).encode()
        start_response("200 OK", [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")])
        return [body]

    server = WSGIServer((host, port), app, log=None)
    server.start()
    return server
