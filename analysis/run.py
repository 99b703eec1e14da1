"""Reading a saved run directory (the contract in docs/reference/run-directory.md) into plain objects.

`SavedRun` is a run directory being read, after the fact; the run being measured belongs to
the load test. The file names and summary.json's keys are the
run-directory format's (loadtests/run_format/).

    run = load_run("runs/20261122T014233Z-demo")
    run.endpoints["bert_qa [grpc]"].latency_us["p99"]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from loadtests.run_format.ensembles import ensemble_of
from loadtests.run_format.files import CONFIG_JSON, SUMMARY_JSON
from loadtests.run_format.summary import SEQUENCE_COUNTS


class RunDirectoryError(Exception):
    """A run directory that is missing or lacks a file the contract requires."""


@dataclass(frozen=True)
class DuringStop:
    """An endpoint's requests that ended during the test's stop (summary.json's
    `ended_during_stop`): in flight when it began, completed or cut while the users stopped.
    They are in the endpoint's counts and latencies too. `max_us`: the slowest success, as the
    endpoint's `latency_us["max"]` reads it (None: none of them succeeded)."""

    requests: int
    failures: int
    max_us: float | None

    @classmethod
    def from_json(cls, entry: dict | None) -> DuringStop | None:
        """None for a run directory of an older version (not recorded: not known, not zero)."""
        if entry is None:
            return None
        top = entry.get("max_us")
        return cls(int(entry["requests"]), int(entry["failures"]), float(top) if top is not None else None)


@dataclass(frozen=True)
class EndpointSummary:
    """One endpoint of summary.json. Latencies in microseconds."""

    name: str
    model: str
    protocol: str
    requests: int
    failures: int
    inferences: int
    duration_s: float
    throughput_rps: float
    throughput_infer_per_s: float
    latency_us: dict[str, float]
    failures_by_class: dict[str, int] = field(default_factory=dict)
    # Open-loop runs only (None in closed loop and in older run directories): latency_us is
    # then timed from the intended send time, these from the actual send.
    latency_uncorrected_us: dict[str, float] | None = None
    late: int | None = None
    dropped: int | None = None
    # Request bodies on the wire per second (None in older run directories): what the load
    # generator's network egress must carry.
    bytes_sent_per_s: float | None = None
    # Payload bytes per request, sent and received (None in older run directories).
    bytes_sent_per_request: float | None = None
    bytes_received_per_request: float | None = None
    # [lower, upper] µs per percentile at `confidence` (None inside: too few requests for that
    # bound); None in older run directories. See loadtests/run_format/confidence.py.
    latency_ci_us: dict[str, list[float | None]] | None = None
    confidence: float | None = None
    # Requests sent per batch size, {"1": 700, "2": 300} (empty in older run directories).
    requested_batch_sizes: dict[str, int] = field(default_factory=dict)
    # Several Triton replicas: {address: {"requests", "failures", "mean_latency_us"}} ({} otherwise).
    replicas: dict[str, dict] = field(default_factory=dict)
    # Sequence users only: {"started", "completed", "failed", "ended_early"} ({} otherwise).
    sequences: dict[str, int] = field(default_factory=dict)
    # A streamed endpoint (a decoupled model, over gRPC or HTTP): summary.json's `stream` object ({} otherwise).
    stream: dict = field(default_factory=dict)
    # The requests that ended during the stop (None in older run directories).
    ended_during_stop: DuringStop | None = None

    @classmethod
    def from_json(cls, entry: dict) -> EndpointSummary:
        return cls(
            name=entry["name"],
            model=entry["model"],
            protocol=entry["protocol"],
            requests=int(entry["requests"]),
            failures=int(entry["failures"]),
            inferences=int(entry["inferences"]),
            duration_s=float(entry["duration_s"]),
            throughput_rps=float(entry["throughput_rps"]),
            throughput_infer_per_s=float(entry["throughput_infer_per_s"]),
            latency_us={key: float(value) for key, value in entry["latency_us"].items()},
            failures_by_class=dict(entry.get("failures_by_class", {})),
            latency_uncorrected_us=_floats(entry.get("latency_uncorrected_us")),
            late=_int_or_none(entry.get("late")),
            dropped=_int_or_none(entry.get("dropped")),
            bytes_sent_per_s=entry.get("bytes_sent_per_s"),
            bytes_sent_per_request=entry.get("bytes_sent_per_request"),
            bytes_received_per_request=entry.get("bytes_received_per_request"),
            latency_ci_us=entry.get("latency_ci_us"),
            confidence=entry.get("confidence"),
            requested_batch_sizes={str(k): int(v) for k, v in (entry.get("requested_batch_sizes") or {}).items()},
            replicas=dict(entry.get("replicas") or {}),
            sequences={key: int(entry[f"sequences_{key}"]) for key in SEQUENCE_COUNTS if f"sequences_{key}" in entry},
            stream=dict(entry.get("stream") or {}),
            ended_during_stop=DuringStop.from_json(entry.get("ended_during_stop")),
        )


