"""Level tables: one row per load level, the data behind Components of Latency and
Latency vs Throughput.

A level is a sweep level (sweep.json), a load-shape step (steps.json: timeseries windows,
HDR intervals and server intervals split at the step boundaries), the whole run (one row
from summary.json), or a row of a perf_analyzer CSV. Every source fills the same columns
(µs, like the run directory), so the charts and tables do not care where a level came from.

How a level's mean latency splits into perf_analyzer's parts (and the open-loop client
wait): loadtests/run_format/components.py, shared with the sweep's sweep.csv.
"""

from __future__ import annotations

import math

import pandas as pd

from loadtests.run_format.components import SERVER_PARTS, client_parts
from loadtests.run_format.confidence import percentile_bounds_us
from loadtests.run_format.hdr import LATENCY_KEYS, HlogFile, summarise_us

PERCENTILE_KEYS = LATENCY_KEYS
# client_network_us's one name in every table, finding and chart: the client's mean latency
# minus Triton's queue and compute (the client's and the server's send/recv, and the network).
# perf_analyzer's CSV splits client send and recv off and calls the rest (network_us)
# "Network+Server Send/Recv"; the suite's sweep.csv keeps that header (docs/reference/reports.md#glossary).
SEND_RECV_NETWORK = "send/recv + network"
# A decoupled model's streamed endpoint: Triton's compute counts the model's execute call only, so
# the rest of the client's mean holds the model's later responses as well as send/recv and the
# network (streaming_us, which replaces client_network_us there).
STREAMING_REST = "later responses + send/recv + network"
STREAM_LEVEL_COLUMNS = ("ttfr_p50_us", "ttfr_p99_us", "gap_p50_us", "gap_p99_us")
LEVEL_COLUMNS = [
    "level",
    "label",
    "requests",
    "failures",
    "rps",
    "infer_per_s",
    *(f"{key}_us" for key in PERCENTILE_KEYS),
    "client_send_us",
    "network_us",
    "client_recv_us",
    "client_network_us",
    "streaming_us",
    "client_wait_us",
    "p99_uncorrected_us",
    # The p99's 95 % interval (order statistics of the level's histogram), for comparisons.
    "p99_ci_lo_us",
    "p99_ci_hi_us",
    *SERVER_PARTS,
    # Only some sources have these: a legacy perf_client CSV's unsplit compute, the response
    # cache's time, a decoupled model's responses/s, perf_analyzer's --collect-metrics GPU columns.
    "compute_total_us",
    "cache_us",
    "responses_per_s",
    # A streamed model's sweep or capacity levels: time to first response and gaps (sweep.json's `stream`).
    *STREAM_LEVEL_COLUMNS,
    "gpu_utilization_pct",
    "gpu_power_w",
    "gpu_memory_used_bytes",
    "gpu_memory_total_bytes",
    "avg_batch",
    "stable",
    "satisfies_constraints",
    # Load-shape steps: the users of each class ("BertQAHttpUser 4, ResNetHttpUser 4"); the
    # step's target is their total.
    "users_by_class",
]


def add_client_network(frame: pd.DataFrame) -> pd.DataFrame:
    """client_network_us = client send + network + client recv, over the parts measured
    (NaN only if none was)."""
    parts = frame[["client_send_us", "network_us", "client_recv_us"]].astype(float)
    frame["client_network_us"] = parts.sum(axis=1, min_count=1)
    return frame


def mark_streamed(frame: pd.DataFrame) -> pd.DataFrame:
    """A streamed endpoint's levels: the time outside Triton's queue and compute is
    streaming_us (STREAMING_REST), not send/recv + network, which it cannot be split from."""
    frame["streaming_us"] = frame["client_network_us"]
    frame[["network_us", "client_network_us"]] = math.nan
    return frame


def merge_server(weighted: list[tuple[dict, float]]) -> dict | None:
    """Combine server deltas (summary.json "server" entries) given weights in [0, 1]:
    counts add up, per-request times are averaged over requests. None if nothing ran."""
    requests = sum(entry.get("requests", 0) * weight for entry, weight in weighted)
    if requests <= 0:
        return None
    out = {
        "requests": requests,
        "executions": sum(entry.get("executions", 0) * weight for entry, weight in weighted),
        "inferences": sum(entry.get("inferences", 0) * weight for entry, weight in weighted),
    }
    for key in SERVER_PARTS:
        out[key] = sum(entry.get(key, 0.0) * entry.get("requests", 0) * weight for entry, weight in weighted) / requests
    out["avg_batch"] = out["inferences"] / out["executions"] if out["executions"] else math.nan
    return out


