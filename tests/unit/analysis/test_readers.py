"""Reports from files people already have: perf_analyzer -f CSVs in every documented shape
(plain, --verbose-csv, --collect-metrics with its trailing comma, decoupled models, the response
cache, no server statistics), legacy perf_client CSVs, and Model Analyzer's result CSVs.

Each file under tests/data was written here in the format of its tool (facts from
perf_analyzer's report_writer.cc and docs, Model Analyzer's result table manager and record
types); every number the report shows is checked against the file it came from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from analysis.__main__ import main as analysis_main
from analysis.dataset import load
from analysis.report import write_report
from tests.helpers import REPO_ROOT, run_cli

PA_DATA = REPO_ROOT / "tests" / "data" / "perf_analyzer"
MA_DATA = REPO_ROOT / "tests" / "data" / "model_analyzer"


def csv_dicts(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def markdown_tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table of a report: (headers, rows)."""
    lines, tables = markdown.splitlines(), []
    for index, line in enumerate(lines):
        separator = lines[index + 1] if index + 1 < len(lines) else ""
        if line.startswith("|") and separator.startswith("|") and "---" in separator:
            split = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows = []
            for row in lines[index + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            tables.append((split, rows))
    return tables


def table_starting(markdown: str, first_header: str) -> list[dict[str, str]]:
    for headers, rows in markdown_tables(markdown):
        if headers[0] == first_header:
            return [dict(zip(headers, row, strict=True)) for row in rows]
    raise AssertionError(f"no table starting with '{first_header}'")


# -- perf_analyzer --verbose-csv --collect-metrics: GPU cells and a trailing comma -------------------------
def test_verbose_csv_with_gpu_metrics_and_trailing_comma(tmp_path):
    source = PA_DATA / "verbose_gpu_metrics.csv"
    header = source.read_text().splitlines()[0].split(",")
    assert len(header) == 20 and all(line.endswith(";,") for line in source.read_text().splitlines()[1:])
    write_report(source, tmp_path)
    rows = table_starting((tmp_path / "verbose_gpu_metrics.report.md").read_text(), "concurrency")
    expected = sorted(csv_dicts(source), key=lambda row: float(row["Concurrency"]))
    assert [float(row["concurrency"]) for row in rows] == [1.0, 2.0, 4.0]
    for row, theirs in zip(rows, expected, strict=True):
        assert float(row["mean (ms)"]) * 1000 == pytest.approx(float(theirs["Avg latency"]))
        assert float(row["p99 (ms)"]) * 1000 == pytest.approx(float(theirs["p99 latency"]))
        # One GPU: its cells are "<uuid>:<value>;"; utilisation is a fraction in the file.
        utilisation = float(theirs["Avg GPU Utilization"].split(":")[1].rstrip(";"))
        assert float(row["GPU util (%)"]) == pytest.approx(utilisation * 100, abs=0.05)
        power = float(theirs["Avg GPU Power Usage"].split(":")[1].rstrip(";"))
        assert float(row["GPU power (W)"]) == pytest.approx(power, abs=0.05)
        memory = float(theirs["Max GPU Memory Usage"].split(":")[1].rstrip(";"))
        assert float(row["GPU memory (GB)"]) == pytest.approx(memory / 1e9, abs=0.0005)


def test_gpu_cells_of_several_gpus_are_combined(tmp_path):
    source = tmp_path / "two_gpus.csv"
    lines = (PA_DATA / "verbose_gpu_metrics.csv").read_text().splitlines()
    u0, u1 = "GPU-aaaa", "GPU-bbbb"
    row = "1,412.5,21,310,45,18,1980,12,3,2391,2650,2811,3102,2402,24,2378,"
    row += f"{u0}:0.2;{u1}:0.6;,{u0}:50;{u1}:70;,{u0}:1000000000;{u1}:3000000000;,{u0}:16e9;{u1}:16e9;,"
    source.write_text(lines[0] + "\n" + row + "\n")
    frame = load(source).levels["perf_analyzer"]
    assert frame["gpu_utilization_pct"].tolist() == [pytest.approx(40.0)]  # mean over GPUs
    assert frame["gpu_power_w"].tolist() == [pytest.approx(120.0)]  # total power
    assert frame["gpu_memory_used_bytes"].tolist() == [pytest.approx(4e9)]  # total memory


# -- legacy perf_client: one Server Compute column ---------------------------------------------------------
def test_legacy_server_compute_is_kept_and_said(tmp_path):
    source = PA_DATA / "legacy_perf_client.csv"
    data = load(source)
    frame = data.levels["perf_analyzer"]
    theirs = sorted(csv_dicts(source), key=lambda row: float(row["Concurrency"]))
    # The whole compute time stays in the stack (it was dropped: the stack read 1.4 ms at p50 6.2 ms).
    stack = frame[["client_network_us", "queue_us", "compute_total_us"]].sum(axis=1, min_count=1)
    for total, row in zip(stack, theirs, strict=True):
        parts = ("Client Send", "Network+Server Send/Recv", "Server Queue", "Server Compute", "Client Recv")
        assert total == pytest.approx(sum(float(row[name]) for name in parts))
    write_report(source, tmp_path)
    markdown = (tmp_path / "legacy_perf_client.report.md").read_text()
    assert "Server Compute" in markdown and "not split" in markdown
    rows = table_starting(markdown, "concurrency")
    for row, source_row in zip(rows, theirs, strict=True):
        assert float(row["compute (not split) (ms)"]) * 1000 == pytest.approx(float(source_row["Server Compute"]))


# -- decoupled model with the response cache, --percentile (no Avg latency), an extra percentile -----------
def test_decoupled_and_cache_columns_are_read(tmp_path):
    source = PA_DATA / "decoupled_cache.csv"
    frame = load(source).levels["perf_analyzer"]
    theirs = csv_dicts(source)
    assert frame["responses_per_s"].tolist() == [float(row["Response Throughput"]) for row in theirs]
    assert frame["cache_us"].tolist() == [
        float(row["Server Cache Hit"]) + float(row["Server Cache Miss"]) for row in theirs
    ]
    write_report(source, tmp_path)
    markdown = (tmp_path / "decoupled_cache.report.md").read_text()
    rows = table_starting(markdown, "concurrency")
    assert [float(row["responses/s"]) for row in rows] == [float(row["Response Throughput"]) for row in theirs]
    # Nothing in the file is dropped silently: a column the report does not show is named.
    assert "p75 latency" in markdown


def test_csv_without_server_statistics(tmp_path):
    write_report(PA_DATA / "no_server_stats.csv", tmp_path)
    rows = table_starting((tmp_path / "no_server_stats.report.md").read_text(), "request rate (req/s)")
    assert [row["p99 (ms)"] for row in rows] == ["1.310", "1.422"]
    assert "queue (ms)" not in rows[0]


# -- Model Analyzer ------------------------------------------------------------------------------------------
def test_model_analyzer_inference_csv_one_series_per_config(tmp_path):
    source = MA_DATA / "metrics-model-inference.csv"
    data = load(source)
    theirs = csv_dicts(source)
    assert data.kind == "model_analyzer" and data.level_kind == "concurrency"
    assert sorted(data.levels) == ["bert_qa_config_2 (batch 1)", "bert_qa_config_default (batch 1)"]
    for name, frame in data.levels.items():
        config = name.split(" ")[0]
        mine = sorted((r for r in theirs if r["Model Config Path"] == config), key=lambda r: float(r["Concurrency"]))
        assert frame["level"].tolist() == [float(r["Concurrency"]) for r in mine]
        assert frame["infer_per_s"].tolist() == [float(r["Throughput (infer/sec)"]) for r in mine]
        assert frame["p99_us"].tolist() == [pytest.approx(float(r["p99 Latency (ms)"]) * 1000) for r in mine]
        assert frame["mean_us"].tolist() == [pytest.approx(float(r["Avg Latency (ms)"]) * 1000) for r in mine]
        assert frame["queue_us"].tolist() == [pytest.approx(float(r["Server Queue time (ms)"]) * 1000) for r in mine]
    html = write_report(source, tmp_path)
    markdown = html.with_suffix(".md").read_text()
    # The GPU table written beside it is read too, and the server-only baseline.
    gpu = table_starting(markdown, "configuration")
    assert len(gpu) == len(csv_dicts(MA_DATA / "metrics-model-gpu.csv"))
    assert {row["GPU power (W)"] for row in gpu} >= {"211.0", "151.6"}
    assert "871.0" in markdown  # metrics-server-only.csv: Triton's memory with no model load
    assert "No" in markdown  # the configuration that missed its constraints is shown as such


def test_model_analyzer_quoted_lists_and_request_rate(tmp_path):
    data = load(MA_DATA / "request-rate-ensemble.csv")
    assert data.level_kind == "request_rate"
    names = sorted(data.levels)
    assert len(names) == 2, names
    combined = next(frame for name, frame in data.levels.items() if name.startswith("resnet50_config_1,bert_qa"))
    # "421.0, [184.5,236.5]": the combined value first, then each model's.
    assert combined["infer_per_s"].tolist() == [421.0]
    assert combined["p99_us"].tolist() == [pytest.approx(20700.0)]
    write_report(MA_DATA / "request-rate-ensemble.csv", tmp_path)


def test_model_analyzer_gpu_csv_alone(tmp_path):
    html = write_report(MA_DATA / "metrics-model-gpu.csv", tmp_path)
    gpu = table_starting(html.with_suffix(".md").read_text(), "configuration")
    theirs = csv_dicts(MA_DATA / "metrics-model-gpu.csv")
    assert [row["GPU memory (MB)"] for row in gpu] == [row["GPU Memory Usage (MB)"] for row in theirs]


# -- unreadable files: one error line, exit 2 -------------------------------------------------------------
def _corrupt_files(tmp_path: Path) -> list[Path]:
    header = (PA_DATA / "concurrency.csv").read_text().splitlines()[0]
    files = {
        "huge_field.csv": header + '\n1,"' + "9" * 200_000 + '",1,1,1,1,1,1,1,1,1,1,1\n',
        "ragged.csv": header + "\n1,2,3\n",
        "extra_cells.csv": header + "\n1,2,3,4,5,6,7,8,9,10,11,12,13,14\n",
        "header_only.csv": header + "\n",
        "unknown.csv": "Name,Value\na,1\n",
        "ma_ragged.csv": "Model,Batch,Concurrency,Throughput (infer/sec),p99 Latency (ms)\nm,1,2,3\n",
        "ma_words.csv": "Model,Batch,Concurrency,Throughput (infer/sec),p99 Latency (ms)\nm,1,2,fast,1\n",
        "ma_no_level.csv": "Model,Batch,Throughput (infer/sec),p99 Latency (ms)\nm,1,2,3\n",
    }
    paths = []
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 8)
    paths.append(tmp_path / "binary.csv")
    return paths


