"""The run directory: the one contract between measuring and reporting (docs/reference/run-directory.md).

    runs/20261122T013000Z-bertqagrpcuser/
        config.json          options, versions, Triton's server metadata, each model's metadata and config
        timeseries.csv       per window and endpoint: users, counts, throughput, exact percentiles (µs)
        hdr/<endpoint>.hlog  HdrHistogram interval logs (standard log format, readable by HDR tools)
        summary.json         per endpoint totals and exact percentiles; server-side breakdown per model
        server_stats.json    Triton's /stats over the run: total delta, restarts, errors
        server_*.jsonl       every /stats snapshot and interval, streamed (triton_stats/statistics.py)
        server_metrics.csv   Triton's Prometheus samples

Written by the master (or the single process) only. timeseries.csv and the HDR logs grow
as windows close, so a run that is stopped early keeps what it measured. A directory that
already holds a run is never written into: a headless run refuses it before any load
(`used_run_dir_error`), and a test started from the web UI goes to the next free
`DIR-2`, `DIR-3`, ... (`RunDirectory.create`).
"""

from __future__ import annotations

import csv
import json
import platform
import re
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO

from hdrh.histogram import HdrHistogram

from loadtests.config.settings import Settings
from loadtests.errors import SpecError
from loadtests.recording.histograms import EndpointStats, RunTotals
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE
from loadtests.run_format.files import RUN_MARKERS
from loadtests.run_format.hdr import FIRST_RESPONSE, GAP, summarise_us, zero_summary
from loadtests.run_format.summary import OVERALL, SEQUENCE_COUNTS, combine
from loadtests.version import __version__

RUNS_ROOT = Path("runs")
VERSIONED_PACKAGES = ("locust", "tritonclient", "numpy", "gevent", "grpcio", "hdrhistogram")
TIMESERIES_COLUMNS = (
    "time_s",
    "timestamp",
    "endpoint",
    "model",
    "protocol",
    "users",
    "requests",
    "failures",
    "inferences",
    "throughput_rps",
    "throughput_infer_per_s",
    "p50_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "max_us",
    "mean_us",
    # Open-loop traffic (empty or 0 in closed loop); latencies above are then corrected ones.
    "late",
    "dropped",
    "target_rate",
    "p99_uncorrected_us",
    # The seconds of the window inside the run (less than the window at its two ends): rates are per these.
    "covered_s",
    # `users` per user class, "BertQAHttpUser=4;ResNetHttpUser=4" (users is their total).
    "users_by_class",
    # A streamed endpoint's time to first response and gaps between responses (empty otherwise).
    "ttfr_p50_us",
    "ttfr_p99_us",
    "gap_p50_us",
    "gap_p99_us",
)
# Open-loop runs also log the latency from the actual send, in hdr/<endpoint>.uncorrected.hlog.
UNCORRECTED = "uncorrected"
_LATENCY_KEYS = ("p50", "p90", "p95", "p99", "max", "mean")
# What each hdr/ log variant holds, for its header line.
_VARIANT_TEXT = {
    UNCORRECTED: " from the actual send (uncorrected)",
    FIRST_RESPONSE: ", time to first response of a streamed request",
    GAP: ", gaps between a streamed request's responses",
}
# HDR log "Interval_Max" column unit: values are µs, the column shows ms.
HDR_MAX_VALUE_UNIT_RATIO = 1000.0


def users_by_class_text(by_class: dict[str, int] | None) -> str:
    """timeseries.csv's users_by_class cell: {"B": 4, "A": 2} -> "A=2;B=4" ("" if not known)."""
    return ";".join(f"{name}={count}" for name, count in sorted((by_class or {}).items()))


