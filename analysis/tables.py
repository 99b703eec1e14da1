"""The report's tables as (headers, rows of strings), formatted once for Markdown and HTML.

Latencies are shown in milliseconds with three decimals (microsecond precision, the
resolution of the run files); counts as integers; rates as summary.json writes them.
"Not measured" is n/a, never 0.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pandas as pd

from analysis.dataset import Dataset
from analysis.levels import PERCENTILE_KEYS, SEND_RECV_NETWORK, STREAMING_REST
from loadtests.run_format.confidence import confidence_label, min_requests

NOT_MEASURED = "n/a"
INTERVAL_KEYS = ("p50", "p90", "p95", "p99", "p99.9")
LATENCY_HEADERS = [f"{key} (ms)" for key in PERCENTILE_KEYS]
LEVEL_NAMES = {
    "concurrency": "concurrency",
    "request_rate": "request rate (req/s)",
    "step": "step",
    "run": "level",
}


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def ms(us) -> str:
    """µs -> ms with µs precision: 9343.0 -> '9.343'."""
    return NOT_MEASURED if _missing(us) else f"{float(us) / 1000:.3f}"


def count(value) -> str:
    return NOT_MEASURED if _missing(value) else f"{round(float(value))}"


def rate(value, decimals: int = 3) -> str:
    return NOT_MEASURED if _missing(value) else f"{float(value):.{decimals}f}"


def number(value, decimals: int = 2) -> str:
    return NOT_MEASURED if _missing(value) else f"{float(value):.{decimals}f}"


def failures_by_class(by_class: dict[str, int]) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(by_class.items())) or "none"


# -- the header: what was run, against what ----------------------------------------------------
def header_pairs(data: Dataset) -> list[tuple[str, str]]:
    if data.run is None:
        mode = f" ({LEVEL_NAMES[data.level_kind]} mode)" if data.level_kind in LEVEL_NAMES else ""
        return [("source", str(data.path)), ("format", f"{data.source_format}{mode}")]
    config, options = data.run.config, data.run.config.get("options", {})
    endpoints = data.endpoints
    protocols = sorted({endpoint.protocol for endpoint in endpoints})
    targets = []
    if "http" in protocols:
        targets.append(f"HTTP {options.get('triton_http', '?')}")
    if "grpc" in protocols:
        targets.append(f"gRPC {options.get('triton_grpc', '?')}")
    duration = max((endpoint.duration_s for endpoint in endpoints), default=math.nan)
    server = (config.get("triton") or {}).get("server") or {}
    pairs = [
        ("run directory", str(data.path)),
        ("started", started_text(config.get("started_at"))),
        ("target", ", ".join(targets) or "?"),
        ("models", ", ".join(sorted({endpoint.model for endpoint in endpoints})) or "none"),
        ("protocols", ", ".join(protocols) or "none"),
        ("user classes", ", ".join(config.get("user_classes", [])) or "?"),
        ("traffic", traffic_text(data)),
        ("batch size", str(options.get("batch_size") or "default")),
        *([("shape", str(options["shape"]))] if options.get("shape") else []),
        ("request timeout", f"{float(options.get('request_timeout') or 30.0):g} s (--request-timeout)"),
        *(
            [("mix", f"{options['mix']} (a mix file's models may set their own batch size)")]
            if options.get("mix")
            else []
        ),
        ("duration", f"{duration:.1f} s" if not math.isnan(duration) else "?"),
        ("workers", workers_text(options)),
        ("Triton", f"{server.get('name', 'triton')} {server.get('version', '?')}"),
    ]
    cpu = data.run.load_generator
    if cpu.get("cpu_s") is not None:
        per_request = cpu.get("cpu_per_request_us")
        pairs.append(
            ("load generator CPU", f"{cpu['cpu_s']} s" + (f" ({per_request} µs per request)" if per_request else ""))
        )
    return pairs


def started_text(started_at) -> str:
    """config.json's ISO start time as a reader writes it ("2026-11-29 01:22:03 UTC").

    >>> started_text("2026-11-29T01:22:03.412345+00:00"), started_text(None)
    ('2026-11-29 01:22:03 UTC', '?')
    """
    if not started_at:
        return "?"
    try:
        moment = datetime.fromisoformat(str(started_at).replace("Z", "+00:00"))
    except ValueError:
        return str(started_at)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if moment.tzinfo is not None else "")


def traffic_text(data: Dataset) -> str:
    options = data.run.config.get("options", {}) if data.run else {}
    traffic = data.run.traffic if data.run else {}
    mode = data.traffic_mode
    shape = options.get("load_shape")
    shaped = bool(shape and shape != "none") or bool(data.sweep_mode)
    if mode == "closed":
        # With a shape or sweep, -u is not the user count (the steps or levels are).
        text = "closed loop" if shaped else f"closed loop, {options.get('num_users', '?')} users"
    else:
        text = f"open loop ({mode} arrivals)"
        if traffic.get("rate") is not None:
            text += f", {traffic['rate']:g} req/s"
        if traffic.get("max_in_flight") is not None:
            text += f", at most {traffic['max_in_flight']} in flight"
        if traffic.get("drop_when_saturated"):
            text += ", dropping when saturated"
    if shape and shape != "none":
        text += f"; load shape {shape} ({options.get('shape_args') or 'defaults'})"
    if data.sweep_mode:
        text += f"; {data.sweep_mode.replace('_', ' ')} sweep"
    return text


def workers_text(options: dict) -> str:
    if options.get("master"):
        return f"{options.get('expect_workers', '?')} workers"
    if options.get("processes"):
        return f"{options['processes']} processes"
    return "none (single process)"


def model_rows(data: Dataset) -> tuple[list[str], list[list[str]]]:
    headers = ["model", "backend", "max_batch_size", "dynamic batching", "instance groups"]
    if data.run is None:
        return headers, []
    models = (data.run.config.get("triton") or {}).get("models") or {}
    rows = []
    # The run's models, then the composing models of its ensembles (config.json marks them).
    composing = {name for name, entry in models.items() if entry.get("part_of")}
    for name in sorted({endpoint.model for endpoint in data.endpoints if endpoint.model} | composing):
        model_config = (models.get(name) or {}).get("config") or {}
        rows.append(
            [
                model_label(name, models),
                model_config.get("backend") or model_config.get("platform") or "?",
                str(model_config.get("max_batch_size", "?")),
                dynamic_batching_text(model_config),
                instance_groups_text(model_config),
            ]
        )
    return headers, rows


def dynamic_batching_text(model_config: dict) -> str:
    batching = model_config.get("dynamic_batching")
    if batching is None:
        return "off" if model_config else "?"
    parts = []
    if batching.get("preferred_batch_size"):
        parts.append("preferred " + "/".join(str(size) for size in batching["preferred_batch_size"]))
    parts.append(f"max queue delay {batching.get('max_queue_delay_microseconds', 0)} µs")
    return "on: " + ", ".join(parts)


def instance_groups_text(model_config: dict) -> str:
    groups = model_config.get("instance_group") or []
    return ", ".join(f"{group.get('count', 1)} x {group.get('kind', '?')}" for group in groups) or "?"


# -- per endpoint ----------------------------------------------------------------------------------
ENDPOINT_HEADERS = [
    "endpoint",
    "requests",
    "failures",
    "failures by class",
    "inferences",
    "req/s",
    "infer/s",
    "sent MB/s",
    "request bytes/req",
    "response bytes/req",
    *LATENCY_HEADERS,
]


# What fits a 1,400-px page: who, how much, how fast; the rest is one click away (Document.table).
ENDPOINT_COMPACT = {"requests", "failures", "infer/s", "p50 (ms)", "p90 (ms)", "p99 (ms)", "max (ms)", "mean (ms)"}


def payload_bytes(value: float | None) -> str:
    """Bytes per request, whole bytes (NOT_MEASURED in run directories that predate the figure)."""
    return NOT_MEASURED if value is None else f"{round(value):,}"


def endpoint_rows(data: Dataset) -> list[list[str]]:
    return [
        [
            endpoint.name,
            count(endpoint.requests),
            count(endpoint.failures),
            failures_by_class(endpoint.failures_by_class),
            count(endpoint.inferences),
            rate(endpoint.throughput_rps),
            rate(endpoint.throughput_infer_per_s),
            "" if endpoint.bytes_sent_per_s is None else f"{endpoint.bytes_sent_per_s / 1e6:,.2f}",
            payload_bytes(endpoint.bytes_sent_per_request),
            payload_bytes(endpoint.bytes_received_per_request),
            *(ms(endpoint.latency_us.get(key)) for key in PERCENTILE_KEYS),
        ]
        for endpoint in data.endpoints
    ]


def interval_headers(data: Dataset) -> list[str] | None:
    """The confidence-interval table's headers, or None when no endpoint has intervals (older runs)."""
    levels = {endpoint.confidence for endpoint in data.endpoints if endpoint.latency_ci_us is not None}
    if not levels:
        return None
    label = "/".join(confidence_label(level) for level in sorted(levels) if level is not None)
    return ["endpoint", "confidence", *(f"{key} {label} interval (ms)" for key in INTERVAL_KEYS)]