def test_corrupt_csvs_are_one_error_line_and_exit_2(tmp_path, capsys):
    for source in _corrupt_files(tmp_path):
        assert analysis_main(["report", str(source), "--out", str(tmp_path / "out")]) == 2, source
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert str(source) in err
    assert not (tmp_path / "out").exists()


def test_model_analyzer_inference_gpu_fields_and_unknown_columns(tmp_path):
    source = tmp_path / "metrics-model-inference.csv"
    text = (MA_DATA / "metrics-model-inference.csv").read_text().splitlines()
    text[0] += ",RAM Usage (MB)"  # a field this report has no column for
    source.write_text("\n".join(line.rstrip(",") + ("" if i == 0 else ",512.0") for i, line in enumerate(text)) + "\n")
    data = load(source)
    theirs = csv_dicts(MA_DATA / "metrics-model-inference.csv")
    frame = data.levels["bert_qa_config_2 (batch 1)"]
    mine = [r for r in theirs if r["Model Config Path"] == "bert_qa_config_2"]
    mine.sort(key=lambda r: float(r["Concurrency"]))
    assert frame["gpu_utilization_pct"].tolist() == [float(r["GPU Utilization (%)"]) for r in mine]
    memory = [pytest.approx(float(r["GPU Memory Usage (MB)"]) * 1e6) for r in mine]
    assert frame["gpu_memory_used_bytes"].tolist() == memory
    assert any("RAM Usage (MB)" in note for note in data.notes)