def make_row(
    label: str,
    level: float,
    counts: dict,
    latency: dict | None,
    server: dict | None,
    stable: bool | None = None,
    uncorrected: dict | None = None,
) -> dict:
    """One level: counts (requests, failures, rps, infer_per_s), latency_us keys, a server delta,
    and for open-loop levels the uncorrected latencies (see the module docstring)."""
    row = {"level": level, "label": label, "stable": stable, **counts}
    for key in PERCENTILE_KEYS:
        row[f"{key}_us"] = latency.get(key, math.nan) if latency else math.nan
    if uncorrected:
        row["p99_uncorrected_us"] = float(uncorrected.get("p99", math.nan))
    if server:
        row.update({key: float(server.get(key, math.nan)) for key in SERVER_PARTS})
        row["avg_batch"] = float(server.get("avg_batch", math.nan))
    if latency:
        network, wait = client_parts(latency, server, uncorrected)
        row["network_us"] = math.nan if network is None else network
        row["client_wait_us"] = math.nan if wait is None else wait
    return row


def p99_interval(bounds: list | None) -> dict:
    """p99_ci_lo_us / p99_ci_hi_us from [lower, upper] µs; NaN for a bound too few requests give."""
    lower, upper = bounds or (None, None)
    return {
        "p99_ci_lo_us": math.nan if lower is None else float(lower),
        "p99_ci_hi_us": math.nan if upper is None else float(upper),
    }


def frame(rows: list[dict]) -> pd.DataFrame:
    return add_client_network(pd.DataFrame.from_records(rows).reindex(columns=LEVEL_COLUMNS))


def from_summary(endpoints: list, server: dict) -> dict[str, pd.DataFrame]:
    """The whole run as one level per endpoint (summary.json)."""
    out = {}
    for endpoint in endpoints:
        counts = {
            "requests": endpoint.requests,
            "failures": endpoint.failures,
            "rps": endpoint.throughput_rps,
            "infer_per_s": endpoint.throughput_infer_per_s,
        }
        row = make_row(
            "whole run",
            math.nan,
            counts,
            endpoint.latency_us,
            server.get(endpoint.model),
            uncorrected=getattr(endpoint, "latency_uncorrected_us", None),
        )
        out[endpoint.name] = frame([row])
    return out


def from_sweep(sweep: dict, series: str, model: str | None) -> dict[str, pd.DataFrame]:
    """sweep.json's levels as one series (a sweep drives one load; `model` picks its server
    entry, else every model's entries are merged)."""
    rows = []
    for level in sweep.get("levels", []):
        servers = level.get("server") or {}
        server = servers.get(model) if model in servers else merge_server([(s, 1.0) for s in servers.values()])
        counts = {
            "requests": level.get("requests", math.nan),
            "failures": level.get("failures", math.nan),
            "rps": level.get("throughput_rps", math.nan),
            "infer_per_s": level.get("throughput_infer_per_s", math.nan),
        }
        value = float(level["level"])
        row = make_row(f"{value:g}", value, counts, level.get("latency_us"), server, level.get("stable"))
        rows.append(row | p99_interval((level.get("latency_ci_us") or {}).get("p99")) | stream_cells(level))
    return {series: frame(rows)}


def stream_cells(level: dict) -> dict:
    """A streamed level's responses/s and time to first response and gap p50/p99 ({} otherwise)."""
    stream = level.get("stream")
    if not stream:
        return {}
    cells = {f"{prefix}_{p}_us": float(stream[key][p]) for prefix, key in STREAM_KEYS for p in ("p50", "p99")}
    return cells | {"responses_per_s": float(stream.get("responses_per_s", math.nan))}


STREAM_KEYS = (("ttfr", "first_response_us"), ("gap", "gap_us"))