def interval_rows(data: Dataset) -> list[list[str]]:
    """Per endpoint and percentile "lower to upper" ms, or why a bound is missing."""
    rows = []
    for endpoint in data.endpoints:
        if endpoint.latency_ci_us is None or endpoint.confidence is None:
            continue
        cells = []
        for key in INTERVAL_KEYS:
            bounds = endpoint.latency_ci_us.get(key)
            if not bounds:
                cells.append(NOT_MEASURED)
            elif bounds[0] is None or bounds[1] is None:
                needed = min_requests(float(key[1:]) / 100, endpoint.confidence)
                cells.append(f"not bounded (needs {needed:,} requests)")
            else:
                cells.append(f"{ms(bounds[0])} to {ms(bounds[1])}")
        rows.append([endpoint.name, confidence_label(endpoint.confidence), *cells])
    return rows


OPEN_LOOP_HEADERS = ["endpoint", "latency", *LATENCY_HEADERS, "late", "dropped"]


def open_loop_rows(data: Dataset) -> list[list[str]]:
    """Corrected (from the intended send time) against uncorrected (from the actual send)."""
    rows = []
    for endpoint in data.endpoints:
        uncorrected = endpoint.latency_uncorrected_us or {}
        rows.append(
            [
                endpoint.name,
                "corrected",
                *(ms(endpoint.latency_us.get(key)) for key in PERCENTILE_KEYS),
                count(endpoint.late),
                count(endpoint.dropped),
            ]
        )
        rows.append([endpoint.name, "uncorrected", *(ms(uncorrected.get(key)) for key in PERCENTILE_KEYS), "", ""])
    return rows


