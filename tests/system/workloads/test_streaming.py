"""The gRPC users stream a decoupled model (one ModelStreamInfer call per request,
clients/grpc_stream.py), the HTTP users through Triton's generate_stream (server-sent events,
clients/http_stream.py): a whole Locust run against the session's Triton, its counts against
Triton's statistics of the model."""

from __future__ import annotations

import csv
import json
import math
import shutil

import pytest
import tritonclient.http as httpclient

from analysis.check import check_run
from analysis.compare import write_comparison
from analysis.report import write_report
from loadtests.run_format.hdr import new_histogram, read_logs, summarise_us
from tests.helpers import run_against_triton

# HdrHistogram with 3 significant digits: a recorded value is within 0.1 % of the true one.
HDR_PRECISION = 1e-3
# The open-loop test's model: stream_gaps' ten times slower (first response 100 ms, then one every
# 200). Timed from the intended send, stream_gaps' first responses came 5.2 ms late at the median
# beside two test shards, the sends late on a starved host (fresh49), past the old 5-ms slack.
# The bounds are now a gap wide (_assert_timetable_recovered): 200 ms here, 20 on stream_gaps.
TIMED = "stream_slow"


PROTOCOLS = {"TritonGrpcUser": ("grpc", "gRPC"), "TritonHttpUser": ("http", "HTTP")}


@pytest.mark.parametrize("model", ["stream_gaps", "stream_fail", "stream_sparse"])
@pytest.mark.parametrize("user_class", sorted(PROTOCOLS))
def test_a_decoupled_model_is_streamed_and_counts_match_triton(triton, tmp_path, user_class, model):
    """gRPC streams it (ModelStreamInfer), HTTP through generate_stream (server-sent events)."""
    protocol, code = PROTOCOLS[user_class]
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [user_class],
        ["--model", model],
        models=(model,),
        users=2,
        run_time="3s",
        expect_exit=1 if model == "stream_fail" else 0,  # Locust's: any failed request is exit code 1
    )
    [endpoint] = run.summary["endpoints"]
    assert endpoint["name"] == f"{model} [{protocol}]"
    assert endpoint["requests"] > 0
    # Triton counts a request whose model failed mid-stream as a successful execution (the
    # model's execute() returned; the error travelled as a response): every request is its.
    assert endpoint["requests"] == run.served() + run.served(count="failures")
    assert run.served(count="failures") == 0
    failures = endpoint.get("failures_by_class") or {}
    if model == "stream_fail":
        assert set(failures) == {f"server error: {code} stream error after responses"}
        assert endpoint["failures"] == sum(failures.values()) > 0
        return
    assert endpoint["failures"] == 0, failures
    stream = endpoint["stream"]
    assert stream["requests"] == endpoint["requests"]
    params = _timetable(triton, model)
    if model == "stream_sparse":
        # The model numbers the requests it receives and empties every k-th: the run's requests
        # are a run of consecutive numbers, so a k-th of them (rounded either way) had none.
        every = int(params["empty_every"])
        assert abs(stream["requests_without_response"] - endpoint["requests"] / every) < 1, stream
        answered = endpoint["requests"] - stream["requests_without_response"]
        assert stream["responses"] == answered * int(params["responses"]), stream
    else:
        assert stream["requests_without_response"] == 0
        assert stream["responses"] == endpoint["requests"] * int(params["responses"])


def _timetable(triton, model: str) -> dict[str, float]:
    """The model's parameters as Triton loaded them (its config), not as written here."""
    config = httpclient.InferenceServerClient(triton.http_address).get_model_config(model)
    return {key: float(value["string_value"]) for key, value in config.get("parameters", {}).items()}


def _assert_timetable_recovered(stream: dict, params: dict[str, float]) -> None:
    """summary.json's stream object against the model's timetable: counts exact; the median first
    response no earlier than the model sends it (less the HDR precision, 0.1 %) and before its
    second (timed from a later response, it would be a gap or more later); the median gap within
    half a gap (responses read together show gaps near 0)."""
    responses = int(params["responses"])
    assert stream["responses_per_request"] == {"mean": float(responses), "min": responses, "max": responses}
    assert stream["responses"] == responses * stream["requests"]
    first_us, gap_us = params["first_ms"] * 1e3, params["gap_ms"] * 1e3
    first = stream["first_response_us"]
    assert first_us * (1 - HDR_PRECISION) <= first["p50"] < first_us + gap_us, first
    gap = stream["gap_us"]
    assert gap["p50"] == pytest.approx(gap_us, abs=gap_us / 2), gap
    final = stream["final_response_us"]
    assert final["p50"] >= (first_us + (responses - 1) * gap_us) * (1 - HDR_PRECISION), final


