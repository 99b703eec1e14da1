"""`python -m analysis report`: reports built from real runs against the local Triton, and
from perf_analyzer -f CSVs. Every figure checked against the file it came from."""

from __future__ import annotations

import base64
import csv
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.__main__ import main as analysis_main
from analysis.dataset import load
from analysis.hdr import read_logs, summarise_us
from analysis.report import write_report
from tests.helpers import REPO_ROOT, read_summary, run_cli, run_locust, triton_options

PA_DATA = REPO_ROOT / "tests" / "data" / "perf_analyzer"
PERCENTILES = ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def stepped_run(triton, tmp_path_factory) -> Path:
    """A real two-step run: 1 then 2 users on `identity` over HTTP, 3 s each."""
    run_dir = tmp_path_factory.mktemp("report") / "stepped"
    result = run_locust(
        ["TritonHttpUser"],
        [
            *triton_options(triton, server_stats_interval=1),
            "--model",
            "identity",
            "--batch-size",
            "1,2",
            "--run-dir",
            str(run_dir),
            "--load-shape",
            "steps",
            "--shape-args",
            "targets=1;2,step_s=3",
        ],
        users=2,
        run_time="8s",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return run_dir


@pytest.fixture
def run_copy(stepped_run, tmp_path) -> Path:
    """A private copy of the real run, for tests that write into it or alter it."""
    return Path(shutil.copytree(stepped_run, tmp_path / "run"))


def markdown_table(markdown: str, first_header: str, nth: int = 0) -> tuple[list[str], list[list[str]]]:
    """The nth Markdown table whose first header cell is `first_header`."""
    lines = markdown.splitlines()
    for index, line in enumerate(lines):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header and index + 1 < len(lines) and "---" in lines[index + 1]:
            if nth:
                nth -= 1
                continue
            rows = []
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            return cells, rows
    raise AssertionError(f"no table starting with '{first_header}'")


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
        for key in PERCENTILES:
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
    assert "Triton" in html and "2 x KIND_CPU" not in html  # identity's own config, not the demo's


def test_steps_split_windows_and_merge_hdr_intervals_exactly(run_copy):
    data = load(run_copy)
    assert data.level_kind == "step"
    (frame,) = data.levels.values()
    steps = json.loads((run_copy / "steps.json").read_text())["steps"]
    assert list(frame["level"]) == [1.0, 2.0] == [step["target"] for step in steps]
    timeseries = data.timeseries
    middles = timeseries["time_s"] + data.window_s / 2
    log = next(iter(read_logs(run_copy / "hdr").values()))
    merged = log.merge([(s["start_s"], s["end_s"]) for s in steps], data.start_epoch)
    for step, record, histogram in zip(steps, frame.to_dict("records"), merged, strict=True):
        windows = timeseries[(middles >= step["start_s"]) & (middles < step["end_s"])]
        assert record["requests"] == windows["requests"].sum() > 0
        # The HDR intervals of a step hold exactly the successful requests of its windows.
        assert histogram.get_total_count() == (windows["requests"] - windows["failures"]).sum()
        assert record["p99_us"] == summarise_us(histogram)["p99"]
        assert windows["p50_us"].min() <= record["p50_us"] <= windows["p50_us"].max()
        assert record["infer_per_s"] == pytest.approx(windows["inferences"].sum() / (len(windows) * data.window_s))
        assert record["queue_us"] >= 0 and record["compute_infer_us"] > 0  # from the server intervals
        assert record["mean_us"] == pytest.approx(
            record["client_network_us"]
            + record["queue_us"]
            + record["compute_input_us"]
            + record["compute_infer_us"]
            + record["compute_output_us"]
        )
    # Merging every interval reproduces summary.json's exact percentiles.
    (whole,) = log.merge([(-math.inf, math.inf)], data.start_epoch)
    assert summarise_us(whole) == read_summary(run_copy)["endpoints"][0]["latency_us"]
    # Step table in report.md: the same numbers.
    write_report(run_copy)
    headers, rows = markdown_table((run_copy / "report.md").read_text(), "step")
    assert [row[0] for row in rows] == ["step 1: 1 user", "step 2: 2 users"]
    for row, record in zip(rows, frame.to_dict("records"), strict=True):
        cells = dict(zip(headers, row, strict=True))
        assert int(cells["requests"]) == record["requests"]
        assert float(cells["p99 (ms)"]) == pytest.approx(record["p99_us"] / 1000, abs=0.0005)


def test_findings_are_computed_from_the_run(run_copy):
    write_report(run_copy)
    markdown = (run_copy / "report.md").read_text()
    findings = markdown.split("## Findings", 1)[1].split("\n## ", 1)[0]
    endpoint = read_summary(run_copy)["endpoints"][0]
    ratio = endpoint["latency_us"]["p99"] / endpoint["latency_us"]["p50"]
    assert f"p99 is {ratio:.1f}x p50" in findings
    assert f"No request failed ({endpoint['requests']:,} requests)" in findings
    assert "inferences per execution on average" in findings


def test_open_loop_run_shows_corrected_and_uncorrected(run_copy):
    """The open-loop keys of summary.json, added to a real run's files (values derived from it)."""
    summary = read_summary(run_copy)
    endpoint = summary["endpoints"][0]
    endpoint["latency_uncorrected_us"] = {key: round(value * 0.8, 3) for key, value in endpoint["latency_us"].items()}
    endpoint["late"], endpoint["dropped"] = 25, 5
    summary["traffic"] = {"mode": "poisson", "rate": 100.0, "max_in_flight": 8, "drop_when_saturated": True}
    (run_copy / "summary.json").write_text(json.dumps(summary))
    with open(run_copy / "timeseries.csv", newline="") as file:
        windows = list(csv.DictReader(file))
    for window in windows:  # the open-loop columns, whether or not this run's recorder wrote them
        window.update(late="1", dropped="0", target_rate="100.0", p99_uncorrected_us=float(window["p99_us"]) * 0.8)
    with open(run_copy / "timeseries.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(windows[0]))
        writer.writeheader()
        writer.writerows(windows)

    write_report(run_copy)
    markdown = (run_copy / "report.md").read_text()
    headers, rows = markdown_table(markdown, "endpoint", nth=1)
    corrected, uncorrected = (dict(zip(headers, row, strict=True)) for row in rows)
    assert (corrected["latency"], uncorrected["latency"]) == ("corrected", "uncorrected")
    for key in PERCENTILES:
        assert float(corrected[f"{key} (ms)"]) == pytest.approx(endpoint["latency_us"][key] / 1000, abs=0.0005)
        assert float(uncorrected[f"{key} (ms)"]) == pytest.approx(
            endpoint["latency_uncorrected_us"][key] / 1000, abs=0.0005
        )
    assert (corrected["late"], corrected["dropped"]) == ("25", "5")
    assert "open loop (poisson arrivals), 100 req/s, at most 8 in flight" in markdown
    share = 25 / endpoint["requests"]
    assert f"25 of {endpoint['requests']:,} requests ({share:.1%}) went out more than 1 ms" in markdown
    assert f"5 of {endpoint['requests'] + 5:,} due requests" in markdown
    assert "corrected p99 (from the intended send time)" in markdown


def test_sweep_json_is_preferred_and_sweep_csv_reads_back_identically(run_copy, tmp_path):
    """A sweep.json/sweep.csv pair made from the real run's steps (as the sweep writes them)."""
    (steps_frame,) = load(run_copy).levels.values()
    model = read_summary(run_copy)["endpoints"][0]["model"]
    levels, csv_rows = [], []
    for record in steps_frame.to_dict("records"):
        latency = {key: record[f"{key}_us"] for key in PERCENTILES}
        server = {key: record[key] for key in ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")}
        server.update(requests=record["requests"], avg_batch=record["avg_batch"])
        levels.append(
            {
                "level": record["level"],
                "stable": record["level"] == 1.0,
                "windows": 3,
                "requests": record["requests"],
                "failures": record["failures"],
                "throughput_rps": record["rps"],
                "throughput_infer_per_s": record["infer_per_s"],
                "latency_us": latency,
                "server": {model: server},
            }
        )
        # perf_analyzer's column order; the suite leaves Client Send and Client Recv empty.
        csv_rows.append(
            [
                f"{record['level']:g}",
                record["infer_per_s"],
                "",
                record["network_us"],
                *(record[key] for key in ("queue_us", "compute_input_us", "compute_infer_us", "compute_output_us")),
                "",
                *(record[f"{key}_us"] for key in ("p50", "p90", "p95", "p99")),
            ]
        )
    (run_copy / "sweep.json").write_text(json.dumps({"mode": "concurrency", "levels": levels}))
    header = (PA_DATA / "concurrency.csv").read_text().splitlines()[0]
    with open(run_copy / "sweep.csv", "w", newline="") as file:
        file.write(header + "\n")
        csv.writer(file).writerows(csv_rows)

    from_json = load(run_copy)
    assert from_json.level_kind == "concurrency" and from_json.sweep_mode == "concurrency"
    from_csv = load(run_copy / "sweep.csv")
    (json_frame,) = from_json.levels.values()
    (csv_frame,) = from_csv.levels.values()
    columns = ["level", "infer_per_s", "p50_us", "p90_us", "p95_us", "p99_us", "queue_us", "compute_infer_us"]
    pd.testing.assert_frame_equal(json_frame[columns], csv_frame[columns], check_dtype=False)
    # Empty Client Send/Recv cells are "not measured": NaN, never 0.
    assert csv_frame["client_send_us"].isna().all() and csv_frame["client_recv_us"].isna().all()
    assert list(csv_frame["client_network_us"]) == pytest.approx(list(json_frame["client_network_us"]))

    write_report(run_copy)
    headers, rows = markdown_table((run_copy / "report.md").read_text(), "concurrency")
    assert [row[0] for row in rows] == ["1", "2"]
    assert [dict(zip(headers, row, strict=True))["stable"] for row in rows] == ["yes", "no"]
    assert "client send (ms)" not in headers  # a column nothing measured is left out, not shown as 0
    html_path = write_report(run_copy / "sweep.csv", tmp_path / "csv_out")
    assert html_path == tmp_path / "csv_out" / "sweep.report.html"


# -- perf_analyzer CSVs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["concurrency.csv", "concurrency_verbose.csv", "request_rate.csv"])
def test_perf_analyzer_csv_report_matches_the_csv(name, tmp_path):
    html_path = write_report(PA_DATA / name, tmp_path)
    stem = name.removesuffix(".csv")
    assert html_path == tmp_path / f"{stem}.report.html"
    for png in ("components", "latency_vs_throughput"):
        assert (tmp_path / f"{stem}.{png}.png").read_bytes().startswith(PNG_SIGNATURE)
    with open(PA_DATA / name, newline="") as file:
        expected = sorted(csv.DictReader(file), key=lambda row: float(next(iter(row.values()))))
    first = "concurrency" if name.startswith("concurrency") else "request rate (req/s)"
    headers, rows = markdown_table((tmp_path / f"{stem}.report.md").read_text(), first)
    assert len(rows) == len(expected)
    for row, source in zip(rows, expected, strict=True):
        cells = dict(zip(headers, row, strict=True))
        assert float(cells[first]) == float(next(iter(source.values())))  # sorted by level
        assert float(cells["infer/s"]) == pytest.approx(float(source["Inferences/Second"]), abs=0.05)
        for ours, theirs in (("p50", "p50 latency"), ("p99", "p99 latency"), ("queue", "Server Queue")):
            assert float(cells[f"{ours} (ms)"]) * 1000 == pytest.approx(float(source[theirs]))
        if "Avg latency" in source:
            assert float(cells["mean (ms)"]) * 1000 == pytest.approx(float(source["Avg latency"]))
    if name == "concurrency.csv":
        findings = (tmp_path / f"{stem}.report.md").read_text()
        assert "Throughput stops growing after concurrency 2" in findings  # 16,037 -> at most 17,548 (+9.4 %)


# -- bad input -------------------------------------------------------------------------------------------------
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    malformed = tmp_path / "bad.csv"
    malformed.write_text("Concurrency,Inferences/Second\n1,2\n")
    not_numbers = tmp_path / "words.csv"
    not_numbers.write_text((PA_DATA / "concurrency.csv").read_text().replace("9124.54", "fast"))
    (tmp_path / "empty_dir").mkdir()
    for source in (tmp_path / "nowhere", tmp_path / "empty_dir", malformed, not_numbers):
        assert analysis_main(["report", str(source)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert str(source) in err


def test_cli_runs_without_locust_or_gevent(tmp_path):
    code = (
        "import sys, analysis.report, analysis.compare, analysis.__main__;"
        "bad = [m for m in ('locust', 'gevent', 'loadtests') if m in sys.modules]; assert not bad, bad"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=False).returncode == 0
    result = run_cli(["-m", "analysis", "report", str(PA_DATA / "request_rate.csv"), "--out", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "request_rate.report.html")
