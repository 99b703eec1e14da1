"""`python -m analysis report`: reports built from real runs against the local Triton, and
from perf_analyzer -f CSVs. Every figure checked against the file it came from."""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from analysis import plots
from analysis.__main__ import main as analysis_main
from analysis.report import write_report
from tests.helpers import REPO_ROOT, run_cli

PA_DATA = REPO_ROOT / "tests" / "data" / "perf_analyzer"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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
        "bad = [m for m in ('locust', 'gevent') if m in sys.modules];"
        # The run-directory format is the one part of the load test the analysis reads (issue 13).
        "bad += [m for m in sys.modules if m.startswith('loadtests.')"
        " and not m.startswith(('loadtests.run_format', 'loadtests.errors'))]; assert not bad, bad"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=False).returncode == 0
    result = run_cli(["-m", "analysis", "report", str(PA_DATA / "request_rate.csv"), "--out", str(tmp_path)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tmp_path / "request_rate.report.html")


def test_one_meaning_per_colour():
    """Percentiles, the parts of a request, endpoints and the load never share a colour."""
    percentiles = set(plots.PERCENTILE_COLOURS.values())
    parts = {colour for _, _, colour in plots.COMPONENTS}
    endpoints, devices = set(plots.ENDPOINT_COLOURS), set(plots.DEVICE_COLOURS)
    assert len(parts) == len(plots.COMPONENTS) and len(percentiles) == len(plots.PERCENTILE_COLOURS)
    families = [percentiles, parts, endpoints, devices, {plots.LOAD_COLOUR}]
    for i, one in enumerate(families):
        for other in families[i + 1 :]:
            assert not one & other, (one, other)
    # The same endpoint has the same colour in every chart: chosen by its model's name.
    assert plots.endpoint_colour("bert_qa [http]") == plots.endpoint_colour("bert_qa")
