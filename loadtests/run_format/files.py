"""The names of a run directory's files: the one list the writers and the readers share.

    runs/20261122T013000Z-bertqagrpcuser/
        config.json              options, versions, Triton's metadata and each model's config
        timeseries.csv           per window and endpoint: users, counts, throughput, percentiles (µs)
        hdr/<endpoint>.hlog      HdrHistogram interval logs (open loop adds <endpoint>.uncorrected.hlog)
        summary.json             per endpoint totals and exact percentiles (schema: summary.py)
        server_stats.json        Triton's /stats: the run's delta, restarts, scrape errors
        server_snapshots.jsonl   Triton's raw /stats snapshots, one line each, appended as taken
        server_intervals.jsonl   the delta between each two consecutive snapshots, one line each
        server_metrics.csv       Triton's Prometheus samples
        steps.json               a load shape's steps (start/end on timeseries.csv's clock)
        sweep.json, sweep.csv    a sweep's (or capacity search's) levels; the CSV in perf_analyzer's -f columns
        capacity.json, .csv      a capacity search's levels in the order tried, and its verdict

docs/reference/run-directory.md describes each file's content.

    (run_dir / SUMMARY_JSON).read_text()
"""

from __future__ import annotations

CONFIG_JSON = "config.json"
SUMMARY_JSON = "summary.json"
TIMESERIES_CSV = "timeseries.csv"
HDR_DIR = "hdr"
HLOG_SUFFIX = ".hlog"
SERVER_STATS_JSON = "server_stats.json"
SERVER_SNAPSHOTS_JSONL = "server_snapshots.jsonl"
SERVER_INTERVALS_JSONL = "server_intervals.jsonl"
SERVER_METRICS_CSV = "server_metrics.csv"
STEPS_JSON = "steps.json"
# --trace-sample: one row per request whose Triton trace was joined to its client timing.
TRACES_CSV = "traces.csv"
SWEEP_JSON = "sweep.json"
SWEEP_CSV = "sweep.csv"
CAPACITY_JSON = "capacity.json"
CAPACITY_CSV = "capacity.csv"

# What a run writes first: a directory holding any of these holds a run (other files, such
# as an empty volume's lost+found, do not make it one).
RUN_MARKERS = (CONFIG_JSON, SUMMARY_JSON, TIMESERIES_CSV, HDR_DIR)