def test_collect_metrics_without_a_gpu_and_a_spreadsheet_byte_order_mark(tmp_path):
    """Without a GPU the four metric cells are empty (seen here: `...,448,45,398,,,,`); a file
    saved again by a spreadsheet starts with a UTF-8 byte-order mark."""
    lines = (PA_DATA / "verbose_gpu_metrics.csv").read_text().splitlines()
    rows = [",".join(line.split(",")[:16] + ["", "", "", ""]) for line in lines[1:]]
    source = tmp_path / "no_gpu.csv"
    source.write_text("\ufeff" + "\n".join([lines[0], *rows]) + "\n", encoding="utf-8")
    frame = load(source).levels["perf_analyzer"]
    assert frame["gpu_utilization_pct"].isna().all() and frame["p99_us"].tolist() == [3102.0, 3388.0, 4902.0]
    write_report(source, tmp_path)
    rows = table_starting((tmp_path / "no_gpu.report.md").read_text(), "concurrency")
    assert "GPU util (%)" not in rows[0]  # not measured: left out, never 0


def test_cli_corrupt_csv_is_one_error_line_and_exit_2(tmp_path):
    """As a user types it: a field larger than the csv module's limit ended in a traceback (exit 1)."""
    source = tmp_path / "huge_field.csv"
    header = (PA_DATA / "concurrency.csv").read_text().splitlines()[0]
    source.write_text(header + '\n1,"' + "9" * 200_000 + '",1,1,1,1,1,1,1,1,1,1,1\n')
    result = run_cli(["-m", "analysis", "report", str(source)])
    assert result.returncode == 2, result.stderr[-500:]
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""


def test_model_analyzer_file_with_some_server_columns_does_not_invent_the_rest(tmp_path):
    # Model Analyzer writes the columns a user asked for: with queue but no compute, compute is
    # unknown (not 0 %), and so is the client/network remainder.
    path = tmp_path / "metrics-model-inference.csv"
    path.write_text(
        "Model,Batch,Concurrency,Model Config Path,Throughput (infer/sec),Avg Latency (ms),Server Queue time (ms)\n"
        "m,1,1,m_config_0,100.0,4.0,1.0\n"
        "m,1,2,m_config_0,180.0,6.0,2.0\n"
        "m,1,4,m_config_0,200.0,10.0,5.0\n"
    )
    from analysis.dataset import load
    from analysis.findings import findings

    data = load(path)
    text = "\n".join(findings(data))
    assert "Server queue time is 50% of the mean latency" in text
    assert "Compute" not in text and "Send/recv + network" not in text, text
