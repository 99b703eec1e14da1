"""Sweeps: range parsing, perf_analyzer's stability rule and the level controller with fake
windows, the sweep files, the CLI's input errors, and sweeps against the local Triton."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest

from loadtests.__main__ import main
from loadtests.commands.sweep import choose_user_classes, parse_range
from loadtests.errors import SpecError
from loadtests.recording import sweep_files
from loadtests.recording.histograms import EndpointStats
from loadtests.traffic.stability import is_stable, over_latency_limit
from loadtests.traffic.sweep_args import parse_sweep_args
from loadtests.traffic.sweep_levels import SweepController
from loadtests.traffic.table import parse_shape_args
from loadtests.triton_stats.statistics import ModelDelta
from tests.helpers import read_summary, request_outcome, run_cli, triton_options

# Compares what the host achieves with a truth: tests/shards.py runs this file in the measuring shard.
pytestmark = pytest.mark.measures

PA_HEADER = (
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,"
    "Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"
)


# -- ranges and shape args ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "integer", "levels"),
    [
        ("1:8:1", True, [1, 2, 3, 4, 5, 6, 7, 8]),
        ("1:8:3", True, [1, 4, 7]),
        ("4", True, [4]),
        ("2:4", True, [2, 3, 4]),
        ("100:300:100", False, [100.0, 200.0, 300.0]),
        ("0.5:1.5:0.25", False, [0.5, 0.75, 1.0, 1.25, 1.5]),
    ],
)
def test_parse_range(text, integer, levels):
    assert parse_range(text, "--x", integer) == levels


@pytest.mark.parametrize(
    ("text", "integer", "problem"),
    [
        ("", True, "is not START:END:STEP"),
        ("1:2:3:4", True, "is not START:END:STEP"),
        ("1::2", True, "is not START:END:STEP"),
        ("a:b", True, "must be whole numbers"),
        ("1.5:3", True, "must be whole numbers"),
        ("0:4", True, "START must be at least 1"),
        ("0:10:5", False, "START must be positive"),
        ("5:1", True, "END must not be below START"),
        ("1:5:0", True, "STEP must be positive"),
        ("1:5:-1", True, "STEP must be positive"),
        ("1:inf", False, "must be finite"),
        ("1:5000:1", True, "more than 1000"),
    ],
)
def test_bad_ranges_are_one_line_errors(text, integer, problem):
    with pytest.raises(SpecError) as error:
        parse_range(text, "--concurrency", integer)
    assert problem in str(error.value) and str(error.value).startswith(f"--concurrency {text!r}")
    assert "\n" not in str(error.value)


def test_sweep_shape_args():
    assert parse_sweep_args("levels=1;2,stability=5,max_trials=4,latency_limit_ms=50,settle=0") == {
        "levels": [1.0, 2.0],
        "stability": 5.0,
        "max_trials": 4,
        "latency_limit_ms": 50.0,
        "settle": 0,
        "kind": "users",
    }
    assert parse_sweep_args("levels=10;20,kind=rate,users=3")["users"] == 3
    assert parse_shape_args("sweep", "levels=1") == parse_sweep_args("levels=1")  # via --load-shape
    for text, problem in [
        ("", "missing levels="),
        ("levels=1;x", "must be positive numbers"),
        ("levels=1,max_trials=2", "max_trials='2' must be at least 3"),
        ("levels=1,stability=-1", "must be a percentage >= 0"),
        ("levels=1.5", "user counts must be whole numbers"),
        ("levels=1,users=2", "users= applies to kind=rate only"),
        ("levels=1,colour=red", "unknown key 'colour'"),
    ]:
        with pytest.raises(SpecError, match=r"^--shape-args for sweep: ") as error:
            parse_sweep_args(text)
        assert problem in str(error.value)


# -- the stability rule ---------------------------------------------------------------------------
def test_stability_is_perf_analyzers_rule():
    # max/min <= 1 + 10 % over the last 3 windows, throughput and p95 each.
    assert is_stable([100, 105, 110], [1000, 1050, 1100], 10)
    assert not is_stable([100, 105, 111], [1000, 1050, 1100], 10)
    assert not is_stable([100, 105, 110], [1000, 1050, 1101], 10)
    assert not is_stable([100, 100], [1000, 1000], 10)  # fewer than 3 windows
    assert is_stable([5, 300, 100, 101, 102], [9, 9000, 1000, 1000, 1000], 10)  # only the last 3 count
    assert not is_stable([0, 0, 0], [0, 0, 0], 10)  # windows without inferences are never stable
    assert is_stable([100, 125, 110], [1000, 1200, 1100], 25)
    assert over_latency_limit([10, 50, 10], 50)  # at or over, once 3 windows exist
    assert not over_latency_limit([50, 50], 50)
    assert not over_latency_limit([10, 49, 10], 50)
    assert not over_latency_limit([99, 99, 99], 0)  # 0: no limit


# -- the controller with fake windows ------------------------------------------------------------
def window(requests: int, latency_us: float, model: str = "m") -> dict[str, EndpointStats]:
    stats = EndpointStats(f"{model} [http]", model, "http")
    for _ in range(requests):
        stats.record(request_outcome(latency_us, 1, None))
    return {stats.name: stats}


def test_controller_discards_the_straddling_and_settling_windows_then_stabilises():
    spans = []

    def server_delta(t0, t1):
        spans.append((t0, t1))
        return {"m": ModelDelta(requests=300, compute_infer_us=20000.0)}

    controller = SweepController(levels=[1, 2], settle=1, server_delta=server_delta)
    assert controller.pending and controller.level == 1
    assert controller.on_window(99.0, 1.0, window(50, 20000)) is None  # before the level started
    controller.start_level(now=100.3, window_s=1.0)
    assert not controller.pending
    # 100: straddles the change, 101: settling; trials from 102.
    assert controller.on_window(100.0, 1.0, window(10, 90000)) is None
    assert controller.on_window(101.0, 1.0, window(10, 90000)) is None
    assert controller.trials == []
    assert controller.on_window(102.0, 1.0, window(50, 20000)) is None
    assert controller.on_window(103.0, 1.0, window(52, 20500)) is None
    result = controller.on_window(104.0, 1.0, window(51, 20200))
    assert result is not None and result.stable and result.windows == 3
    assert (result.start_s, result.end_s) == (102.0, 105.0)
    assert spans == [(102.0, 105.0)]  # server numbers over exactly the same span
    assert result.stats.requests == 153
    assert result.throughput_infer_per_s == pytest.approx(51)
    assert controller.level == 2 and controller.pending and not controller.done
    # A change just before a boundary: the spawn allowance skips the next window too.
    controller.start_level(now=109.8, window_s=1.0)
    assert controller.usable_from == 112.0
    level_json = result.to_json(relative_to=100.0)
    assert level_json["start_s"] == 2.0 and level_json["end_s"] == 5.0 and level_json["level"] == 1
    assert level_json["server"]["m"]["compute_infer_us"] == 20000.0


def test_controller_marks_unstable_after_max_trials_and_goes_on():
    controller = SweepController(levels=[1, 2], max_trials=4, settle=0)
    controller.start_level(now=0.0, window_s=1.0)  # trials from the window at 1 s
    for i, requests in enumerate([10, 30, 60, 90]):
        result = controller.on_window(1.0 + i, 1.0, window(requests, 1000))
    assert result is not None and not result.stable and result.windows == 4
    assert result.stats.requests == 30 + 60 + 90  # the last 3 windows
    assert not controller.done and controller.level == 2


def test_windows_without_completions_are_trials_too():
    # Nothing completed in the windows at 2 s and 3 s (requests slower than a window): they
    # are never closed, yet count as trials with no inferences, so the level ends at max_trials.
    controller = SweepController(levels=[1, 2], max_trials=4, settle=0)
    controller.start_level(now=0.0, window_s=1.0)
    assert controller.on_window(1.0, 1.0, window(50, 1000)) is None
    result = controller.on_window(4.0, 1.0, window(50, 1000))
    assert result is not None and not result.stable and result.windows == 4
    assert [trial.stats.requests for trial in controller.trials] == [50, 0, 0, 50]
    assert result.throughput_infer_per_s == pytest.approx(50 / 3)  # the last 3 windows, one of them empty


def test_controller_stops_the_sweep_at_the_latency_limit():
    controller = SweepController(levels=[1, 2, 3], latency_limit_ms=25, settle=0)
    controller.start_level(now=0.0, window_s=1.0)
    results = [controller.on_window(1.0 + i, 1.0, window(50, us)) for i, us in enumerate([10000, 30000, 10000])]
    assert results[:2] == [None, None]
    assert results[2].over_latency_limit and not results[2].stable
    assert controller.done and controller.stopped_by == "latency_limit"
    assert controller.on_window(5.0, 1.0, window(50, 1000)) is None  # over: nothing more


def test_controller_finishes_with_done():
    controller = SweepController(levels=[3], settle=0)
    controller.start_level(now=0.0, window_s=1.0)
    for i in range(3):
        controller.on_window(1.0 + i, 1.0, window(40, 5000))
    assert controller.stopped_by == "done" and controller.level is None and not controller.pending


# -- the files --------------------------------------------------------------------------------------
LEVEL = {
    "level": 2,
    "stable": True,
    "windows": 3,
    "start_s": 1.0,
    "end_s": 4.0,
    "requests": 300,
    "failures": 0,
    "throughput_rps": 100.0,
    "throughput_infer_per_s": 241.5678,
    "latency_us": {
        "p50": 4000.0,
        "p90": 4500.0,
        "p95": 4321.9,
        "p99": 5000.0,
        "p99.9": 6000.0,
        "max": 7000.0,
        "mean": 4100.6,
    },
    "server": {
        "m": {
            "requests": 300,
            "queue_us": 100.7,
            "compute_input_us": 10.2,
            "compute_infer_us": 3000.9,
            "compute_output_us": 20.1,
            "request_us": 3140.0,
        }
    },
}


def test_csv_row_and_console_table_match_perf_analyzer():
    # Client Send and Client Recv are empty; the rest of the mean is Network+Server Send/Recv.
    assert sweep_files.csv_row(LEVEL, "concurrency", "m") == [
        "2",
        "241.568",
        "",
        "968",  # 4100.6 - (100.7 + 10.2 + 3000.9 + 20.1) = 968.7, floored
        "100",
        "10",
        "3000",
        "20",
        "",
        "4000",
        "4500",
        "4321",
        "5000",
    ]
    no_server = {**LEVEL, "server": {}}
    assert sweep_files.csv_row(no_server, "concurrency", "m")[3:8] == [""] * 5
    content = {"mode": "request_rate", "model": "m", "levels": [{**LEVEL, "level": 12.5}, {**LEVEL, "stable": False}]}
    assert sweep_files.console_table(content).splitlines() == [
        "Inferences/Second vs. Client p95 Batch Latency",
        "Request Rate: 12.5, throughput: 241.568 infer/sec, latency 4321 usec",
        "Request Rate: 2, throughput: 241.568 infer/sec, latency 4321 usec (unstable)",
    ]


def test_write_csv_header(tmp_path):
    sweep_files.write_csv(tmp_path / "sweep.csv", {"mode": "concurrency", "model": "m", "levels": [LEVEL]})
    lines = (tmp_path / "sweep.csv").read_text().splitlines()
    assert lines[0] == PA_HEADER
    sweep_files.write_csv(tmp_path / "rate.csv", {"mode": "request_rate", "model": "m", "levels": []})
    assert (tmp_path / "rate.csv").read_text().splitlines()[0] == PA_HEADER.replace("Concurrency", "Request Rate", 1)


# -- the command line -----------------------------------------------------------------------------
def test_user_class_choice():
    assert choose_user_classes("bert_qa_dynbatch", None, "") == ["BertQAHttpUser"]
    assert choose_user_classes("resnet50", "grpc", "") == ["ResNetGrpcUser"]
    assert choose_user_classes("sleep", "grpc", "") == ["TritonGrpcUser"]
    assert choose_user_classes("sleep", "both", "") == ["TritonHttpUser", "TritonGrpcUser"]
    assert choose_user_classes("", "both", "") == ["TritonHttpUser", "TritonGrpcUser"]  # a mix
    assert choose_user_classes("my_bert", "http", "BertQAHttpUser") == ["BertQAHttpUser"]
    for protocol in ("grpc", "both"):
        with pytest.raises(SpecError, match="contradicts"):
            choose_user_classes("m", protocol, "BertQAHttpUser")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--model", "m"], "give exactly one of --concurrency"),
        (["--model", "m", "--concurrency", "1:2", "--request-rate", "5"], "give exactly one of --concurrency"),
        (["--model", "m", "--concurrency", "1-4"], "--concurrency '1-4': START, END and STEP must be whole numbers"),
        (["--concurrency", "1:2"], "--model NAME (or --mix SPEC) is required"),
        (["--model", "m", "--mix", "a:1,b:1", "--concurrency", "1:2"], "give one of --model NAME and --mix SPEC"),
        (["--mix", "a:1,b:0", "--concurrency", "1:2"], "the weight of 'b' must be a number > 0"),
        (["--mix", "no_such_mix.yaml", "--concurrency", "1:2"], "cannot read the mix file"),
        (["--model", "m", "--concurrency", "1:2", "--max-trials", "2"], "--max-trials must be at least 3"),
        (["--model", "m", "--concurrency", "1:2", "--user-class", "X"], "--user-class 'X' is not one of"),
        (["--model", "m", "--concurrency", "1:2", "--traffic", "poisson"], "--traffic applies to --request-rate"),
        (["--model", "m", "--concurrency", "1:4", "--protocol", "both"], "at least one user per protocol"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, problem):
    assert main(["sweep", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and problem in err and err.count("\n") == 1


def test_argparse_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--model", "m", "--concurrency", "1:2", "--workers", "two"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --workers") and err.count("\n") == 1


# -- against the local Triton -----------------------------------------------------------------------


def sweep(triton, run_dir: Path, *extra: str, timeout: float = 150):
    return run_cli(
        # --shape is not a sweep option: it goes to Locust as given (the pass-through).
        ["-m", "loadtests", "sweep", "--model", "sleep", "--shape", "INPUT0:16", "--run-dir", str(run_dir)]
        + [*triton_options(triton), *extra],
        timeout=timeout,
    )


@pytest.mark.refusal
def test_unknown_model_and_unreachable_server_exit_2_before_any_load(triton, tmp_path):
    result = sweep(triton, tmp_path / "nope", "--concurrency", "1:2", "--model", "no_such_model")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "error: " in result.stderr and "no_such_model" in result.stderr
    assert not (tmp_path / "nope").exists()
    unreachable = ["--triton-http", "127.0.0.1:9", "--triton-grpc", "127.0.0.1:9"]
    result = sweep(triton, tmp_path / "down", "--concurrency", "1:2", *unreachable)
    assert result.returncode == 2, result.stderr[-2000:]
    assert not (tmp_path / "down").exists()


def test_concurrency_sweep_against_triton(triton, tmp_path):
    # `sleep`: 20 ms per request on 8 instances, so N users reach about N * 50 requests/s.
    run_dir = tmp_path / "sweep"
    # The sweep's mechanics, not this host's steadiness (as the rate sweep below): with the default
    # 10 %, 1-s windows of about 50 requests at one user were once "unstable" beside the other
    # shard's image-decoding tests (exit code 5). An unstable level's exit code has its own test.
    steadiness = ["--stability-percentage", "50", "--max-trials", "8"]
    result = sweep(triton, run_dir, "--concurrency", "1:3:1", "--measurement-interval", "1000", *steadiness)
    assert result.returncode == 0, result.stderr[-3000:]
    table = result.stdout[result.stdout.index("Inferences/Second vs. Client p95 Batch Latency") :].splitlines()
    assert [line.split(",")[0] for line in table[1:4]] == ["Concurrency: 1", "Concurrency: 2", "Concurrency: 3"]

    content = json.loads((run_dir / "sweep.json").read_text())
    assert content["mode"] == "concurrency" and content["stopped_by"] == "done"
    levels = content["levels"]
    assert [level["level"] for level in levels] == [1, 2, 3]
    for n, level in enumerate(levels, start=1):
        # Closed loop: N users, each waiting for its answer, send N / latency requests per second
        # (about 50 N when the shared 2-core machine is quiet; Little's law whatever its load).
        assert level["throughput_rps"] == pytest.approx(n / (level["latency_us"]["mean"] / 1e6), rel=0.2), levels
        assert 20000 <= level["latency_us"]["p50"] <= 40000, level
        assert level["failures"] == 0
        # Triton's count over the same windows: the requests the client completed in them.
        server = level["server"]["sleep"]
        assert server["requests"] == pytest.approx(level["requests"], abs=max(3, 0.05 * level["requests"]))
        assert server["compute_infer_us"] == pytest.approx(20000, rel=0.15)
        assert 0 <= level["start_s"] < level["end_s"]
    assert all(a["end_s"] <= b["start_s"] for a, b in itertools.pairwise(levels))
    throughputs = [level["throughput_infer_per_s"] for level in levels]
    assert throughputs[1] > 1.4 * throughputs[0] and throughputs[2] > 1.1 * throughputs[1], levels

    with (run_dir / "sweep.csv").open() as file:
        lines = file.read().splitlines()
    assert lines[0] == PA_HEADER
    rows = list(csv.DictReader(lines))
    assert [row["Concurrency"] for row in rows] == ["1", "2", "3"]  # level order
    assert all(row["Client Send"] == "" and row["Client Recv"] == "" for row in rows)
    summary = read_summary(run_dir)["server"]["sleep"]
    for row, level in zip(rows, levels, strict=True):
        assert float(row["Inferences/Second"]) == pytest.approx(level["throughput_infer_per_s"], rel=1e-3)
        assert int(row["p95 latency"]) == int(level["latency_us"]["p95"])
        # The same per-request server numbers as summary.json's, over the level's windows.
        assert int(row["Server Compute Infer"]) == pytest.approx(summary["compute_infer_us"], rel=0.1)
        # Triton's time per request, over the level's windows, fits inside what the client measured
        # (a server delta over the wrong span would not); the rest is the network column.
        in_server = sum(int(row[key]) for key in ("Server Queue", "Server Compute Input", "Server Compute Infer"))
        in_server += int(row["Server Compute Output"])
        assert 0 < in_server <= level["latency_us"]["mean"], (row, level)
    steps = json.loads((run_dir / "steps.json").read_text())
    assert [step["target"] for step in steps["steps"]] == [1, 2, 3]


def test_sweep_with_distributed_workers(triton, tmp_path):
    run_dir = tmp_path / "workers"
    steadiness = ["--stability-percentage", "50", "--max-trials", "8"]  # the workers, not the host's steadiness
    result = sweep(
        triton, run_dir, "--concurrency", "1:2:1", "--measurement-interval", "1000", "--workers", "2", *steadiness,
        timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    levels = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert [level["level"] for level in levels] == [1, 2]
    assert levels[1]["throughput_infer_per_s"] > 1.4 * levels[0]["throughput_infer_per_s"], levels
    assert levels[0]["server"]["sleep"]["requests"] == pytest.approx(levels[0]["requests"], rel=0.05)


def test_a_sweep_over_a_mix_judges_the_mix_as_one_load(triton, tmp_path):
    """--mix instead of --model: each level holds the mix's users, each request drawn by weight;
    a level's numbers are the whole mix, and Triton's counts per model add up to them."""
    run_dir = tmp_path / "mix"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--mix", "sleep:0.5,identity:0.5", "--shape", "INPUT0:16"]
        + ["--concurrency", "2:4:2", "--measurement-interval", "1000", "--run-dir", str(run_dir)]
        # What is checked here is the mix's accounting, not its stability: each request draws
        # 20 ms or 0.5 ms, and on a busy host 1-s windows at 4 users once stayed more than 10 %
        # apart for every trial (exit 5).
        + ["--stability-percentage", "25"]
        + triton_options(triton),
        timeout=150,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    levels = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert [level["level"] for level in levels] == [2, 4]
    for level in levels:
        served = {model: level["server"][model]["requests"] for model in ("sleep", "identity")}
        assert sum(served.values()) == pytest.approx(level["requests"], abs=max(4, 0.05 * level["requests"]))
        # Both models in every level, about half each (binomial: 4 standard deviations).
        spread = 4 * (0.25 / level["requests"]) ** 0.5
        assert abs(served["sleep"] / sum(served.values()) - 0.5) <= spread + 0.02, served
    # Closed loop: twice the users, about twice the mix's throughput (half its requests wait 20 ms).
    assert levels[1]["throughput_rps"] > 1.4 * levels[0]["throughput_rps"], levels
    summary = read_summary(run_dir)
    for model in ("sleep", "identity"):
        (endpoint,) = [e for e in summary["endpoints"] if e["model"] == model]
        assert endpoint["requests"] == summary["server"][model]["requests"]  # every request, Triton's count


# The protocols each --protocol sends over (the model's endpoints are named "<model> [<protocol>]").
PROTOCOLS = {"grpc": ("grpc",), "both": ("http", "grpc")}


def check_mix_endpoints(summary: dict, models: tuple[str, ...], protocols: tuple[str, ...]) -> None:
    """Every model of the mix over every protocol asked for, and none other; per model, the
    client's requests over all protocols are Triton's count."""
    endpoints = summary["endpoints"]
    assert sorted((e["model"], e["protocol"]) for e in endpoints) == sorted(
        (model, protocol) for model in models for protocol in protocols
    )
    for endpoint in endpoints:
        assert endpoint["requests"] > 0 and endpoint["failures"] == 0, endpoint
    for model in models:
        sent = sum(e["requests"] for e in endpoints if e["model"] == model)
        assert sent == summary["server"][model]["requests"], (model, sent, summary["server"][model])


# Each protocol choice once and each mode once: both protocols share a closed loop's users here;
# how an open loop's sends are shared by an HTTP and a gRPC user is test_open_loop.py's
# test_open_loop_splits_the_rate_over_the_user_classes, and a capacity search (open loop) over a
# mix over both protocols is test_capacity.py's.
@pytest.mark.parametrize(("protocol", "mode"), [("both", "--concurrency"), ("grpc", "--request-rate")])
def test_a_sweep_over_a_mix_over_grpc_or_both_protocols(triton, tmp_path, protocol, mode):
    """--protocol grpc or both with --mix: each level's requests go over the protocols asked for
    (both: half the users, or half the rate, each), and the level's numbers are the whole mix."""
    run_dir, models = tmp_path / "mix", ("identity", "sleep_batch")
    level = "4" if mode == "--concurrency" else "60"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--mix", ",".join(f"{m}:0.5" for m in models), "--shape", "INPUT0:16"]
        + [mode, level, "--protocol", protocol, "--measurement-interval", "500", "--run-dir", str(run_dir)]
        + triton_options(triton),
        timeout=150,
    )
    # This test is about which protocols carry the mix: a level that did not stabilise in its
    # 0.5-s windows on a busy machine exits 5 (perf_analyzer's rule), and still holds the numbers.
    (swept,) = json.loads((run_dir / "sweep.json").read_text())["levels"]
    assert result.returncode == (0 if swept["stable"] else 5), result.stderr[-3000:]
    assert swept["level"] == float(level)
    # As the --mix sweep above: the level's windows and the server snapshots bounding it may differ by a few.
    served = sum(swept["server"][m]["requests"] for m in models)
    assert served == pytest.approx(swept["requests"], abs=max(4, 0.05 * swept["requests"]))
    summary = read_summary(run_dir)
    check_mix_endpoints(summary, models, PROTOCOLS[protocol])
    if protocol == "both":  # half the users (closed loop) or half the sends (open loop) each
        by_protocol = {
            p: sum(e["requests"] for e in summary["endpoints"] if e["protocol"] == p) for p in PROTOCOLS[protocol]
        }
        assert by_protocol["http"] == pytest.approx(by_protocol["grpc"], rel=0.5), by_protocol


