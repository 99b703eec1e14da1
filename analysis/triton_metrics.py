"""The report's "Triton's metrics": what newer Tritons expose beyond the statistics, per model.

Read from server_metrics.csv (every `nv_inference_*` series the run scraped), for the models that
served requests during the run:

- pending requests (`nv_inference_pending_request_count`, a gauge; summed over replicas per
  scrape): peak and mean over the run's scrapes;
- failures by reason (`nv_inference_request_failure{reason=...}`): each counter's increase from
  the first scrape to the last, summed over replicas;
- Triton's own latency quantiles (`nv_inference_request_summary_us` and friends, a Prometheus
  summary; Triton with `--metrics-config summary_latencies=true`): p50 and p99 at the last scrape,
  over the summary's own sliding window; with replicas, the highest;
- latency histograms (`nv_inference_<what>_histogram_ms`, e.g. the first response of a decoupled
  model; Triton with `--metrics-config histogram_latencies=true`, 24.11 and later): the run's
  increase of each bucket, and p50/p99 as the bucket bound they fall under ("≤ 10").

A metric the server does not expose has no column, and a run with none of them no section.

    headers, rows = metrics_table(load("runs/<run>"))
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from analysis.dataset import Dataset
from analysis.document import Document
from analysis.tables import count, ms
from loadtests.run_format.files import SERVER_METRICS_CSV

PENDING = "nv_inference_pending_request_count"
FAILURE = "nv_inference_request_failure"
SERVED = ("nv_inference_request_success", FAILURE)
SUMMARIES = {
    "nv_inference_request_summary_us": "Triton request",
    "nv_inference_queue_summary_us": "Triton queue",
    "nv_inference_compute_infer_summary_us": "Triton compute",
}
HISTOGRAM = ("nv_inference_", "_histogram_ms_bucket")
QUANTILES = (("p50", "0.5"), ("p99", "0.99"))
METRICS_NOTE = (
    "From Triton's own metrics (server_metrics.csv), where the server exposes them: requests pending "
    "in Triton (peak and mean of the scrapes), failed requests by Triton's reason during the run, "
    "Triton's latency quantiles (its summaries, over their sliding window at the run's last scrape; "
    "the highest replica's), and its latency histograms' quantiles as the bucket bound they fall under."
)


def metrics_table(data: Dataset) -> tuple[list[str], list[list[str]]]:
    """One row per model that served requests during the run; a column per metric Triton exposed."""
    frame = _read(data.path / SERVER_METRICS_CSV) if data.kind == "run" else None
    if frame is None:
        return [], []
    columns: dict[str, dict[str, str]] = {}
    for model, group in frame.groupby("model", sort=True):
        if _increase(group[group["metric"].isin(SERVED)]) <= 0:
            continue
        for header, value in _cells(group).items():
            columns.setdefault(header, {})[model] = value
    models = sorted({model for values in columns.values() for model in values})
    headers = ["model", *columns]
    return headers, [[model, *(columns[h].get(model, "") for h in columns)] for model in models]


def metrics_section(doc: Document, headers: list[str], rows: list[list[str]]) -> None:
    if rows:
        doc.noted_table("Triton's metrics", METRICS_NOTE, headers, rows)


def _read(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    frame = pd.read_csv(path, dtype={"labels": str})
    frame = frame[frame["metric"].str.startswith("nv_inference_")].copy()
    if frame.empty:
        return None
    labels = [json.loads(text) if isinstance(text, str) else {} for text in frame["labels"]]
    for key in ("model", "replica", "reason", "quantile", "le"):
        frame[key] = [entry.get(key, "") for entry in labels]
    return frame


def _cells(group: pd.DataFrame) -> dict[str, str]:
    cells = {}
    pending = group[group["metric"] == PENDING]
    if not pending.empty:
        per_scrape = pending.groupby("time_s")["value"].sum()
        cells["pending peak"] = count(int(per_scrape.max()))
        cells["pending mean"] = f"{per_scrape.mean():.2f}"
    failures = group[(group["metric"] == FAILURE) & (group["reason"] != "")]
    if not failures.empty:
        by_reason = {reason: _increase(rows) for reason, rows in failures.groupby("reason", sort=True)}
        cells["failures by reason"] = ", ".join(f"{r} {count(n)}" for r, n in by_reason.items() if n) or "0"
    for metric, label in SUMMARIES.items():
        for key, quantile in QUANTILES:
            value = _last_quantile(group[(group["metric"] == metric) & (group["quantile"] == quantile)])
            if value is not None:
                cells[f"{label} {key} (ms)"] = ms(value)
    for metric, buckets in group[group["metric"].str.match(HISTOGRAM[0] + ".*" + HISTOGRAM[1])].groupby("metric"):
        what = metric.removeprefix(HISTOGRAM[0]).removesuffix(HISTOGRAM[1]).replace("_", " ")
        cells.update({f"{what} {key} (ms)": bound for key, bound in _bucket_quantiles(buckets).items()})
    return cells


def _increase(rows: pd.DataFrame) -> float:
    """A counter's increase over the run: last minus first scrape of each series, summed."""
    total = 0.0
    for _, series in rows.groupby(["metric", "labels"]):
        ordered = series.sort_values("time_s")["value"]
        total += max(0.0, float(ordered.iloc[-1]) - float(ordered.iloc[0]))
    return total


def _last_quantile(rows: pd.DataFrame) -> float | None:
    """The highest replica's value at the last scrape (µs), or None (absent, or NaN: no sample)."""
    if rows.empty:
        return None
    last = rows[rows["time_s"] == rows["time_s"].max()]["value"].dropna()
    return None if last.empty or math.isnan(float(last.max())) else float(last.max())


def _bucket_quantiles(buckets: pd.DataFrame) -> dict[str, str]:
    """p50/p99 of the run's increase of a cumulative histogram, as '≤ BOUND' (ms)."""
    increase = {float(le): _increase(rows) for le, rows in buckets.groupby("le")}  # replicas summed
    bounds = sorted(increase)
    total = increase.get(math.inf, increase[bounds[-1]])
    if total <= 0:
        return {}
    out = {}
    for key, quantile in QUANTILES:
        bound = next(b for b in bounds if increase[b] >= float(quantile) * total)
        out[key] = f"> {bounds[-2]:g}" if math.isinf(bound) else f"≤ {bound:g}"
    return out
