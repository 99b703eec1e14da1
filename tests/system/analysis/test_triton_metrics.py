"""Triton's newer metrics in the report (server_metrics.csv): pending requests, failures by reason,
Triton's own latency quantiles (summaries; histograms where the server has them).

The bundled tritonserver (2.51) serves the pending count and the failures by reason always, the
latency summaries with `--metrics-config=summary_latencies=true`, and no latency histogram
(`histogram_latencies=true` is accepted and adds nothing); so the histogram rows are written in
Triton's exposition format (its metrics guide) into a real run's server_metrics.csv.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from analysis.report import write_report
from loadtests.server.launcher import LocalTriton
from tests.helpers import THROWAWAY_STOP_S, read_summary, repository_of, run_against_triton
from tests.unit.analysis.test_report import markdown_table

# One instance sleeping 10 ms a batch of up to 4; a request queued over 2 ms is rejected.
MODEL = "queue_timeout"
SLEEP_MS = 10
USERS = 6
SUMMARIES = ["--metrics-config=summary_latencies=true"]
SECTION = "## Triton's metrics"
NEWER = ("nv_inference_pending_request_count", "nv_inference_request_failure")


@pytest.fixture(scope="module")
def overloaded(tmp_path_factory):
    """A 3-s run of six users against a Triton of its own with latency summaries on."""
    root = tmp_path_factory.mktemp("newer-metrics")
    with LocalTriton(
        [repository_of(root / "models", MODEL)], extra_args=SUMMARIES, stop_timeout_s=THROWAWAY_STOP_S
    ) as server:
        # Metrics read every 0.5 s: the pending count is a gauge, seen only when scraped.
        options = ["--model", MODEL, "--shape", "INPUT0:16", "--server-stats-interval", "0.5"]
        run = run_against_triton(
            server,
            root / "run",
            ["TritonHttpUser"],
            options,
            models=(MODEL,),
            users=USERS,
            run_time="3s",
            expect_exit=1,
        )
    return run.run_dir


def metrics_rows(run_dir) -> dict[str, str]:
    write_report(run_dir)
    report = (run_dir / "report.md").read_text()
    assert SECTION in report
    headers, rows = markdown_table(report[report.index(SECTION) :], "model")
    (row,) = [r for r in rows if r[0] == MODEL]
    return dict(zip(headers, row, strict=True))


def test_pending_failures_by_reason_and_tritons_quantiles_are_in_the_report(overloaded):
    (endpoint,) = read_summary(overloaded)["endpoints"]
    row = metrics_rows(overloaded)
    # Every request the client saw rejected for its time in the queue, Triton counted as REJECTED.
    refused = sum(n for name, n in endpoint["failures_by_class"].items() if "queue timeout" in name)
    assert refused > 0 and row["failures by reason"] == f"REJECTED {refused}"
    assert 0 < int(row["pending peak"]) <= USERS
    # Triton's own quantiles: a request runs the model's sleep at least.
    assert SLEEP_MS <= float(row["Triton request p50 (ms)"]) <= float(row["Triton request p99 (ms)"])
    assert float(row["Triton compute p50 (ms)"]) >= SLEEP_MS


def test_histograms_give_bucket_quantiles_and_absent_metrics_are_quietly_absent(overloaded, tmp_path):
    run_dir = shutil.copytree(overloaded, tmp_path / "run")
    path = run_dir / "server_metrics.csv"
    metrics = pd.read_csv(path, dtype={"labels": str})
    first, last = metrics["time_s"].min(), metrics["time_s"].max()
    # A first-response histogram as Triton 24.11+ exposes it: 100 responses over the run, 60 in
    # the first 10 ms, 39 more by 100 ms, one later; before the run 5 (not the run's).
    name = "nv_inference_first_response_histogram_ms"
    rows = []
    for time_s, counts in ((first, (5, 5, 5, 5)), (last, (65, 104, 105, 105))):
        for le, value in zip(("10", "100", "1000", "+Inf"), counts, strict=True):
            labels = json.dumps({"le": le, "model": MODEL, "version": "1"}, separators=(",", ":"), sort_keys=True)
            rows.append([time_s, f"{name}_bucket", labels, value])
    pd.concat([metrics, pd.DataFrame(rows, columns=metrics.columns)]).to_csv(path, index=False)
    row = metrics_rows(run_dir)
    assert (row["first response p50 (ms)"], row["first response p99 (ms)"]) == ("≤ 10", "≤ 100")
    # A server without any of them (the summaries, pending count and failures by reason gone):
    # no section, and the rest of the report as before.
    older = metrics[~metrics["metric"].str.startswith(NEWER) & ~metrics["metric"].str.contains("_summary_us")]
    older.to_csv(path, index=False)
    write_report(run_dir)
    report = (run_dir / "report.md").read_text()
    assert SECTION not in report and "## Endpoints" in report