def test_request_rate_sweep_against_triton(triton, tmp_path):
    # Open loop: each level's rate is sent whatever the latency (sleep_batch batches, so it keeps up).
    run_dir = tmp_path / "rate"
    result = run_cli(
        ["-m", "loadtests", "sweep", "--model", "sleep_batch", "--shape", "INPUT0:16", "--run-dir", str(run_dir)]
        + [*triton_options(triton), "--request-rate", "50:150:50", "--measurement-interval", "1000"]
        # The sweep's mechanics, not this host's steadiness: a level once failed the default 10 %
        # stability with other test processes on two cores (exit code 5, "unstable").
        + ["--stability-percentage", "50", "--max-trials", "8"],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Request Rate: 50, throughput:" in result.stdout
    content = json.loads((run_dir / "sweep.json").read_text())
    assert content["mode"] == "request_rate" and content["stopped_by"] == "done"
    levels = content["levels"]
    assert [level["level"] for level in levels] == [50, 100, 150]
    for level in levels:
        assert level["throughput_rps"] == pytest.approx(level["level"], rel=0.1), levels
        # Triton's count between the level's snapshots, the client's in the same windows: the
        # requests in flight at either boundary and the snapshots' own delay may differ (296 for
        # 300 once on a busy host); a window too many or too few would be 100 or more.
        server = level["server"]["sleep_batch"]
        assert server["requests"] == pytest.approx(level["requests"], abs=max(3, 0.05 * level["requests"]))
    with (run_dir / "sweep.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [row["Request Rate"] for row in rows] == ["50", "100", "150"]
    summary = read_summary(run_dir)
    assert summary["traffic"]["mode"] == "constant" and summary["traffic"]["rate_shape"] == "sweep"
    assert "latency_uncorrected_us" in summary["endpoints"][0]
