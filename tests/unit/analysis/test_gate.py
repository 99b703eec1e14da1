"""`python -m analysis compare BASELINE CANDIDATE --gate CLAUSES`: a regression gate against a
baseline, noise-aware (analysis/gate.py).

On runs recorded once (tests/recorded_runs.py): `gate/base` and `gate/again`, the same
configuration twice (`sleep`, 20 ms a request, 2 users, 20 s each); a candidate slower by a
known factor is `gate/base` with every latency it holds multiplied (HDR logs, summary.json,
timeseries.csv), so its noise is the baseline's own and only the shift differs.
"""

from __future__ import annotations

import csv
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hdrh.histogram import HdrHistogram

from analysis.__main__ import main as analysis_main
from loadtests.run_format.hdr import new_histogram
from loadtests.run_format.slo.relative import GateError, parse_gate
from tests.recorded_runs import recorded

LATENCY_COLUMNS = ("p50_us", "p90_us", "p95_us", "p99_us", "max_us", "mean_us")


def scale_windows(log: Path, factor_of) -> None:
    """Every latency of the HDR log's window i multiplied by factor_of(i) (counts unchanged)."""
    lines, index = [], 0
    for line in log.read_text().splitlines():
        if line.startswith(("#", '"')) or not line.strip():
            lines.append(line)
            continue
        start, length, _max, encoded = line.split(",")
        histogram, scaled = HdrHistogram.decode(encoded), new_histogram()
        for item in histogram.get_recorded_iterator():
            scaled.record_value(round(item.value_iterated_to * factor_of(index)), item.count_added_in_this_iter_step)
        lines.append(f"{start},{length},{scaled.get_max_value() / 1000:.3f},{scaled.encode().decode('ascii')}")
        index += 1
    log.write_text("\n".join(lines) + "\n")


