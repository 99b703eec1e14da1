"""Sweeps: range parsing, perf_analyzer's stability rule and the level controller with fake
windows, the sweep files, the CLI's input errors. Sweeps run against Triton, which measure
levels on this host, are in tests/measurement/test_sweep.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtests.__main__ import main
from loadtests.commands.sweep import choose_user_classes, parse_range
from loadtests.errors import SpecError
from loadtests.levels import sweep_files
from loadtests.levels.stability import is_stable, over_latency_limit
from loadtests.levels.sweep_args import parse_sweep_args
from loadtests.levels.sweep_levels import SweepController
from loadtests.options.shapes import parse_shape_args
from loadtests.recording.histograms import EndpointStats
from loadtests.triton_stats.statistics import ModelDelta
from tests.helpers import request_outcome, run_cli, triton_options

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
