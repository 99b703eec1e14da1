"""`python -m analysis compare`: real runs side by side, recorded once against the local Triton
(tests/recorded_runs.py, group `compare`), so each verdict is judged on known numbers."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from analysis.__main__ import main as analysis_main
from analysis.compare import NotComparableError, write_comparison
from tests.helpers import REPO_ROOT, read_summary, run_cli
from tests.recorded_runs import recorded
from tests.unit.analysis.test_report import markdown_table

PA_DATA = REPO_ROOT / "tests" / "data" / "perf_analyzer"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    """identity over HTTP, then over gRPC: 2 users, 5 s each (4 full 1-s windows for throughput's interval)."""
    root = tmp_path_factory.mktemp("compare")
    return recorded("compare", "http", root), recorded("compare", "grpc", root)


def figure_cells(markdown: str, nth: int = 0) -> dict[str, list[str]]:
    headers, rows = markdown_table(markdown, "figure", nth)
    return {row[0]: row[1:] for row in rows} | {"__headers__": headers}


def test_two_runs_side_by_side_with_difference_and_ratio(two_runs, tmp_path, capsys):
    http_run, grpc_run = two_runs
    out = tmp_path / "cmp"
    assert analysis_main(["compare", str(http_run), str(grpc_run), "--labels", "HTTP,gRPC", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out / "compare.html")
    markdown = (out / "compare.md").read_text()
    assert "Endpoints matched by position" in markdown  # identity [http] against identity [grpc]
    cells = figure_cells(markdown)
    assert cells["__headers__"] == ["figure", "HTTP", "gRPC", "gRPC - HTTP", "gRPC / HTTP", "gRPC vs HTTP"]
    a, b = read_summary(http_run)["endpoints"][0], read_summary(grpc_run)["endpoints"][0]
    assert cells["requests"] == [str(a["requests"]), str(b["requests"]), f"{b['requests'] - a['requests']:+d}",
                                 f"{b['requests'] / a['requests']:.3f}x", ""]  # fmt: skip
    for key in ("p50", "p99", "mean"):
        shown_a, shown_b, difference, ratio, _ = cells[f"{key} (ms)"]
        assert float(shown_a) == pytest.approx(a["latency_us"][key] / 1000, abs=0.0005)
        assert float(shown_b) == pytest.approx(b["latency_us"][key] / 1000, abs=0.0005)
        assert float(difference) == pytest.approx((b["latency_us"][key] - a["latency_us"][key]) / 1000, abs=0.0005)
        assert float(ratio.rstrip("x")) == pytest.approx(b["latency_us"][key] / a["latency_us"][key], abs=0.0005)
    assert float(cells["infer/s"][3].rstrip("x")) == pytest.approx(
        b["throughput_infer_per_s"] / a["throughput_infer_per_s"], abs=0.0005
    )
    html = (out / "compare.html").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert "compare_1_components.png" in links and "compare_1_over_time.png" in links
    assert html.count('src="data:image/png;base64,') == len(links)
    assert all((out / link).exists() for link in links)


def test_same_endpoints_match_by_model_and_protocol(two_runs, tmp_path):
    http_run, _ = two_runs
    copy = Path(shutil.copytree(http_run, tmp_path / "again"))
    html = write_comparison([http_run, copy], ["first", "again"], tmp_path / "out")
    markdown = html.with_suffix(".md").read_text()
    assert "Endpoints matched by model and protocol." in markdown
    cells = figure_cells(markdown)
    assert cells["p99 (ms)"][2:] == ["+0.000", "1.000x", "no difference beyond noise"]
    assert cells["requests"][2:] == ["+0", "1.000x", ""]


def test_closed_against_open_loop_is_refused_unless_forced(two_runs, tmp_path, capsys):
    http_run, _ = two_runs
    open_loop = Path(shutil.copytree(http_run, tmp_path / "open"))
    summary = read_summary(open_loop)
    summary["traffic"] = {"mode": "constant", "rate": 50.0, "max_in_flight": None, "drop_when_saturated": False}
    (open_loop / "summary.json").write_text(json.dumps(summary))
    args = ["compare", str(http_run), str(open_loop), "--labels", "closed,open", "--out", str(tmp_path / "x")]
    assert analysis_main(args) == 2
    err = capsys.readouterr().err
    assert err == "error: runs are not comparable, traffic differs (closed: closed loop, open: open loop); " \
                  "--force compares anyway\n"  # fmt: skip
    assert not (tmp_path / "x").exists()
    assert analysis_main([*args, "--force"]) == 0
    assert "Compared with --force although traffic differs" in (tmp_path / "x" / "compare.md").read_text()
    with pytest.raises(NotComparableError, match="sweep mode differs"):
        write_comparison([http_run, PA_DATA / "concurrency.csv"], ["run", "pa"], tmp_path / "y")


def test_perf_analyzer_csvs_compare_level_by_level(tmp_path):
    result = run_cli(
        ["-m", "analysis", "compare", str(PA_DATA / "concurrency.csv"), str(PA_DATA / "concurrency_verbose.csv"),
         "--labels", "plain,verbose", "--out", str(tmp_path)]
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    headers, rows = markdown_table((tmp_path / "compare.md").read_text(), "#")
    assert [row[1] for row in rows] == ["1", "2", "3", "4"]
    # The ratios come from the two CSVs' own cells, level by level (matched by position).
    levels = {}
    for label, name in (("plain", "concurrency.csv"), ("verbose", "concurrency_verbose.csv")):
        with open(PA_DATA / name, newline="") as file:
            levels[label] = {row["Concurrency"]: row for row in csv.DictReader(file)}
    for row in rows:
        cells = dict(zip(headers, row, strict=True))
        plain, verbose = levels["plain"][cells["plain level"]], levels["verbose"][cells["verbose level"]]
        for column, title in (("Inferences/Second", "infer/s"), ("p99 latency", "p99")):
            expected = float(verbose[column]) / float(plain[column])
            assert cells[f"verbose / plain {title}"] == f"{expected:.3f}x", (row, column)
    assert (tmp_path / "compare_1_latency_vs_throughput.png").exists()


def test_wrong_labels_and_single_run_are_bad_input(two_runs, capsys):
    http_run, grpc_run = two_runs
    assert analysis_main(["compare", str(http_run), str(grpc_run), "--labels", "only-one"]) == 2
    assert "--labels needs 2 distinct names" in capsys.readouterr().err
    assert analysis_main(["compare", str(http_run)]) == 2
    assert capsys.readouterr().err == "error: compare needs at least two runs\n"


# -- noise: is a difference beyond the confidence intervals? -------------------------------------------------
VERDICTS = ("faster", "no difference beyond noise", "slower")


@pytest.fixture(scope="module")
def sleep_run(tmp_path_factory) -> Path:
    """`sleep` (20 ms per request) over HTTP, 2 users, 5 s: far slower than `identity`."""
    return recorded("compare", "sleep", tmp_path_factory.mktemp("compare"))


def latency_verdict(base: list, other: list) -> str:
    """The rule, from summary.json's 95 % intervals: apart means a verdict, overlapping means noise.
    A bound too few requests give (None) is open."""
    base = [base[0] or 0.0, math.inf if base[1] is None else base[1]]
    other = [other[0] or 0.0, math.inf if other[1] is None else other[1]]
    if other[1] < base[0]:
        return "faster"
    return "slower" if other[0] > base[1] else "no difference beyond noise"


def section(markdown: str, heading: str) -> str:
    return markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def test_every_latency_ratio_says_whether_it_is_beyond_the_intervals(two_runs, tmp_path):
    http_run, grpc_run = two_runs
    markdown = write_comparison([http_run, grpc_run], ["HTTP", "gRPC"], tmp_path / "out").with_suffix(".md").read_text()
    cells = figure_cells(markdown)
    assert cells["__headers__"][-1] == "gRPC vs HTTP"
    a, b = read_summary(http_run)["endpoints"][0], read_summary(grpc_run)["endpoints"][0]
    for key in ("p50", "p90", "p95", "p99"):
        expected = latency_verdict(a["latency_ci_us"][key], b["latency_ci_us"][key])
        assert cells[f"{key} (ms)"][-1] == expected, (key, a["latency_ci_us"][key], b["latency_ci_us"][key])
    assert cells["infer/s"][-1] in VERDICTS
    assert cells["requests"][-1] == ""  # a count is not a speed


def test_a_run_against_itself_is_no_difference_beyond_noise(two_runs, tmp_path):
    http_run, _ = two_runs
    copy = Path(shutil.copytree(http_run, tmp_path / "again"))
    markdown = write_comparison([http_run, copy], ["first", "again"], tmp_path / "out").with_suffix(".md").read_text()
    cells = figure_cells(markdown)
    for figure in ("infer/s", "p50 (ms)", "p99 (ms)"):
        assert cells[figure][-1] == "no difference beyond noise", figure
    # The first screen: the verdict comes before any table.
    assert markdown.split("\n## ", 2)[1].startswith("Verdict\n")
    assert "no difference beyond noise" in section(markdown, "Verdict")
    assert "wins against" not in section(markdown, "Verdict")


def test_a_slower_model_is_slower_beyond_noise_and_the_first_screen_names_the_winner(two_runs, sleep_run, tmp_path):
    http_run, _ = two_runs
    markdown = (
        write_comparison([http_run, sleep_run], ["identity", "sleep"], tmp_path / "out").with_suffix(".md").read_text()
    )
    cells = figure_cells(markdown)
    a, b = read_summary(http_run)["endpoints"][0], read_summary(sleep_run)["endpoints"][0]
    for key in ("p50", "p99"):
        assert latency_verdict(a["latency_ci_us"][key], b["latency_ci_us"][key]) == "slower"
        assert cells[f"{key} (ms)"][-1] == "slower"
    assert cells["infer/s"][-1] == "slower"
    verdict = section(markdown, "Verdict")
    ratio = a["throughput_infer_per_s"] / b["throughput_infer_per_s"]
    assert f"identity [http] wins against sleep [http]: {ratio:.2f}x the throughput" in verdict