def default_run_dir(user_classes: list[str], now: datetime | None = None) -> Path:
    """runs/<UTC timestamp>-<user classes>, e.g. runs/20261122T013000Z-bertqagrpcuser."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    names = "-".join(sorted(name.lower() for name in user_classes)) or "run"
    short = re.sub(r"[^a-z0-9-]+", "", names)[:48]
    return RUNS_ROOT / f"{stamp}-{short}"


def holds_run(path: Path) -> bool:
    return any((path / name).exists() for name in RUN_MARKERS)


def used_run_dir_error(run_dir: Path | None) -> SpecError | None:
    """The pre-flight refusal of a --run-dir that already holds a run (None when it is free)."""
    if run_dir is None or not holds_run(run_dir):
        return None
    found = ", ".join(name for name in RUN_MARKERS if (run_dir / name).exists())
    return SpecError(
        f"--run-dir {run_dir} already holds a run (it has {found}); "
        "give a new directory, or leave --run-dir out for runs/<UTC time>-<classes>"
    )


def free_run_dir(path: Path) -> Path:
    """`path`, or the first of `path-2`, `path-3`, ... that holds no run: never a used one."""
    candidate, number = path, 1
    while holds_run(candidate):
        number += 1
        candidate = path.with_name(f"{path.name}-{number}")
    return candidate


def versions() -> dict[str, str]:
    found = {"triton-loadtest": __version__, "python": platform.python_version()}
    for package in VERSIONED_PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def endpoint_json(stats: EndpointStats, duration_s: float, open_loop: bool = False) -> dict:
    """One endpoint of summary.json; open-loop runs add uncorrected latencies and late/dropped counts."""
    summary = {
        "name": stats.name,
        "model": stats.model,
        "protocol": stats.protocol,
        "requests": stats.requests,
        "failures": stats.failure_count,
        "failures_by_class": dict(sorted(stats.failures.items())),
        "inferences": stats.inferences,
        "duration_s": round(duration_s, 3),
        "throughput_rps": round(stats.requests / duration_s, 3),
        "throughput_infer_per_s": round(stats.inferences / duration_s, 3),
        "latency_us": stats.latency_summary_us(),
        "confidence": DEFAULT_CONFIDENCE,
        "latency_ci_us": stats.latency_ci_us(DEFAULT_CONFIDENCE),
        "bytes_sent": stats.bytes_sent,
        "bytes_received": stats.bytes_received,
        "bytes_sent_per_s": round(stats.bytes_sent / duration_s, 1),
        "bytes_received_per_s": round(stats.bytes_received / duration_s, 1),
        # Payload bytes per request (body or gRPC message, both ways): what one request costs
        # the network, e.g. a 602 KB FP32 image tensor against a 60 KB JPEG file.
        "bytes_sent_per_request": round(stats.bytes_sent / stats.requests, 1) if stats.requests else 0.0,
        "bytes_received_per_request": round(stats.bytes_received / stats.requests, 1) if stats.requests else 0.0,
        "requested_batch_sizes": {str(size): stats.batch_sizes[size] for size in sorted(stats.batch_sizes)},
        # In flight when the test's stop began, ended while the users stopped: counted above too.
        "ended_during_stop": stats.during_stop.to_json(stats.histogram),
    }
    if stats.sequences:
        # Sequence users: started = completed + failed + ended_early (+ any still running when
        # a worker was lost); the requests of a sequence are in the counts above as well.
        for key in SEQUENCE_COUNTS:
            summary[f"sequences_{key}"] = stats.sequences[key]
    if stats.stream is not None:  # a streamed endpoint (decoupled model): its responses' timings
        summary["stream"] = stats.stream_json(summary["latency_us"], duration_s)
    if len(stats.replicas.requests) > 1:  # several Triton replicas: who got what
        summary["replicas"] = stats.replicas.to_json()
    if open_loop:
        summary["latency_uncorrected_us"] = stats.uncorrected_summary_us() or zero_summary()
        summary["late"] = stats.late
        summary["dropped"] = stats.dropped
    return summary


def totals_json(totals: RunTotals, duration_s: float, open_loop: bool = False) -> dict:
    """summary.json's `endpoints`, `overall` (every endpoint) and, when a model has several
    endpoints, `model_totals`: counts and throughput summed, percentiles from merged histograms."""
    endpoints = [endpoint_json(totals.endpoints[name], duration_s, open_loop) for name in sorted(totals.endpoints)]
    out = {"endpoints": endpoints, "overall": merged_json(endpoints, OVERALL, totals.overall)}
    shared = totals.shared_models()
    if shared:
        out["model_totals"] = {
            model: merged_json([entry for entry in endpoints if entry.get("model") == model], model, stats)
            for model, stats in shared.items()
        }
    return out


def merged_json(entries: list[dict], name: str, stats: EndpointStats) -> dict:
    """summary.json's `overall` or one of its `model_totals`, from its endpoints' entries and their
    merged stats: counts and throughput summed, percentiles and their intervals from the merged
    histograms, as an endpoint's."""
    entry = combine(entries, name, stats.latency_summary_us())
    entry["confidence"] = DEFAULT_CONFIDENCE
    entry["latency_ci_us"] = stats.latency_ci_us(DEFAULT_CONFIDENCE)
    if stats.stream is not None:  # its streamed endpoints' response timings, merged (ttfr_*, gap_* gates)
        entry["stream"] = stats.stream_json(entry["latency_us"], float(entry.get("duration_s", 0.0)))
    return entry