def users_by_class_text(cell: str) -> str:
    """timeseries.csv's "A=2;B=4" -> "A 2, B 4" ("" when not recorded)."""
    pairs = [part.partition("=") for part in str(cell).split(";") if part]
    return ", ".join(f"{name} {count}" for name, _, count in pairs)


def step_users_by_class(windows: pd.DataFrame) -> str:
    """The users per class a step held: the split most of its windows noted (the first window
    may still show the step before, while users start)."""
    if "users_by_class" not in windows or not len(windows):
        return ""
    noted = windows["users_by_class"].fillna("").astype(str)
    noted = noted[noted != ""]
    if not len(noted):
        return ""
    counts = noted.value_counts()
    return users_by_class_text([cell for cell in noted if counts[cell] == counts.max()][-1])  # ties: the latest


def step_label(step: dict, kind: str) -> str:
    target = float(step["target"])
    unit = "req/s" if kind == "rate" else ("user" if target == 1 else "users")
    return f"step {int(step['index']) + 1}: {target:g} {unit}"


def from_steps(
    steps: list[dict],
    kind: str,
    endpoints: list,
    timeseries: pd.DataFrame,
    window_s: float,
    logs: dict[str, HlogFile],
    run_start_epoch: float,
    server_intervals: list[dict],
    uncorrected_logs: dict[str, HlogFile] | None = None,
) -> dict[str, pd.DataFrame]:
    """Per endpoint, one level per step: counts from the time series windows whose middle
    falls in the step, exact percentiles from the HDR intervals merged the same way (open
    loop: the uncorrected ones too), and Triton's breakdown from the server intervals
    weighted by their overlap with the step."""
    segments = [(float(step["start_s"]), float(step["end_s"])) for step in steps]
    if segments:
        # The run's first and last windows stick out of the first and last steps; their
        # middles may too. They belong to those steps, not to none.
        segments[0] = (-math.inf, segments[0][1])
        segments[-1] = (segments[-1][0], math.inf)
    middles = timeseries["time_s"] + window_s / 2 if len(timeseries) else pd.Series(dtype=float)
    out = {}
    for endpoint in endpoints:
        merged = _merged(logs.get(endpoint.name), segments, run_start_epoch)
        unmerged = _merged((uncorrected_logs or {}).get(endpoint.name), segments, run_start_epoch)
        rows = []
        for step, (start, end), histogram, uncorrected in zip(steps, segments, merged, unmerged, strict=True):
            in_step = (timeseries["endpoint"] == endpoint.name) & (middles >= start) & (middles < end)
            windows = timeseries[in_step]
            # Per second of run the windows covered (timeseries.csv's covered_s; older runs: whole windows).
            seconds = windows["covered_s"].sum() if "covered_s" in windows else len(windows) * window_s
            counts = {
                "requests": int(windows["requests"].sum()),
                "failures": int(windows["failures"].sum()),
                "rps": windows["requests"].sum() / seconds if seconds else math.nan,
                "infer_per_s": windows["inferences"].sum() / seconds if seconds else math.nan,
            }
            server = merge_server(
                [
                    (interval["models"][endpoint.model], _overlap(interval, start, end))
                    for interval in server_intervals
                    if endpoint.model in interval["models"] and _overlap(interval, start, end) > 0
                ]
            )
            latency = summarise_us(histogram) if histogram is not None else None
            sent = summarise_us(uncorrected) if uncorrected is not None else None
            label, target = step_label(step, kind), float(step["target"])
            row = make_row(label, target, counts, latency, server, uncorrected=sent)
            if histogram is not None:
                row |= p99_interval(percentile_bounds_us(histogram, percentiles=(99.0,)).get("p99"))
            row["users_by_class"] = step_users_by_class(windows) if kind != "rate" else ""
            rows.append(row)
        out[endpoint.name] = frame(rows)
    return out


def _merged(log: HlogFile | None, segments: list[tuple[float, float]], run_start_epoch: float) -> list:
    return log.merge(segments, run_start_epoch) if log is not None else [None] * len(segments)


def _overlap(interval: dict, start: float, end: float) -> float:
    """The share of a server interval that lies inside [start, end)."""
    length = interval["end_s"] - interval["start_s"]
    if length <= 0:
        return 0.0
    return max(0.0, min(end, interval["end_s"]) - max(start, interval["start_s"])) / length