def slowed(run: Path, factor: float, out: Path) -> Path:
    """A copy of `run` whose every latency is `factor` times as long (counts unchanged)."""
    copy = Path(shutil.copytree(run, out))
    for log in (copy / "hdr").glob("*.hlog"):
        scale_windows(log, lambda _index: factor)
    summary = json.loads((copy / "summary.json").read_text())
    for endpoint in summary["endpoints"]:
        endpoint["latency_us"] = {key: value * factor for key, value in endpoint["latency_us"].items()}
        endpoint["latency_ci_us"] = {
            key: [None if bound is None else bound * factor for bound in bounds]
            for key, bounds in endpoint.get("latency_ci_us", {}).items()
        }
    (copy / "summary.json").write_text(json.dumps(summary))
    with open(copy / "timeseries.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    for row in rows:
        for column in LATENCY_COLUMNS:
            if row.get(column):
                row[column] = f"{float(row[column]) * factor:.3f}"
    with open(copy / "timeseries.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return copy


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate")
    base, again = recorded("gate", "base", root), recorded("gate", "again", root)
    return {
        "base": base,
        "again": again,
        "slower_30": slowed(base, 1.3, root / "slower_30"),
        "slower_3": slowed(base, 1.03, root / "slower_3"),
        "itself": Path(shutil.copytree(base, root / "itself")),
    }


def gate(runs, candidate: str, clauses: str, tmp_path, capsys, junit: bool = False) -> tuple[int, list[str]]:
    args = ["compare", str(runs["base"]), str(runs[candidate]), "--labels", f"base,{candidate}"]
    args += ["--out", str(tmp_path / "out"), "--gate", clauses]
    if junit:
        args += ["--junit", str(tmp_path / "gate.xml")]
    code = analysis_main(args)
    return code, capsys.readouterr().out.strip().splitlines()[1:]


def test_the_same_configuration_twice_passes(runs, tmp_path, capsys):
    code, lines = gate(runs, "again", "p50<+5%,p99<+10%,mean<+10%,throughput>-5%,fail_ratio<+0.5%", tmp_path, capsys)
    assert code == 0, lines
    assert lines[-1] == "Gate: no clause regressed beyond noise (5 checked)"
    assert all(line.endswith(("within noise", "improved")) for line in lines[:-1]), lines


def test_a_model_30_percent_slower_fails_naming_the_clause_with_a_junit_failure(runs, tmp_path, capsys):
    code, lines = gate(runs, "slower_30", "p50<+10%,mean<+10%,fail_ratio<+0.5%", tmp_path, capsys, junit=True)
    assert code == 3, lines
    assert lines[0].startswith("p50<+10% [sleep [http]]: baseline ") and lines[0].endswith(": regressed"), lines
    assert "+30.0 %" in lines[0], lines[0]
    assert lines[2].endswith("within noise")  # failures did not change
    assert lines[-1].startswith("Gate: ") and "regressed (exit code 3)" in lines[-1]
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite.get("tests") == "3" and int(suite.get("failures")) >= 1
    failed = [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None]
    assert "p50<+10%" in failed and "fail_ratio<+0.5%" not in failed
    # The comparison's first screen carries the gate's verdicts.
    markdown = (tmp_path / "out" / "compare.md").read_text()
    assert markdown.index("## Gate") < markdown.index("## Verdict")
    assert lines[0] in markdown


def test_a_3_percent_change_within_a_5_percent_allowance_passes(runs, tmp_path, capsys):
    code, lines = gate(runs, "slower_3", "p50<+5%", tmp_path, capsys)
    assert code == 0, lines
    assert "+3.0 %" in lines[0] and lines[0].endswith("within noise"), lines


def test_the_same_run_is_never_worse_than_itself(runs, tmp_path, capsys):
    code, lines = gate(runs, "itself", "p50<+0%,p99<+0%,mean<+0%,throughput>-0%,fail_ratio<+0%", tmp_path, capsys)
    assert code == 0 and all(line.endswith("within noise") for line in lines[:-1]), lines


@pytest.mark.parametrize(
    ("clauses", "message"),
    [
        ("p99<10ms", "write METRIC OP CHANGE%"),
        ("p77<+10%", "unknown metric 'p77'"),
        ("throughput<+5%", "throughput regresses when lower: write throughput>"),
        ("p99>+5%", "p99 regresses when higher: write p99<"),
        ("p99<+10%,", "empty --gate clause"),
        ("nosuch:p99<+10%", "no endpoint or model 'nosuch' in both runs"),
    ],
)
def test_bad_clauses_are_one_line_and_exit_2(runs, tmp_path, capsys, clauses, message):
    args = ["compare", str(runs["base"]), str(runs["again"]), "--out", str(tmp_path / "out"), "--gate", clauses]
    assert analysis_main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err


def test_the_grammar_reads_targets_and_signed_changes():
    (latency, throughput) = parse_gate("bert_qa [grpc]:p99<=+10%, throughput>-5.5%")
    assert (latency.target, latency.metric, latency.op, latency.change) == ("bert_qa [grpc]", "p99", "<=", 10.0)
    assert (throughput.target, throughput.metric, throughput.change) == (None, "throughput", -5.5)
    with pytest.raises(GateError):
        parse_gate("")


def test_runs_whose_traffic_differs_are_refused(runs, tmp_path, capsys):
    open_loop = Path(shutil.copytree(runs["again"], tmp_path / "open"))
    summary = json.loads((open_loop / "summary.json").read_text())
    summary["traffic"] = {"mode": "constant", "rate": 50.0, "max_in_flight": None, "drop_when_saturated": False}
    (open_loop / "summary.json").write_text(json.dumps(summary))
    args = ["compare", str(runs["base"]), str(open_loop), "--out", str(tmp_path / "x"), "--gate", "p99<+10%"]
    assert analysis_main(args) == 2
    assert "not comparable, traffic differs" in capsys.readouterr().err


@pytest.mark.parametrize("run", ["base", "again"])
def test_the_windows_merged_once_give_summary_jsons_figures(runs, run):
    """The bootstrap resamples the HDR log's windows with the same arithmetic summary.json uses:
    every window taken once gives summary.json's own p50, p90, p99, p99.9 and mean, so the
    intervals are around the figures the gate prints."""
    from analysis.dataset import load
    from analysis.gate import windows_of
    from analysis.series import series_of

    (series,) = series_of(load(runs[run]), run)
    windows = windows_of(series)
    once = windows.counts.sum(axis=0, keepdims=True)
    for metric in ("p50", "p90", "p99", "p99.9", "mean"):
        expected = series.endpoint.latency_us[metric]
        assert windows.statistic(once, metric)[0] == pytest.approx(expected, abs=0.001), metric


def test_a_clause_that_cannot_be_judged_does_not_pass(runs, tmp_path, capsys):
    """A candidate whose time series holds one window has no throughput interval: the clause says
    it cannot be judged, and the gate fails (exit 3) as --slo's inconclusive does."""
    short = Path(shutil.copytree(runs["again"], tmp_path / "short"))
    with open(short / "timeseries.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    with open(short / "timeseries.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerow(rows[len(rows) // 2])
    runs = {**runs, "short": short}
    code, lines = gate(runs, "short", "throughput>-50%", tmp_path, capsys, junit=True)
    assert code == 3, lines
    assert lines[0].endswith("cannot judge (a run lacks this figure or its windows)"), lines
    assert lines[-1] == "Gate: 1 could not be judged (exit code 3)"
    (case,) = ET.parse(tmp_path / "gate.xml").getroot().iter("testcase")
    assert case.find("failure").get("type") == "not judged"


def test_a_perf_analyzer_csv_is_refused_as_a_side_of_the_gate(runs, tmp_path, capsys):
    csv_file = Path(__file__).resolve().parents[2] / "data" / "perf_analyzer" / "concurrency.csv"
    args = ["compare", str(csv_file), str(csv_file), "--labels", "a,b", "--out", str(tmp_path / "o")]
    assert analysis_main([*args, "--gate", "p99<+10%"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --gate judges run directories: ") and "no windows" in err, err


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_a_run_passes_against_itself_over_either_protocol(tmp_path, capsys, protocol):
    base = recorded("compare", protocol, tmp_path / "a")
    again = recorded("compare", protocol, tmp_path / "b")
    args = ["compare", str(base), str(again), "--labels", "a,b", "--out", str(tmp_path / "o")]
    assert analysis_main([*args, "--gate", "p50<+0%,p99<+0%,throughput>-0%,rps>-0%,fail_ratio<+0%"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()[1:]
    assert all(f"[identity [{protocol}]]" in line for line in lines[:-1]), lines


def reorder_windows(log: Path, order: list[int]) -> None:
    """The HDR log's window payloads rearranged: window j gets window order[j]'s (times kept)."""
    lines = log.read_text().splitlines()
    at = [i for i, line in enumerate(lines) if line.strip() and not line.startswith(("#", '"'))]
    payloads = [lines[i].split(",", 2)[2] for i in at]
    for j, i in enumerate(at):
        start, length, _rest = lines[i].split(",", 2)
        lines[i] = f"{start},{length},{payloads[order[j]]}"
    log.write_text("\n".join(lines) + "\n")


def test_windows_slowed_together_widen_the_interval_the_same_windows_apart_do_not(runs, tmp_path):
    """A host that stalls for several seconds slows consecutive windows: drawn one by one, the
    windows look independent and the interval is too narrow (the same build once failed its p99
    clause against itself at 80 s). gate/base with five consecutive windows slowed 3x, then the
    very same windows in another order that puts neighbours far apart (window j <- 5 j mod n):
    in a row they are resampled in blocks and the intervals widen; apart they are independent
    (block 1), so the interval is the one-by-one bootstrap's, which is blind to the order."""
    from analysis.dataset import load
    from analysis.gate import dependence_block, measure, windows_of
    from analysis.series import series_of

    def side(name: str, order=None):
        copy = Path(shutil.copytree(runs["base"], tmp_path / name))
        for log in (copy / "hdr").glob("*.hlog"):
            scale_windows(log, lambda index: 3.0 if 8 <= index < 13 else 1.0)
            if order is not None:
                reorder_windows(log, order)
        (series,) = series_of(load(copy), name)
        windows = windows_of(series)
        block = dependence_block(windows.statistic(windows.counts, "mean"))
        return block, {metric: measure(series, metric)[1] for metric in ("p50", "p90", "p99", "mean")}

    count = len(windows_of(series_of(load(runs["base"]), "base")[0]).counts)
    assert count % 5, count  # 5 j mod n visits every window once
    together_block, together = side("together")
    apart_block, apart = side("apart", [5 * j % count for j in range(count)])
    assert together_block >= 2 and apart_block == 1, (together_block, apart_block)
    width = {
        metric: (together[metric][1] - together[metric][0]) / (apart[metric][1] - apart[metric][0])
        for metric in together
    }
    # The median moves most: a block of slowed windows drawn together shifts it into their range
    # (recorded: p50 x7, p90 x1.1, mean x1.1; p99 is set by gate/base's own one-second stall).
    assert width["p50"] >= 2, width
    assert all(ratio >= 0.9 for ratio in width.values()), width


def test_throughputs_slowed_together_widen_its_interval_the_same_windows_apart_do_not(runs, tmp_path):
    """Throughput's side of the same: gate/base's windows with five consecutive ones at a third of
    their rate, then the same rates in the order 5 j mod n. Together: blocks, a wider interval of
    the mean rate than the t interval the windows give one by one; apart: that t interval."""
    from analysis import noise
    from analysis.dataset import load
    from analysis.gate import dependence_block, measure
    from analysis.series import series_of

    def side(name: str, reorder: bool):
        copy = Path(shutil.copytree(runs["base"], tmp_path / name))
        with open(copy / "timeseries.csv", newline="") as file:
            rows = list(csv.DictReader(file))
        full = [i for i, row in enumerate(rows) if float(row.get("covered_s") or 1) >= 0.99]
        for position, i in enumerate(full):
            if 8 <= position < 13:
                rows[i]["inferences"] = str(int(rows[i]["inferences"]) // 3)
        if reorder:
            assert len(full) % 5, len(full)  # 5 j mod n visits every window once
            values = [rows[i]["inferences"] for i in full]
            for j, i in enumerate(full):
                rows[i]["inferences"] = values[5 * j % len(full)]
        with open(copy / "timeseries.csv", "w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        (series,) = series_of(load(copy), name)
        rates = noise.full_window_rates(series.timeseries, series.window_s)
        return dependence_block(rates.to_numpy()), noise.mean_interval(rates), measure(series, "throughput")[1]

    together_block, together_t, together = side("together", reorder=False)
    apart_block, apart_t, apart = side("apart", reorder=True)
    assert together_block >= 2 and apart_block == 1, (together_block, apart_block)
    assert apart == apart_t  # independent windows: the t interval as before
    assert together[0] <= together_t[0] and together[1] >= together_t[1]
    assert together[1] - together[0] >= 1.1 * (together_t[1] - together_t[0]), (together, together_t)