SERVER_HEADERS = [
    "model",
    "requests",
    "executions",
    "avg batch",
    "queue (ms)",
    "compute input (ms)",
    "compute infer (ms)",
    "compute output (ms)",
    "server total (ms)",
]


def step_label(name: str, ensembles: list[str]) -> str:
    """How every table names a composing model: "identity (step of identity_ensemble)"."""
    return f"{name} (step of {', '.join(ensembles)})" if ensembles else name


def model_label(name: str, models: dict) -> str:
    """A model's name, and the ensembles it is a step of (config.json's `part_of`)."""
    return step_label(name, (models.get(name) or {}).get("part_of") or [])


def server_model_name(model: str, ensemble_of: dict[str, str]) -> str:
    """A model's row name: a composing model says which ensemble calls it, an ensemble says it is one."""
    if model in ensemble_of:
        return step_label(model, [ensemble_of[model]])
    return f"{model} (ensemble)" if model in ensemble_of.values() else model


def server_rows(server: dict, ensemble_of: dict[str, str] | None = None) -> list[list[str]]:
    """One row per model Triton reported, ensembles' composing models named as such."""
    return [
        [
            server_model_name(model, ensemble_of or {}),
            count(entry.get("requests")),
            count(entry.get("executions")),
            number(entry.get("avg_batch"), 3),
            ms(entry.get("queue_us")),
            ms(entry.get("compute_input_us")),
            ms(entry.get("compute_infer_us")),
            ms(entry.get("compute_output_us")),
            ms(entry.get("request_us")),
        ]
        for model, entry in ((model, server[model]) for model in _server_order(server, ensemble_of or {}))
    ]