def _stream_cells(stats: EndpointStats) -> list:
    """timeseries.csv's ttfr_p50_us, ttfr_p99_us, gap_p50_us, gap_p99_us of one window: empty
    for an endpoint that does not stream, or whose window measured none."""
    if stats.stream is None:
        return [""] * 4
    stats.fold()
    cells = []
    for histogram in (stats.stream.first_response, stats.stream.gap):
        summary = summarise_us(histogram)
        cells += [summary["p50"], summary["p99"]] if summary else ["", ""]
    return cells


class RunDirectory:
    """Creates a run directory at test start and fills it as the run goes (a WindowSink)."""

    def __init__(self, path: Path, started_at: float) -> None:
        self.path = path
        self.started_at = started_at
        # Set when the test stops: the last window's throughput counts only the time up to it.
        self.stopped_at: float | None = None
        self.finished = False
        self._timeseries_file: IO[str] = open(path / "timeseries.csv", "w", newline="")  # noqa: SIM115
        self._timeseries = csv.writer(self._timeseries_file)
        self._timeseries.writerow(TIMESERIES_COLUMNS)
        self._timeseries_file.flush()
        (path / "hdr").mkdir(exist_ok=True)
        self._hdr_logs: dict[tuple[str, str], IO[str]] = {}
        # HDR log timestamps are relative to this base and must not be negative: the first
        # window can start up to one window length before the run does.
        self._hdr_base: float | None = None

    @classmethod
    def create(
        cls,
        settings: Settings,
        user_classes: list[str],
        triton: dict | None = None,
        window_s: float = 1.0,
        payloads: dict[str, dict] | None = None,
    ) -> RunDirectory:
        """A new directory for one test: config.json written, timeseries.csv and hdr/ opened;
        `payloads`: per endpoint, what its requests carry (image format and files)."""
        # Each test its own directory: a second test from the web UI (the form keeps Run Dir)
        # or a second default name within the same second goes to a numbered sibling.
        path = free_run_dir(Path(settings.run_dir) if settings.run_dir else default_run_dir(user_classes))
        path.mkdir(parents=True, exist_ok=True)
        started_at = time.time()
        config = {
            "started_at": datetime.fromtimestamp(started_at, UTC).isoformat(),
            "window_s": window_s,
            "user_classes": sorted(user_classes),
            "options": dict(settings.as_given),
            "versions": versions(),
            "triton": triton or {},
            "payloads": payloads or {},
        }
        (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        return cls(path, started_at)

    def add_models(self, triton: dict) -> None:
        """config.json's `triton.models` completed with models first known at the end of the run
        (those the classes' own tasks named): `fetch_triton_info`'s `models`."""
        path = self.path / "config.json"
        config = json.loads(path.read_text())
        known = config.setdefault("triton", {}).setdefault("models", {})
        for model, entry in triton.get("models", {}).items():
            known.setdefault(model, entry)
        path.write_text(json.dumps(config, indent=2) + "\n")

    # -- windows (called as they close) ------------------------------------------------
    def write_window(
        self,
        start_s: float,
        window_s: float,
        endpoints: dict[str, EndpointStats],
        users: int,
        target_rate: float | None = None,
        users_by_class: dict[str, int] | None = None,
    ) -> None:
        timestamp = datetime.fromtimestamp(start_s, UTC).isoformat()
        covered_s = self.covered_s(start_s, window_s)
        if self._hdr_base is None:
            self._hdr_base = min(self.started_at, start_s)
        for name in sorted(endpoints):
            stats = endpoints[name]
            # No success in the window (an outage): no latency was measured, so none is written
            # (an empty cell, not 0 µs, which a chart would draw as the fastest window of the run).
            measured = stats.histogram.get_total_count() > 0
            latency = stats.latency_summary_us() if measured else dict.fromkeys(_LATENCY_KEYS, "")
            self._timeseries.writerow(
                [
                    round(start_s - self.started_at, 3),
                    timestamp,
                    name,
                    stats.model,
                    stats.protocol,
                    users,
                    stats.requests,
                    stats.failure_count,
                    stats.inferences,
                    round(stats.requests / covered_s, 3),
                    round(stats.inferences / covered_s, 3),
                    latency["p50"],
                    latency["p90"],
                    latency["p95"],
                    latency["p99"],
                    latency["max"],
                    latency["mean"],
                    stats.late,
                    stats.dropped,
                    "" if target_rate is None else round(target_rate, 3),
                    "" if stats.uncorrected is None or not measured else stats.uncorrected_summary_us()["p99"],
                    round(covered_s, 3),
                    users_by_class_text(users_by_class),
                    *_stream_cells(stats),
                ]
            )
            if stats.histogram.get_total_count():
                self._write_hdr_interval(name, start_s, window_s, stats.histogram)
            if stats.uncorrected is not None and stats.uncorrected.get_total_count():
                self._write_hdr_interval(name, start_s, window_s, stats.uncorrected, UNCORRECTED)
            if stats.stream is not None:
                for variant, histogram in ((FIRST_RESPONSE, stats.stream.first_response), (GAP, stats.stream.gap)):
                    if histogram.get_total_count():
                        self._write_hdr_interval(name, start_s, window_s, histogram, variant)
        self._timeseries_file.flush()

    def covered_s(self, start_s: float, window_s: float) -> float:
        """The part of the window at `start_s` the run covered, the denominator of its rates
        (timeseries.csv's covered_s): the first window begins before the run and the last one
        may end after it, so rates over the whole window would dip at both ends."""
        end_s = min(start_s + window_s, self.stopped_at or time.time())
        return max(min(window_s, end_s - max(start_s, self.started_at)), 1e-3)

    def _write_hdr_interval(
        self, name: str, start_s: float, window_s: float, histogram: HdrHistogram, variant: str = ""
    ) -> None:
        """One window of hdr/<endpoint>.hlog, or (open loop) of hdr/<endpoint>.uncorrected.hlog."""
        log = self._hdr_logs.get((name, variant))
        if log is None:
            filename = f"{_slug(name)}.{variant}.hlog" if variant else f"{_slug(name)}.hlog"
            log = self._hdr_logs[(name, variant)] = open(self.path / "hdr" / filename, "w")  # noqa: SIM115
            # The standard HdrHistogram log header (format 1.2), timestamps relative to StartTime.
            base = self._hdr_base
            started = datetime.fromtimestamp(base, UTC).strftime("%Y-%m-%d %H:%M:%S")
            what = _VARIANT_TEXT.get(variant, "")
            log.write(f"#[Latency of {name} in microseconds{what}, one interval per window]\n")
            log.write("#[Histogram log format version 1.2]\n")
            log.write(f"#[StartTime: {base:.3f} (seconds since epoch), {started} UTC]\n")
            # Interval timestamps are relative to this base (readers would otherwise guess).
            log.write(f"#[BaseTime: {base:.3f} (seconds since epoch)]\n")
            log.write('"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n')
        log.write(
            f"{start_s - self._hdr_base:.3f},{window_s:.3f},"
            f"{histogram.get_max_value() / HDR_MAX_VALUE_UNIT_RATIO:.3f},{histogram.encode().decode('ascii')}\n"
        )
        log.flush()

    # -- end of run ------------------------------------------------------------------------
    def summary(
        self,
        totals: RunTotals,
        load_generator_cpu_s: float,
        server: dict | None = None,
        extra: dict | None = None,
        traffic: dict | None = None,
        throttle: dict | None = None,
        workers: int = 0,
    ) -> dict:
        """summary.json's content (written once, complete, by `write_summary`); `traffic`
        (mode, rate, ...) marks an open-loop run's endpoints."""
        # Up to the stop, not to now: the master writes this after waiting for the workers'
        # last reports and Triton's final scrapes, which would lower every rate.
        duration = max((self.stopped_at or time.time()) - self.started_at, 1e-9)
        requests = totals.overall.requests
        open_loop = traffic is not None and traffic.get("mode", "closed") != "closed"
        return {
            "traffic": traffic or {"mode": "closed"},
            **totals_json(totals, duration, open_loop),
            "server": server or {},
            "load_generator": {
                "cpu_s": round(load_generator_cpu_s, 3),
                "cpu_per_request_us": round(load_generator_cpu_s * 1e6 / requests, 1) if requests else None,
                # The CFS quota's waits (a container CPU limit): inside the measured latencies.
                "cpu_throttled_s": round(throttle["throttled_us"] / 1e6, 3) if throttle else None,
                "cpu_throttled_periods": throttle["throttled_periods"] if throttle else None,
                "cpu_periods": throttle["periods"] if throttle else None,
                "workers": workers,  # worker processes whose reports were merged (0: one process)
            },
            **(extra or {}),
        }

    def write_summary(self, summary: dict) -> Path:
        """summary.json, once per run; returns the run directory."""
        self.write_json("summary.json", summary)
        return self.path

    def write_json(self, name: str, content: dict) -> None:
        (self.path / name).write_text(json.dumps(content, indent=2) + "\n")

    def close(self) -> None:
        self._timeseries_file.close()
        for log in self._hdr_logs.values():
            log.close()
        self.finished = True
