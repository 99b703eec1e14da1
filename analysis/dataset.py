"""Everything a report draws from one source: a run directory or a perf_analyzer CSV.

    data = load("runs/20261122T014233Z-demo")    # or load("results.csv")
    data.levels["bert_qa [http]"]                 # level table (analysis.levels)
    data.timeseries                               # timeseries.csv as a DataFrame (None for a CSV)

Times are put on one clock, timeseries.csv's `time_s` (seconds from the run start):
server_intervals.jsonl (server_stats.json in older runs) and server_metrics.csv stamp Unix
times, the HDR logs count from their BaseTime.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from analysis import levels, model_analyzer, perf_analyzer
from analysis.run import RunDirectoryError, SavedRun, load_run
from loadtests.run_format.files import (
    CAPACITY_JSON,
    HDR_DIR,
    SERVER_INTERVALS_JSONL,
    SERVER_METRICS_CSV,
    SERVER_STATS_JSON,
    STEPS_JSON,
    SWEEP_JSON,
    TIMESERIES_CSV,
    TRACES_CSV,
)
from loadtests.run_format.hdr import UNCORRECTED, HlogError, read_logs

# Open-loop columns appended to timeseries.csv by newer runs; older runs lack them.
# The stream columns (a decoupled model's first response and gaps) are in runs since issue 29's item 1.
OPTIONAL_TIMESERIES = (
    "late",
    "dropped",
    "target_rate",
    "p99_uncorrected_us",
    "ttfr_p50_us",
    "ttfr_p99_us",
    "gap_p50_us",
    "gap_p99_us",
)
# A time above this is a Unix time, not seconds from the run start (2001-09-09).
EPOCH_THRESHOLD_S = 1e9
GPU_METRICS = ("nv_gpu_utilization", "nv_gpu_memory_used_bytes", "nv_gpu_power_usage")
CPU_METRICS = ("nv_cpu_utilization",)


# A window covering less than this share of its length (timeseries.csv's covered_s) is partial:
# the run's first and last, where the users were starting and stopping.
PARTIAL_WINDOW = 0.5


def whole_windows(rows: pd.DataFrame, window_s: float) -> pd.DataFrame:
    """The windows that cover at least half a window (`covered_s`): a run's partial first and
    last windows hold a few requests (a 0.4-s last window of 200 requests put the run's p99 at
    39 ms beside 20 ms everywhere else) and say nothing about a percentile over time."""
    if "covered_s" not in rows or rows["covered_s"].isna().all():
        return rows
    return rows[rows["covered_s"].fillna(window_s) >= PARTIAL_WINDOW * window_s]


class SourceError(Exception):
    """Input a report cannot be built from (one line, for the command line)."""


@dataclass
class Dataset:
    """One report source. `kind` is "run", "perf_analyzer" or "model_analyzer"; `level_kind`
    says what a level is: "concurrency", "request_rate" (sweeps, CSVs), "step", "run", or
    "none" (a file with no levels, e.g. Model Analyzer's GPU table alone). `notes` are
    sentences the report must show (what a file holds that it cannot show as meant);
    `tables` are (title, headers, rows) a CSV brought that fit no level table."""

    path: Path
    kind: str
    level_kind: str
    levels: dict[str, pd.DataFrame]
    run: SavedRun | None = None
    timeseries: pd.DataFrame | None = None
    steps: list[dict] = field(default_factory=list)
    steps_kind: str = "users"
    sweep: dict | None = None
    # A capacity search's capacity.json (python -m loadtests capacity), else None.
    capacity: dict | None = None
    server_intervals: list[dict] = field(default_factory=list)
    resources: pd.DataFrame | None = None
    start_epoch: float = 0.0
    window_s: float = 1.0
    notes: list[str] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    # --trace-sample: traces.csv, one row per request whose Triton trace was joined (else None).
    traces: pd.DataFrame | None = None

    @property
    def source_format(self) -> str:
        return {"perf_analyzer": "perf_analyzer -f CSV", "model_analyzer": "Model Analyzer result CSV"}.get(
            self.kind, "run directory"
        )

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def traffic_mode(self) -> str:
        if self.run is not None:
            return self.run.traffic_mode
        return "closed" if self.level_kind == "concurrency" else "constant"

    @property
    def open_loop(self) -> bool:
        return self.traffic_mode != "closed"

    @property
    def sweep_mode(self) -> str | None:
        if self.kind != "run":
            return self.level_kind
        return self.sweep.get("mode", "concurrency") if self.sweep else None

    @property
    def endpoints(self) -> list:
        return list(self.run.endpoints.values()) if self.run is not None else []


def load(path: str | Path) -> Dataset:
    """A run directory, a perf_analyzer -f CSV file (sweep.csv included), or one of Model
    Analyzer's result CSVs."""
    path = Path(path)
    if path.is_file():
        try:
            return _load_csv(path)
        except perf_analyzer.PerfAnalyzerCsvError as error:
            raise SourceError(str(error)) from None
    if not path.exists():
        raise SourceError(f"{path} does not exist")
    try:
        return _load_run_dir(path)
    except (RunDirectoryError, HlogError, perf_analyzer.PerfAnalyzerCsvError) as error:
        raise SourceError(str(error)) from None
    except (KeyError, TypeError, ValueError) as error:
        raise SourceError(f"{path}: malformed run file ({type(error).__name__}: {error})") from None


def _load_csv(path: Path) -> Dataset:
    header, _ = perf_analyzer.read_rows(path, "a perf_analyzer -f CSV or a Model Analyzer result CSV")
    if model_analyzer.is_model_analyzer(header):
        ma = model_analyzer.read_file(path)
        return Dataset(
            path=path,
            kind="model_analyzer",
            level_kind=ma.mode or "none",
            levels=ma.levels,
            notes=ma.notes,
            tables=ma.tables,
        )
    pa = perf_analyzer.read_file(path)
    levels = {"perf_analyzer": pa.levels}
    return Dataset(path=path, kind="perf_analyzer", level_kind=pa.mode, levels=levels, notes=pa.notes)


def _read_json(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{path} is not valid JSON: {error}") from None


def _load_run_dir(path: Path) -> Dataset:
    run = load_run(path)
    start_epoch = datetime.fromisoformat(run.config["started_at"]).timestamp()
    window_s = float(run.config.get("window_s", 1.0))
    timeseries = _read_timeseries(path / TIMESERIES_CSV)
    steps_doc = _read_json(path / STEPS_JSON) or {}
    steps = [step for step in steps_doc.get("steps", []) if float(step["end_s"]) > float(step["start_s"])]
    steps_kind = steps_doc.get("kind") or "users"
    sweep = _read_json(path / SWEEP_JSON)
    intervals = _server_intervals(path, start_epoch)
    endpoints = list(run.endpoints.values())

    if sweep and sweep.get("levels"):
        # A sweep drives one load: one series, named after the endpoint if there is one.
        series = endpoints[0].name if len(endpoints) == 1 else "all endpoints"
        model = endpoints[0].model if len(endpoints) == 1 else None
        level_kind = sweep.get("mode", "concurrency")
        table = levels.from_sweep(sweep, series, model)
    elif steps and timeseries is not None:
        level_kind = "step"
        logs, uncorrected = read_logs(path / HDR_DIR), read_logs(path / HDR_DIR, UNCORRECTED)
        table = levels.from_steps(
            steps, steps_kind, endpoints, timeseries, window_s, logs, start_epoch, intervals, uncorrected
        )
    else:
        level_kind = "run"
        table = levels.from_summary(endpoints, run.server)
    for endpoint in endpoints:
        if endpoint.stream and endpoint.name in table:
            levels.mark_streamed(table[endpoint.name])
    return Dataset(
        path=path,
        kind="run",
        level_kind=level_kind,
        levels=table,
        run=run,
        timeseries=timeseries,
        steps=steps,
        steps_kind=steps_kind,
        sweep=sweep,
        capacity=_read_json(path / CAPACITY_JSON),
        server_intervals=intervals,
        resources=_read_resources(path / SERVER_METRICS_CSV, start_epoch),
        start_epoch=start_epoch,
        window_s=window_s,
        traces=pd.read_csv(path / TRACES_CSV) if (path / TRACES_CSV).exists() else None,
    )


def _read_timeseries(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    frame = pd.read_csv(path)
    for column in OPTIONAL_TIMESERIES:
        if column not in frame:
            frame[column] = float("nan")
    # Older runs have no users_by_class; an empty cell is "not recorded".
    frame["users_by_class"] = frame["users_by_class"].fillna("").astype(str) if "users_by_class" in frame else ""
    missing = {"time_s", "endpoint", "requests", "failures", "inferences"} - set(frame.columns)
    if missing:
        raise RunDirectoryError(f"{path}: missing columns {', '.join(sorted(missing))}")
    return frame


def _relative(t: float, start_epoch: float) -> float:
    return t - start_epoch if t > EPOCH_THRESHOLD_S else t


def _server_intervals(path: Path, start_epoch: float) -> list[dict]:
    """Triton's per-interval deltas, start_s/end_s on the run's clock: server_intervals.jsonl,
    or in runs written before it was streamed, server_stats.json's "deltas"."intervals"."""
    stats = _read_json(path / SERVER_STATS_JSON) or {}
    saved = (stats.get("deltas") or {}).get("intervals")
    if saved is None:
        saved = _read_json_lines(path / SERVER_INTERVALS_JSONL)
    return [
        {
            "start_s": _relative(float(interval["start_s"]), start_epoch),
            "end_s": _relative(float(interval["end_s"]), start_epoch),
            "models": interval.get("models", {}),
        }
        for interval in saved
    ]


def _read_json_lines(path: Path) -> list[dict]:
    """One JSON object per line; [] without the file. A last line without its newline was cut
    by a process killed mid-write and is left out (every line before it was flushed whole)."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    complete = lines[:-1]  # the text after the last newline: "" or a cut line
    try:
        return [json.loads(line) for line in complete if line]
    except json.JSONDecodeError as error:
        raise RunDirectoryError(f"{path} is not valid JSON lines: {error}") from None


def _read_resources(path: Path, start_epoch: float) -> pd.DataFrame | None:
    """GPU (and CPU) samples of server_metrics.csv: time_s (run clock), metric, device, value."""
    if not path.exists():
        return None
    frame = pd.read_csv(path, dtype={"labels": str})
    frame = frame[frame["metric"].isin(GPU_METRICS + CPU_METRICS)].copy()
    if frame.empty:
        return None
    frame["time_s"] = [_relative(t, start_epoch) for t in frame["time_s"]]
    frame["device"] = [_device(labels) for labels in frame["labels"].fillna("{}")]
    return frame[["time_s", "metric", "device", "value"]].reset_index(drop=True)


def _device(labels: str) -> str:
    try:
        parsed = json.loads(labels)
    except json.JSONDecodeError:
        return labels
    return str(parsed.get("gpu_uuid") or parsed.get("gpu") or "cpu")