@pytest.mark.parametrize("user_class", sorted(PROTOCOLS))
def test_timings_recovered_and_merged_over_worker_processes(triton, tmp_path, user_class):
    """Two worker processes, closed loop: each worker's histograms merged on the master; the
    model's timetable comes back, and the request count is Triton's."""
    # stream_gaps, not TIMED: the clauses' confidence needs the hundreds of requests its 70-ms
    # streams give in 4 s (stream_slow's gave 48 over HTTP, and the 99 % clause came inconclusive).
    params = _timetable(triton, "stream_gaps")
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [user_class],
        ["--model", "stream_gaps", "--processes", "2", "--slo", "ttfr_p90<10s@95%,gap_p50<1us@90%"],
        models=("stream_gaps",),
        users=4,
        run_time="4s",
        expect_exit=3,  # the gap clause fails on purpose
    )
    summary = run.summary
    assert summary["load_generator"]["workers"] == 2
    [endpoint] = summary["endpoints"]
    assert endpoint["failures"] == 0
    assert endpoint["requests"] == endpoint["stream"]["requests"] == run.served()
    _assert_timetable_recovered(endpoint["stream"], params)
    assert summary["overall"]["stream"]["first_response_us"] == endpoint["stream"]["first_response_us"]
    _assert_run_files_hold_the_stream(run.run_dir, endpoint)
    _assert_report_and_comparison_show(run.run_dir, endpoint, tmp_path)


def _assert_run_files_hold_the_stream(run_dir, endpoint: dict) -> None:
    """hdr/<endpoint>.first_response.hlog and .gap.hlog merged over the run are summary.json's
    numbers; timeseries.csv's ttfr/gap cells are each window's interval; the run's confidence
    clauses and `analysis check`'s, read back from the logs, agree."""
    name, stream = endpoint["name"], endpoint["stream"]
    with open(run_dir / "timeseries.csv", newline="") as file:
        rows = {float(row["time_s"]): row for row in csv.DictReader(file) if row["endpoint"] == name}
    start = json.loads((run_dir / "config.json").read_text())["started_at"]
    # The latency log stays the endpoint's log (hdr/<endpoint>.first_response.hlog sorts before it).
    latency = read_logs(run_dir / "hdr")[name].merge([(-math.inf, math.inf)], 0.0)[0]
    assert summarise_us(latency) == endpoint["latency_us"]
    for variant, key, column in (("first_response", "first_response_us", "ttfr"), ("gap", "gap_us", "gap")):
        log = read_logs(run_dir / "hdr", variant)[name]
        merged = log.merge([(-math.inf, math.inf)], 0.0)[0]
        assert summarise_us(merged) == stream[key], variant
        windows = 0
        for offset, _, encoded in log.intervals():
            window = new_histogram()
            window.decode_and_add(encoded)
            row = rows[round(log.base_epoch + offset - _epoch(start), 3)]
            assert float(row[f"{column}_p50_us"]) == summarise_us(window)["p50"], (variant, row)
            assert float(row[f"{column}_p99_us"]) == summarise_us(window)["p99"], (variant, row)
            windows += 1
        assert windows == sum(1 for row in rows.values() if row[f"{column}_p99_us"]) > 0
    assert [result["verdict"] for result in json.loads((run_dir / "summary.json").read_text())["slo"]] == [
        "pass",
        "fail",
    ]
    assert check_run(run_dir) == 3  # the same clauses, the bounds from hdr/'s stream logs
    assert check_run(run_dir, "ttfr_p90<10s@99%") == 0


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def _assert_report_and_comparison_show(run_dir, endpoint: dict, tmp_path) -> None:
    """The report's and a comparison's Streaming section: this endpoint's row, from summary.json."""
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    write_report(run_dir)
    write_comparison([run_dir, other], ["one", "two"], tmp_path / "compare")
    stream = endpoint["stream"]
    first, gap = stream["first_response_us"], stream["gap_us"]
    cells = [
        str(stream["requests"]),
        f"{stream['responses_per_request']['mean']:.2f}",
        str(stream["requests_without_response"]),
        f"{stream['responses_per_s']:.1f}",
        *(f"{value / 1e3:.3f}" for value in (first["p50"], first["p99"], gap["p50"], gap["p99"])),
    ]
    row = " | ".join(cells)
    assert f"| {endpoint['name']} | {row} |" in (run_dir / "report.md").read_text()
    compared = (tmp_path / "compare" / "compare.md").read_text()
    assert "## Streaming" in compared and f"| two: {endpoint['name']} | {row} |" in compared


@pytest.mark.parametrize("user_class", sorted(PROTOCOLS))
def test_open_loop_times_the_stream_from_the_intended_send(triton, tmp_path, user_class):
    params = _timetable(triton, TIMED)
    run = run_against_triton(
        triton,
        tmp_path / "run",
        [user_class],
        ["--model", TIMED, "--traffic", "constant", "--rate", "40"],
        models=(TIMED,),
        users=2,
        run_time="4s",
    )
    [endpoint] = run.summary["endpoints"]
    assert endpoint["failures"] == 0
    assert endpoint["requests"] == endpoint["stream"]["requests"] == run.served()
    # How many were sent late is the host's business (a timing target, `make bench`'s): with
    # three pytest processes on two cores, 21 of 156 were once more than 1 ms late.
    _assert_timetable_recovered(endpoint["stream"], params)
    # Corrected (from the intended send) is never below uncorrected.
    assert endpoint["latency_us"]["p50"] >= endpoint["latency_uncorrected_us"]["p50"]
