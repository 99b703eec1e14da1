"""`python -m analysis report`: reports built from real runs against the local Triton, and from
perf_analyzer -f CSVs.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/analysis/test_report.py.
"""

from __future__ import annotations

import base64
import csv
import json
import math
import re
import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from analysis import plots
from analysis.dataset import load
from analysis.report import write_report
from analysis.resources import busy_steps
from loadtests.commands.args import EXIT_UNSTABLE
from loadtests.run_format.hdr import LATENCY_KEYS, UNCORRECTED, read_logs, summarise_us
from tests.helpers import REPO_ROOT, on_a_steady_load_generator, read_summary, run_cli, run_locust, triton_options
from tests.unit.analysis.test_report import PNG_SIGNATURE, markdown_table

SERVER_PARTS = ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")
SERVER_TITLES = {
    "queue_us": "queue (ms)",
    "compute_input_us": "compute input (ms)",
    "compute_infer_us": "compute infer (ms)",
    "compute_output_us": "compute output (ms)",
}
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}


def two_steps_of_3_s(triton, run_dir: Path, classes: list[str], targets: str, *extra: str) -> Path:
    """A real run of `identity` in two 3-s steps (`targets`, users in all), on a steady load generator."""

    def run(run_dir: Path) -> None:
        options = [*triton_options(triton, server_stats_interval=1), "--model", "identity", *extra]
        options += ["--run-dir", str(run_dir), "--load-shape", "steps", "--shape-args", f"targets={targets},step_s=3"]
        result = run_locust(classes, options, users=int(targets.split(";")[-1]), run_time="8s")
        assert result.returncode == 0, result.stderr[-2000:]

    return on_a_steady_load_generator(run, run_dir)


@pytest.fixture(scope="module")
def stepped_run(triton, tmp_path_factory) -> Path:
    """A real two-step run: 1 then 2 users on `identity` over HTTP, 3 s each."""
    directory = tmp_path_factory.mktemp("report") / "stepped"
    return two_steps_of_3_s(triton, directory, ["TritonHttpUser"], "1;2", "--batch-size", "1,2")