def _floats(values: dict | None) -> dict[str, float] | None:
    return {key: float(value) for key, value in values.items()} if values else None


def _int_or_none(value) -> int | None:
    return int(value) if value is not None else None


@dataclass(frozen=True)
class SavedRun:
    """A saved run directory: its options and versions (config.json) and its endpoints (summary.json)."""

    path: Path
    config: dict
    endpoints: dict[str, EndpointSummary]
    load_generator: dict
    # Triton's breakdown per model (summary.json "server") and the traffic pattern
    # ("traffic": mode/rate/...; absent in runs older than open-loop traffic).
    server: dict = field(default_factory=dict)
    traffic: dict = field(default_factory=dict)
    # What went wrong around the measurement (summary.json "faults"): lost workers, Triton
    # restarts, unreachable statistics; empty in runs that predate it.
    faults: dict = field(default_factory=dict)
    # A --mix run's weights and measured shares (summary.json "mix", run_format.summary.MixBlock),
    # with the merged entries the mix table reads: "overall" and "model_totals" (empty if absent).
    mix: dict = field(default_factory=dict)
    overall: dict = field(default_factory=dict)
    model_totals: dict = field(default_factory=dict)
    # Several Triton replicas: summary.json's "server_replicas", {address: {model: breakdown}}.
    server_replicas: dict = field(default_factory=dict)
    # --trace-sample: summary.json's "traces" (the join's counts, the attribution per endpoint).
    traces: dict = field(default_factory=dict)
    # --slo: one verdict per clause (summary.json "slo"; empty without --slo).
    slo: list = field(default_factory=list)

    def requested_batch_sizes(self) -> dict[str, dict[str, int]]:
        """Per model, requests sent per batch size over its endpoints: {"bert_qa": {"1": 700, "2": 300}}."""
        out: dict[str, dict[str, int]] = {}
        for endpoint in self.endpoints.values():
            sizes = out.setdefault(endpoint.model, {})
            for size, count in endpoint.requested_batch_sizes.items():
                sizes[size] = sizes.get(size, 0) + count
        return out

    @property
    def ensemble_of(self) -> dict[str, str]:
        """{composing model: its ensemble} for the models the run recorded (from config.json)."""
        return ensemble_of((self.config.get("triton") or {}).get("models") or {})

    @property
    def traffic_mode(self) -> str:
        """closed, constant or poisson; runs that predate the "traffic" key were closed-loop."""
        return str(self.traffic.get("mode") or self.config.get("options", {}).get("traffic") or "closed")


def _read_json(path: Path) -> dict:
    if not path.exists():
        raise RunDirectoryError(f"{path} is missing: is {path.parent} a run directory?")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{path} is not valid JSON: {error}") from None


def load_run(path: str | Path) -> SavedRun:
    """Load a run directory. Example: load_run("runs/20261122T014233Z-demo")."""
    path = Path(path)
    if not path.is_dir():
        raise RunDirectoryError(f"run directory {path} does not exist")
    config = _read_json(path / CONFIG_JSON)
    summary = _read_json(path / SUMMARY_JSON)
    endpoints = {entry["name"]: EndpointSummary.from_json(entry) for entry in summary.get("endpoints", [])}
    return SavedRun(
        path=path,
        config=config,
        endpoints=endpoints,
        load_generator=summary.get("load_generator", {}),
        server=summary.get("server") or {},
        traffic=summary.get("traffic") or {},
        faults=summary.get("faults") or {},
        mix=summary.get("mix") or {},
        overall=summary.get("overall") or {},
        model_totals=summary.get("model_totals") or {},
        server_replicas=summary.get("server_replicas") or {},
        traces=summary.get("traces") or {},
        slo=summary.get("slo") or [],
    )