def _server_order(server: dict, ensemble_of: dict[str, str]) -> list[str]:
    """Models by name, each ensemble followed by its composing models in step order."""
    order = []
    for model in sorted(m for m in server if m not in ensemble_of):
        order.append(model)
        order += [step for step, owner in ensemble_of.items() if owner == model and step in server]
    return order + sorted(m for m in server if m not in order)


# -- per level ---------------------------------------------------------------------------------------
def _yes_no(value) -> str:
    return NOT_MEASURED if _missing(value) else ("yes" if value else "no")


# A level's load, its p50/p99, and where its mean latency goes (Components of Latency's parts).
LEVEL_COMPACT = {
    "requests",
    "failures",
    "infer/s",
    "p50 (ms)",
    "p99 (ms)",
    "mean (ms)",
    "p99 uncorrected (ms)",
    "first response p99 (ms)",
    "gap p99 (ms)",
    "avg batch",
    f"{SEND_RECV_NETWORK} (ms)",
    f"{STREAMING_REST} (ms)",
    "client send (ms)",
    "Network+Server Send/Recv (ms)",
    "client recv (ms)",
    "client wait (ms)",
    "queue (ms)",
    "compute input (ms)",
    "compute infer (ms)",
    "compute output (ms)",
    "compute (not split) (ms)",
    "GPU util (%)",
}


def _send_recv_columns(frame: pd.DataFrame) -> list[tuple]:
    """The time outside Triton's queue and compute as one column, or as perf_analyzer's three
    parts when a CSV split client send and recv off (their sum is the one column)."""
    if frame["streaming_us"].notna().any():
        return [(f"{STREAMING_REST} (ms)", "streaming_us", ms)]
    split = frame[["client_send_us", "client_recv_us"]].notna().any().any()
    if not split:
        return [(f"{SEND_RECV_NETWORK} (ms)", "client_network_us", ms)]
    return [
        ("client send (ms)", "client_send_us", ms),
        ("Network+Server Send/Recv (ms)", "network_us", ms),
        ("client recv (ms)", "client_recv_us", ms),
    ]


def level_table(frame: pd.DataFrame, level_kind: str) -> tuple[list[str], list[list[str]]]:
    """One row per level; columns a source did not measure are left out entirely."""
    columns = [
        (LEVEL_NAMES[level_kind], "label", str),
        ("users by class", "users_by_class", str),
        ("requests", "requests", count),
        ("failures", "failures", count),
        ("req/s", "rps", lambda v: rate(v, 1)),
        ("infer/s", "infer_per_s", lambda v: rate(v, 1)),
        ("responses/s", "responses_per_s", lambda v: rate(v, 1)),
        *((f"{key} (ms)", f"{key}_us", ms) for key in PERCENTILE_KEYS),
        ("first response p50 (ms)", "ttfr_p50_us", ms),
        ("first response p99 (ms)", "ttfr_p99_us", ms),
        ("gap p50 (ms)", "gap_p50_us", ms),
        ("gap p99 (ms)", "gap_p99_us", ms),
        ("p99 uncorrected (ms)", "p99_uncorrected_us", ms),
        ("avg batch", "avg_batch", lambda v: number(v, 2)),
        *_send_recv_columns(frame),
        ("client wait (ms)", "client_wait_us", ms),
        ("queue (ms)", "queue_us", ms),
        ("compute input (ms)", "compute_input_us", ms),
        ("compute infer (ms)", "compute_infer_us", ms),
        ("compute output (ms)", "compute_output_us", ms),
        ("compute (not split) (ms)", "compute_total_us", ms),
        ("cache hit + miss (ms)", "cache_us", ms),
        ("GPU util (%)", "gpu_utilization_pct", lambda v: number(v, 1)),
        ("GPU power (W)", "gpu_power_w", lambda v: number(v, 1)),
        ("GPU memory (GB)", "gpu_memory_used_bytes", lambda v: number(v / 1e9, 3)),
        ("stable", "stable", _yes_no),
        ("satisfies constraints", "satisfies_constraints", lambda v: _yes_no(v).capitalize()),
    ]
    present = [
        (title, column, fmt)
        for title, column, fmt in columns
        if frame[column].notna().any() and not (frame[column].astype(str) == "").all()
    ]
    rows = [[fmt(record[column]) for _, column, fmt in present] for record in frame.to_dict("records")]
    return [title for title, _, _ in present], rows