@pytest.fixture(scope="module")
def open_loop_run(triton, tmp_path_factory) -> Path:
    """A real open-loop run: 100 requests/s at constant spacing to `sleep_batch` (20 ms) for 6 s."""
    run_dir = tmp_path_factory.mktemp("report") / "open_loop"
    result = run_locust(
        ["TritonHttpUser"],
        [
            *triton_options(triton),
            "--model",
            "sleep_batch",
            "--shape",
            "INPUT0:16",
            "--traffic",
            "constant",
            "--rate",
            "100",
            "--run-dir",
            str(run_dir),
        ],
        users=2,
        run_time="6s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return run_dir


@pytest.fixture(scope="module")
def sweep_run(triton, tmp_path_factory) -> Path:
    """A real concurrency sweep: `sleep` (20 ms per request) at 1 then 2 users, 1-s windows."""
    run_dir = tmp_path_factory.mktemp("report") / "sweep"
    result = run_cli(
        # --shape is not a sweep option: it goes to Locust as given.
        ["-m", "loadtests", "sweep", "--model", "sleep", "--shape", "INPUT0:16", "--concurrency", "1:2"]
        + ["--measurement-interval", "1000", "--run-dir", str(run_dir), *triton_options(triton)],
        timeout=150,
    )
    # A level unstable on a busy host (1-s windows) still has its row, marked (EXIT_UNSTABLE): the
    # report shows it as written, and the test below checks both. A full run's level 2 was once.
    assert result.returncode in (0, EXIT_UNSTABLE), result.stderr[-3000:]
    return run_dir


@pytest.fixture(scope="module")
def two_class_run(triton, tmp_path_factory) -> Path:
    """A real stepped run of two user classes on `identity`: 2 then 4 users in all (1 then 2 each)."""
    directory = tmp_path_factory.mktemp("report") / "two_classes"
    return two_steps_of_3_s(triton, directory, ["TritonHttpUser", "TritonGrpcUser"], "2;4")


@pytest.fixture
def run_copy(stepped_run, tmp_path) -> Path:
    """A private copy of the real run, for tests that write into it or alter it."""
    return Path(shutil.copytree(stepped_run, tmp_path / "run"))


def hlog_intervals(path: Path) -> list[tuple[float, HdrHistogram]]:
    """(middle as Unix time, histogram) of every interval of an HDR log, read by hdrh's own
    HistogramLogReader: independent of loadtests.run_format.hdr, which the report uses."""
    reader = HistogramLogReader(str(path), HdrHistogram(1, 10 * 60 * 1_000_000, 3))
    out = []
    try:
        while (histogram := reader.get_next_interval_histogram(absolute=True)) is not None:
            middle_ms = (histogram.get_start_time_stamp() + histogram.get_end_time_stamp()) / 2
            out.append((middle_ms / 1000, histogram))
    finally:
        reader.close()
    return out


# -- a real run -----------------------------------------------------------------------------------------
def test_report_figures_equal_summary_json(run_copy):
    html_path = write_report(run_copy)
    assert html_path == run_copy / "report.html"
    summary = read_summary(run_copy)
    headers, rows = markdown_table((run_copy / "report.md").read_text(), "endpoint")
    assert len(rows) == len(summary["endpoints"]) == 1
    for row, endpoint in zip(rows, summary["endpoints"], strict=True):
        cells = dict(zip(headers, row, strict=True))
        assert cells["endpoint"] == endpoint["name"]
        for key in ("requests", "failures", "inferences"):
            assert int(cells[key]) == endpoint[key]
        assert float(cells["req/s"]) == endpoint["throughput_rps"]
        assert float(cells["infer/s"]) == endpoint["throughput_infer_per_s"]
        for key in LATENCY_KEYS:
            # ms with µs precision: equal to the µs value to the displayed 3 decimals.
            assert float(cells[f"{key} (ms)"]) == pytest.approx(endpoint["latency_us"][key] / 1000, abs=0.0005)
        assert endpoint["requests"] > 100 and endpoint["latency_us"]["p50"] > 0


def test_report_is_self_contained_and_links_its_pngs(run_copy):
    write_report(run_copy)
    html = (run_copy / "report.html").read_text()
    markdown = (run_copy / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert {"components.png", "latency_vs_throughput.png", "latency_over_time.png", "throughput_over_time.png"} <= set(
        links
    )
    assert "server_over_time.png" in links
    for link in links:
        assert not Path(link).is_absolute()
        assert (run_copy / link).read_bytes().startswith(PNG_SIGNATURE)
    images = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([^"]+)">', html)
    assert len(images) == len(links)
    assert all(base64.b64decode(data).startswith(PNG_SIGNATURE) for data in images)
    # Nothing fetched when opened offline: no external script, stylesheet or image.
    assert not re.search(r"<(script|link)\b", html)
    assert not re.search(r'src="(?!data:)', html)
    # The Triton the run measured, as config.json recorded it from /v2.
    server = json.loads((run_copy / "config.json").read_text())["triton"]["server"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", server["version"]), server
    assert f"| Triton | {server['name']} {server['version']} |" in markdown
    assert f"<tr><td>Triton</td><td>{server['name']} {server['version']}</td></tr>" in html
    assert "2 x KIND_CPU" not in html  # identity's own config, not the demo's


def test_steps_split_windows_and_merge_hdr_intervals_exactly(run_copy):
    data = load(run_copy)
    assert data.level_kind == "step"
    (frame,) = data.levels.values()
    records = frame.to_dict("records")
    config = json.loads((run_copy / "config.json").read_text())
    run_start, window_s = datetime.fromisoformat(config["started_at"]).timestamp(), float(config["window_s"])
    steps = json.loads((run_copy / "steps.json").read_text())["steps"]
    assert [record["level"] for record in records] == [1.0, 2.0] == [step["target"] for step in steps]
    # A window or HDR interval belongs to the step holding its middle; the run's first and last
    # windows stick out of the run, so the first and last steps are open-ended.
    bounds = [(step["start_s"], step["end_s"]) for step in steps]
    bounds[0], bounds[-1] = (-math.inf, bounds[0][1]), (bounds[-1][0], math.inf)
    timeseries = pd.read_csv(run_copy / "timeseries.csv")
    middles = timeseries["time_s"] + window_s / 2
    (hlog,) = (run_copy / "hdr").glob("*.hlog")
    intervals = [(middle - run_start, histogram) for middle, histogram in hlog_intervals(hlog)]
    server_intervals = [
        (interval["start_s"] - run_start, interval["end_s"] - run_start, interval["models"]["identity"])
        for interval in map(json.loads, (run_copy / "server_intervals.jsonl").read_text().splitlines())
        if interval["models"].get("identity", {}).get("requests")
    ]
    (endpoint,) = read_summary(run_copy)["endpoints"]
    for record, (start, end) in zip(records, bounds, strict=True):
        windows = timeseries[(middles >= start) & (middles < end)]
        assert record["requests"] == windows["requests"].sum() > 0
        assert record["failures"] == windows["failures"].sum()
        merged = HdrHistogram(1, 10 * 60 * 1_000_000, 3)
        for histogram in (histogram for middle, histogram in intervals if start <= middle < end):
            merged.add(histogram)
        # The step's HDR intervals hold exactly the successful requests of its windows, and the
        # step's percentiles are theirs as hdrh itself computes them.
        assert merged.get_total_count() == (windows["requests"] - windows["failures"]).sum()
        for key, percentile in PERCENTILES.items():
            assert record[f"{key}_us"] == merged.get_value_at_percentile(percentile), key
        assert record["max_us"] == merged.get_max_value()
        assert record["mean_us"] == pytest.approx(merged.get_mean_value(), abs=0.001)
        assert windows["p50_us"].min() <= record["p50_us"] <= windows["p50_us"].max()
        # Server times: Triton's statistics intervals overlapping the step, averaged over their
        # requests, so within the range of those intervals' own values (3 decimals in the file).
        overlapping = [models for s, e, models in server_intervals if min(end, e) > max(start, s)]
        assert overlapping
        for key in (*SERVER_PARTS, "avg_batch"):
            values = [models[key] for models in overlapping]
            assert min(values) - 0.001 <= record[key] <= max(values) + 0.001, (key, record[key], values)
        assert record["compute_infer_us"] > 0
        if "covered_s" in windows:
            # Rates are per second the windows covered (the run's first and last are partial).
            assert record["infer_per_s"] == pytest.approx(windows["inferences"].sum() / windows["covered_s"].sum())
    # Every window and every HDR interval is in exactly one step.
    assert sum(record["requests"] for record in records) == timeseries["requests"].sum() == endpoint["requests"]
    # Merging every interval reproduces summary.json's exact percentiles.
    whole = HdrHistogram(1, 10 * 60 * 1_000_000, 3)
    for _, histogram in intervals:
        whole.add(histogram)
    for key, percentile in PERCENTILES.items():
        assert whole.get_value_at_percentile(percentile) == endpoint["latency_us"][key], key
    assert whole.get_max_value() == endpoint["latency_us"]["max"]
    assert whole.get_mean_value() == pytest.approx(endpoint["latency_us"]["mean"], abs=0.001)
    # Step table in report.md: the same numbers.
    write_report(run_copy)
    headers, rows = markdown_table((run_copy / "report.md").read_text(), "step")
    assert [row[0] for row in rows] == ["step 1: 1 user", "step 2: 2 users"]
    for row, record in zip(rows, records, strict=True):
        cells = dict(zip(headers, row, strict=True))
        assert int(cells["requests"]) == record["requests"]
        for key in LATENCY_KEYS:
            assert float(cells[f"{key} (ms)"]) == pytest.approx(record[f"{key}_us"] / 1000, abs=0.0005)
        for key, title in SERVER_TITLES.items():
            assert float(cells[title]) == pytest.approx(record[key] / 1000, abs=0.0005)


def test_a_run_written_before_the_statistics_were_streamed_reads_the_same(run_copy, tmp_path):
    """Older run directories kept every interval inside server_stats.json; their reports show
    the same server side as a streamed run's. A run cut mid-line keeps every whole line."""
    streamed = load(run_copy)
    assert len(streamed.server_intervals) >= 3  # 8 s polled every second (5 on a busy machine)
    lines = (run_copy / "server_intervals.jsonl").read_text().splitlines()
    stats = json.loads((run_copy / "server_stats.json").read_text())
    stats["deltas"]["intervals"] = [json.loads(line) for line in lines]
    (run_copy / "server_stats.json").write_text(json.dumps(stats))
    (run_copy / "server_intervals.jsonl").unlink()
    old = load(run_copy)
    assert old.server_intervals == streamed.server_intervals
    assert all(old.levels[name].equals(streamed.levels[name]) for name in streamed.levels)
    del stats["deltas"]["intervals"]
    (run_copy / "server_stats.json").write_text(json.dumps(stats))
    (run_copy / "server_intervals.jsonl").write_text("\n".join(lines) + "\n" + lines[-1][:20])
    assert load(run_copy).server_intervals == streamed.server_intervals


def test_findings_are_computed_from_the_run(run_copy):
    write_report(run_copy)
    markdown = (run_copy / "report.md").read_text()
    findings = markdown.split("## Findings", 1)[1].split("\n## ", 1)[0]
    summary = read_summary(run_copy)
    (endpoint,) = summary["endpoints"]
    ratio = endpoint["latency_us"]["p99"] / endpoint["latency_us"]["p50"]
    assert f"p99 is {ratio:.1f}x p50" in findings
    assert f"No request failed ({endpoint['requests']:,} requests)" in findings
    # The executed batch from Triton's statistics (summary.json), next to the model's config.
    model = endpoint["model"]
    server = summary["server"][model]
    model_config = json.loads((run_copy / "config.json").read_text())["triton"]["models"][model]["config"]
    assert server["avg_batch"] == pytest.approx(server["inferences"] / server["executions"], abs=0.0005)
    assert server["avg_batch"] > 1.0  # --batch-size 1,2: some requests carry 2 inferences
    batching = "dynamic batching on" if "dynamic_batching" in model_config else "no dynamic batching"
    assert (
        f"{model}: Triton ran {server['avg_batch']:.2f} inferences per execution on average "
        f"({server['inferences']:,} in {server['executions']:,} executions; "
        f"max_batch_size {model_config['max_batch_size']}, {batching})."
    ) in findings


def test_a_throttled_load_generator_is_a_finding(run_copy):
    summary = read_summary(run_copy)
    # This machine sets no CPU limit: the real run carries null (or zeros) here.
    assert summary["load_generator"]["cpu_throttled_periods"] in (None, 0)
    write_report(run_copy)
    assert "CPU-throttled" not in (run_copy / "report.md").read_text()
    # As a worker under a Kubernetes CPU limit would report it (cgroup cpu.stat deltas).
    summary["load_generator"].update(cpu_throttled_s=1.25, cpu_throttled_periods=40, cpu_periods=300)
    (run_copy / "summary.json").write_text(json.dumps(summary))
    write_report(run_copy)
    assert (
        "The load generator was CPU-throttled by its container's limit in 40 of 300 scheduling periods (1.250 s in all)"
    ) in (run_copy / "report.md").read_text()


@pytest.mark.parametrize("scrapes", [None, 3], ids=["as-scraped", "three-scrapes"])
def test_a_busy_server_host_or_gpu_is_a_finding(run_copy, scrapes):
    """Triton's own utilization gauges (server_metrics.csv) say when the host had nothing to spare."""
    metrics = pd.read_csv(run_copy / "server_metrics.csv", dtype={"labels": str})
    if scrapes is not None:  # what a busy host scrapes in this run (a 2-shard make test saw 3)
        kept = sorted(t for t in set(metrics["time_s"]) if t >= 0)[:scrapes]
        metrics = metrics[metrics["time_s"].isin(kept) | (metrics["time_s"] < 0)]
        metrics.to_csv(run_copy / "server_metrics.csv", index=False)
    cpu = metrics[metrics["metric"] == "nv_cpu_utilization"]
    assert len(cpu) >= 2  # the real run scraped Triton's CPU gauge
    data = load(run_copy)
    during = data.resources[(data.resources["metric"] == "nv_cpu_utilization") & (data.resources["time_s"] >= 0)]
    busy_run = during["value"].mean() >= 0.9 or bool(busy_steps(during, data.steps, data.steps_kind))
    write_report(run_copy)
    # Whatever this machine's load was, the line follows the real samples (the whole run's, or a
    # step's: with other test processes on the machine, one step was once saturated).
    assert ("Triton's host CPU was" in (run_copy / "report.md").read_text()) == busy_run
    # A saturated host and one busy GPU, as a loaded GKE node's Triton would report them.
    rows = metrics[metrics["metric"] != "nv_cpu_utilization"]
    scraped = sorted(t for t in set(metrics["time_s"]) if t >= 0)
    # Four samples at the real scrapes' last times; a busy host scraped fewer (3 seen), and then
    # four times spread over the ones it has.
    times = scraped[-4:] if len(scraped) >= 4 else [float(t) for t in np.linspace(scraped[0], scraped[-1], 4)]
    busy = [[t, "nv_cpu_utilization", "{}", value] for t, value in zip(times, (0.9, 0.96, 1.0, 0.98), strict=True)]
    gpu = '{"gpu_uuid":"GPU-7f3a"}'
    busy += [[t, "nv_gpu_utilization", gpu, value] for t, value in zip(times, (1.0, 0.97, 0.99, 1.0), strict=True)]
    busy += [[t, "nv_gpu_utilization", '{"gpu_uuid":"GPU-idle"}', 0.2] for t in times]
    pd.concat([rows, pd.DataFrame(busy, columns=rows.columns)]).to_csv(run_copy / "server_metrics.csv", index=False)
    write_report(run_copy)
    findings = (run_copy / "report.md").read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    summary = read_summary(run_copy)
    address = json.loads((run_copy / "config.json").read_text())["triton"]["http"]
    assert (
        "Triton's host CPU was 96% busy on average over the run (peak 100%; 4 samples of Triton's "
        "nv_cpu_utilization): a request may have waited for it, and every latency here includes such waits. "
        f"The load generator ran on the same host (Triton at {address}) and used "
        f"{summary['load_generator']['cpu_s']:,.3f} s of CPU there."
    ) in findings
    assert "GPU GPU-7f3a was 99% busy on average over the run (peak 100%; 4 samples" in findings
    assert "GPU-idle" not in findings  # 20 % busy: not worth a line


def test_open_loop_run_shows_corrected_and_uncorrected(open_loop_run, tmp_path):
    run_dir = Path(shutil.copytree(open_loop_run, tmp_path / "run"))
    summary = read_summary(run_dir)
    traffic = summary["traffic"]
    assert (traffic["mode"], traffic["rate"]) == ("constant", 100.0)
    (endpoint,) = summary["endpoints"]
    corrected_us, uncorrected_us = endpoint["latency_us"], endpoint["latency_uncorrected_us"]
    late, dropped, requests = endpoint["late"], endpoint["dropped"], endpoint["requests"]
    assert requests > 300 and endpoint["failures"] == 0  # 100 req/s for 6 s
    # Timed from the intended send, never earlier than the actual send: every figure at least as high.
    assert all(corrected_us[key] >= uncorrected_us[key] for key in LATENCY_KEYS), (corrected_us, uncorrected_us)

    write_report(run_dir)
    markdown = (run_dir / "report.md").read_text()
    assert markdown.count("### Corrected vs uncorrected latency") == 1
    headers, rows = markdown_table(markdown, "endpoint", nth=1)
    corrected, uncorrected = (dict(zip(headers, row, strict=True)) for row in rows)
    assert (corrected["endpoint"], uncorrected["endpoint"]) == (endpoint["name"], endpoint["name"])
    assert (corrected["latency"], uncorrected["latency"]) == ("corrected", "uncorrected")
    for key in LATENCY_KEYS:
        assert float(corrected[f"{key} (ms)"]) == pytest.approx(corrected_us[key] / 1000, abs=0.0005)
        assert float(uncorrected[f"{key} (ms)"]) == pytest.approx(uncorrected_us[key] / 1000, abs=0.0005)
    assert (corrected["late"], corrected["dropped"]) == (str(late), str(dropped))
    assert (uncorrected["late"], uncorrected["dropped"]) == ("", "")
    assert f"open loop (constant arrivals), 100 req/s, at most {traffic['max_in_flight']} in flight" in markdown
    assert f"{late:,} of {requests:,} requests ({late / requests:.1%}) went out more than 1 ms" in markdown
    assert ("due requests" in markdown) == bool(dropped)
    assert (
        f"corrected p99 (from the intended send time) is {corrected_us['p99'] / 1000:,.3f} ms, "
        f"uncorrected (from the actual send) {uncorrected_us['p99'] / 1000:,.3f} ms"
    ) in markdown
    # The time series' open-loop columns add up to summary.json's counts.
    timeseries = pd.read_csv(run_dir / "timeseries.csv")
    assert (timeseries["late"].sum(), timeseries["dropped"].sum()) == (late, dropped)
    # Every window of the schedule has its target; windows after it (requests finishing while the
    # run stops, two of them once on a busy host) have none, and come only at the end.
    targets = timeseries["target_rate"]
    assert targets.notna().any() and (targets.dropna() == 100.0).all(), targets
    assert targets.isna().sum() == 0 or targets[targets.isna()].index.min() > targets.dropna().index.max(), targets

    # hdr/<endpoint>.uncorrected.hlog merged over the whole run: summary.json's uncorrected latencies.
    logs = read_logs(run_dir / "hdr", UNCORRECTED)
    assert list(logs) == [endpoint["name"]]
    log = logs[endpoint["name"]]
    assert log.path.name.endswith(".uncorrected.hlog")
    assert summarise_us(log.merge([(-1e9, 1e9)], log.base_epoch)[0]) == uncorrected_us
    (corrected_log,) = read_logs(run_dir / "hdr").values()
    assert corrected_log.path != log.path
    assert summarise_us(corrected_log.merge([(-1e9, 1e9)], corrected_log.base_epoch)[0]) == corrected_us


def test_sweep_report_rows_equal_sweep_json_and_sweep_csv_reads_back(sweep_run, tmp_path):
    run_dir = Path(shutil.copytree(sweep_run, tmp_path / "run"))
    sweep = json.loads((run_dir / "sweep.json").read_text())
    levels = sweep["levels"]
    assert sweep["mode"] == "concurrency" and [level["level"] for level in levels] == [1, 2]
    # The sweep also writes steps.json (one step per level); sweep.json is the one read.
    assert (run_dir / "steps.json").exists()
    from_json = load(run_dir)
    assert from_json.level_kind == "concurrency" and from_json.sweep_mode == "concurrency"
    with open(run_dir / "sweep.csv", newline="") as file:
        csv_rows = list(csv.DictReader(file))

    write_report(run_dir)
    headers, rows = markdown_table((run_dir / "report.md").read_text(), "concurrency")
    assert [row[0] for row in rows] == ["1", "2"]
    assert "client send (ms)" not in headers and "client recv (ms)" not in headers  # not measured: left out
    for row, level, csv_row in zip(rows, levels, csv_rows, strict=True):
        cells = dict(zip(headers, row, strict=True))
        server = level["server"]["sleep"]
        assert (int(cells["requests"]), int(cells["failures"])) == (level["requests"], level["failures"])
        assert float(cells["req/s"]) == pytest.approx(level["throughput_rps"], abs=0.05)
        assert float(cells["infer/s"]) == pytest.approx(level["throughput_infer_per_s"], abs=0.05)
        for key in LATENCY_KEYS:
            assert float(cells[f"{key} (ms)"]) == pytest.approx(level["latency_us"][key] / 1000, abs=0.0005), key
        for key, title in SERVER_TITLES.items():
            assert float(cells[title]) == pytest.approx(server[key] / 1000, abs=0.0005), key
        assert float(cells["avg batch"]) == pytest.approx(server["avg_batch"], abs=0.005)
        # sweep.csv floors the same part to whole µs: within 1 µs, plus the 0.5 µs of display rounding.
        network_ms = float(csv_row["Network+Server Send/Recv"]) / 1000
        assert float(cells["send/recv + network (ms)"]) == pytest.approx(network_ms, abs=0.0015)
        assert cells["stable"] == ("yes" if level["stable"] else "no")

    # The run's own sweep.csv read as any perf_analyzer -f CSV: the same levels.
    from_csv = load(run_dir / "sweep.csv")
    assert from_csv.kind == "perf_analyzer" and from_csv.level_kind == "concurrency"
    (json_frame,) = from_json.levels.values()
    (csv_frame,) = from_csv.levels.values()
    assert list(csv_frame["level"]) == list(json_frame["level"]) == [1.0, 2.0]
    # sweep.csv floors every µs value to a whole number, as perf_analyzer does: each CSV value is
    # the JSON one or up to 1 µs below it, never above.
    floored = ["p50_us", "p90_us", "p95_us", "p99_us", *SERVER_PARTS, "client_network_us"]
    for column in floored:
        for from_file, exact in zip(csv_frame[column], json_frame[column], strict=True):
            assert exact - 1 < from_file <= exact, (column, from_file, exact)
    # Inferences/Second is written with 6 significant digits ("%.6g"): relative error at most 5e-6.
    assert list(csv_frame["infer_per_s"]) == pytest.approx(list(json_frame["infer_per_s"]), rel=1e-5)
    # Empty Client Send/Recv cells are "not measured": NaN, never 0.
    assert csv_frame["client_send_us"].isna().all() and csv_frame["client_recv_us"].isna().all()

    html_path = write_report(run_dir / "sweep.csv", tmp_path / "csv_out")
    assert html_path == tmp_path / "csv_out" / "sweep.report.html"
    csv_headers, csv_report_rows = markdown_table((tmp_path / "csv_out" / "sweep.report.md").read_text(), "concurrency")
    assert [row[0] for row in csv_report_rows] == ["1", "2"]
    for row, csv_row in zip(csv_report_rows, csv_rows, strict=True):
        cells = dict(zip(csv_headers, row, strict=True))
        assert float(cells["p99 (ms)"]) * 1000 == pytest.approx(float(csv_row["p99 latency"]))


# -- users per class (the step's target is their total) ---------------------------------------------------
def test_users_by_class_beside_the_total_in_timeseries_and_report(two_class_run, tmp_path):
    timeseries = pd.read_csv(two_class_run / "timeseries.csv", keep_default_na=False)
    noted = timeseries[timeseries["users_by_class"] != ""]
    assert len(noted) >= len(timeseries) - 2  # at most the first windows, before users ran
    for row in noted.to_dict("records"):
        counts = dict(part.split("=") for part in row["users_by_class"].split(";"))
        assert set(counts) == {"TritonHttpUser", "TritonGrpcUser"}
        assert sum(int(count) for count in counts.values()) == int(row["users"])
    write_report(two_class_run, tmp_path)
    for endpoint in ("identity [grpc]", "identity [http]"):
        report = (tmp_path / "report.md").read_text()
        section = report.split(f"### {endpoint}", 1)[1]
        headers, rows = markdown_table(section, "step")
        cells = [dict(zip(headers, row, strict=True)) for row in rows]
        assert [c["step"] for c in cells] == ["step 1: 2 users", "step 2: 4 users"]
        assert [c["users by class"] for c in cells] == [
            "TritonGrpcUser 1, TritonHttpUser 1",
            "TritonGrpcUser 2, TritonHttpUser 2",
        ]


# -- readability: what the charts show, read from matplotlib's objects -------------------------------------
def test_every_components_panel_labels_its_throughput_axis(two_class_run):
    data = load(two_class_run)
    series = [(name, frame) for name, frame in data.levels.items()]
    assert len(series) == 2
    figure = plots.components_figure(series, data.level_kind)
    twins = [axes for axes in figure.axes if axes.yaxis.get_label_position() == "right"]
    assert len(twins) == 2
    for axes in twins:
        assert "inferences/s" in axes.get_ylabel()
        assert any(label.get_text() for label in axes.get_yticklabels())  # its scale is readable too


def test_users_staircase_changes_on_the_step_lines(run_copy):
    data = load(run_copy)
    axis = plots.TimeAxis.of_run(data.timeseries, data.steps, data.steps_kind, data.window_s)
    figure = plots.throughput_over_time_figure(data.timeseries, axis, data.window_s)
    main, right = figure.axes
    (users,) = [line for line in right.get_lines() if line.get_label().startswith("users")]
    x, y = users.get_xdata(), users.get_ydata()
    changes = [x[i] for i in range(1, len(y)) if y[i] != y[i - 1]]
    step_starts = [float(step["start_s"]) for step in data.steps]
    assert changes == step_starts[1:]  # each change of users is drawn at its step's start
    assert x[0] == step_starts[0]
    step_lines = sorted(line.get_xdata()[0] for line in main.get_lines() if line.get_label() == "_step")
    assert step_lines == step_starts


def over_time_figures(data) -> list:
    """Every over-time chart of a run's report, on the run's time axis."""
    axis = plots.TimeAxis.of_run(data.timeseries, data.steps, data.steps_kind, data.window_s)
    figures = [
        plots.latency_over_time_figure(data.timeseries, axis, data.window_s),
        plots.throughput_over_time_figure(data.timeseries, axis, data.window_s),
        plots.server_over_time_figure(data.server_intervals, axis),
    ]
    if data.resources is not None:
        figures.append(plots.resources_over_time_figure(data.resources, axis))
    return figures


def test_over_time_charts_share_one_x_range_and_the_step_lines(run_copy):
    data = load(run_copy)
    figures = over_time_figures(data)
    expected_x = (min(0.0, data.timeseries["time_s"].min()), data.timeseries["time_s"].max() + data.window_s)
    step_starts = sorted(float(step["start_s"]) for step in data.steps)
    for figure in figures:
        for axes in figure.axes:
            assert axes.get_xlim() == pytest.approx(expected_x), figure.texts or axes.get_title()
            if axes.yaxis.get_label_position() == "left":
                marks = sorted(line.get_xdata()[0] for line in axes.get_lines() if line.get_label() == "_step")
                assert marks == step_starts


def test_wide_tables_scroll_in_their_own_box(run_copy):
    html = write_report(run_copy).read_text()
    tables = html.count("<table>")
    assert tables > 1 and html.count('<div class="table-wrap"><table>') == tables
    assert re.search(r"div\.table-wrap \{[^}]*overflow-x: auto", html)


def test_endpoints_of_one_model_are_told_apart(two_class_run):
    data = load(two_class_run)
    axis = plots.TimeAxis.of_run(data.timeseries, data.steps, data.steps_kind, data.window_s)
    main = plots.throughput_over_time_figure(data.timeseries, axis, data.window_s).axes[0]
    lines = {line.get_label(): line for line in main.get_lines() if line.get_label().endswith("infer/s")}
    grpc, http = lines["identity [grpc] infer/s"], lines["identity [http] infer/s"]
    assert grpc.get_color() == http.get_color() == plots.endpoint_colour("identity")  # one model, one colour
    assert grpc.get_linestyle() != http.get_linestyle()


def test_a_host_saturated_in_one_step_is_a_finding_of_that_step(run_copy):
    """A whole-run average hides a step that saturated Triton's host: the finding names the step."""
    metrics = pd.read_csv(run_copy / "server_metrics.csv", dtype={"labels": str})
    run_start = datetime.fromisoformat(json.loads((run_copy / "config.json").read_text())["started_at"]).timestamp()
    steps = json.loads((run_copy / "steps.json").read_text())["steps"]
    first, second = ((run_start + s["start_s"], run_start + s["end_s"]) for s in steps)
    # The real run's CPU samples, made to say: idle in step 1, saturated in step 2. A busy host
    # delays the polls (CI: 4 samples in the 8-s run, none in step 2), so each step also gets two
    # samples of the same row's form inside it.
    cpu = metrics[(metrics["metric"] == "nv_cpu_utilization") & (metrics["time_s"] >= run_start)].copy()
    assert len(cpu), "the real run sampled Triton's CPU"
    added = pd.DataFrame([cpu.iloc[0]] * 4).assign(
        time_s=[start + (end - start) * share for start, end in (first, second) for share in (1 / 3, 2 / 3)]
    )
    cpu = pd.concat([cpu, added], ignore_index=True).sort_values("time_s", kind="stable")
    cpu.index = range(len(metrics), len(metrics) + len(cpu))  # apart from the rows kept below
    cpu["value"] = cpu["value"].astype(float)
    in_second = (cpu["time_s"] >= second[0]) & (cpu["time_s"] < second[1])
    busy = [0.97, 1.0, 0.99, 0.98, 0.96, 1.0][: int(in_second.sum())]
    cpu.loc[in_second, "value"] = busy + [0.97] * (int(in_second.sum()) - len(busy))
    cpu.loc[~in_second, "value"] = 0.3
    rest = metrics[~metrics.index.isin(cpu.index) & (metrics["metric"] != "nv_cpu_utilization")]
    pd.concat([rest, cpu]).to_csv(run_copy / "server_metrics.csv", index=False)
    whole, step_mean = cpu["value"].mean(), cpu.loc[in_second, "value"].mean()
    assert whole < 0.9 <= step_mean  # the whole-run average alone would say nothing
    write_report(run_copy)
    findings = (run_copy / "report.md").read_text().split("## Findings", 1)[1].split("\n## ", 1)[0]
    peak = cpu.loc[in_second, "value"].max()
    assert (
        f"Triton's host CPU was saturated in 1 of 2 load steps: {step_mean:.0%} busy at step 2: 2 users "
        f"(peak {peak:.0%}, {int(in_second.sum())} samples), from Triton's nv_cpu_utilization "
        f"({whole:.0%} over the whole run, an average that hides it)"
    ) in findings
    assert "step 1: 1 user (peak" not in findings


def test_the_time_outside_triton_has_one_name(run_copy):
    """Client latency minus Triton's queue and compute: one name in findings, table, chart and docs."""
    name = "send/recv + network"
    write_report(run_copy)
    markdown = (run_copy / "report.md").read_text()
    data = load(run_copy)
    (frame,) = data.levels.values()
    headers, rows = markdown_table(markdown, "step")
    assert f"{name} (ms)" in headers
    column = headers.index(f"{name} (ms)")
    for row, record in zip(rows, frame.to_dict("records"), strict=True):
        assert float(row[column]) == pytest.approx(record["client_network_us"] / 1000, abs=0.0005)
    assert f"{name[0].upper()}{name[1:]} is " in markdown  # the finding
    figure = plots.components_figure(list(data.levels.items()), data.level_kind)
    legends = [axes.get_legend() for axes in figure.axes if axes.get_legend()] + list(figure.legends)
    legend = {text.get_text() for box in legends for text in box.texts}
    assert name in legend, legend
    for other in ("client send/recv + network", "network + server send/recv", "client/network"):
        assert other not in markdown.lower(), other
    # The glossary names the quantity and the CSV header perf_analyzer (and sweep.csv) give it.
    glossary = (REPO_ROOT / "docs" / "reference" / "reports.md").read_text().split("## Glossary", 1)[1]
    assert f"**{name}**" in glossary and "Network+Server Send/Recv" in glossary
