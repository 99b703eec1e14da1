"""A capacity search under a streamed model's clause (`--slo "ttfr_p99<...ms"`).

`stream_queued` (models/test_repository) is decoupled and serves one request at a time: its
execute() sends `responses` responses, the first `first_ms` after it starts and then one
every `gap_ms`, and returns only after the final flag. So it serves at most
1 / (first_ms + (responses - 1) x gap_ms) requests/s; below that rate a request's first
response comes `first_ms` after it is sent, above it the queue (and with it the time to first
response) grows for as long as the level lasts. The truth is read from its configuration.
"""

from __future__ import annotations

import json

import pytest

from loadtests.clients.control import TritonControl
from loadtests.clients.outcome import StreamTimings
from loadtests.levels.capacity_levels import CapacityController
from loadtests.levels.capacity_search import CapacitySearch
from loadtests.recording.histograms import EndpointStats
from loadtests.run_format.slo import parse_slo
from tests.helpers import model_stats, request_outcome, run_cli, triton_options

MODEL = "stream_queued"
PRECISION_PERCENT = 10.0


def streamed_window(latency_us: float, first_us: list[float]) -> dict[str, EndpointStats]:
    """One window of streamed requests: each `latency_us` to its final response, its first
    response at the given time."""
    stats = EndpointStats("m [grpc]", "m", "grpc")
    for first in first_us:
        stats.record(request_outcome(latency_us, 1, None, stream=StreamTimings(first, (), latency_us, 1)))
    return {stats.name: stats}


def test_a_ttfr_clause_is_judged_on_the_streams_first_responses():
    """Final responses at 500 ms, first responses at 20 ms: `ttfr_p99<100ms` passes (on the
    stream's histogram, its confidence bounds too), and the level's entry carries the stream
    object summary.json has; `p99<100ms` on the same windows fails."""
    windows = [streamed_window(500_000.0, [20_000.0 + 10.0 * i for i in range(400)]) for _ in range(11)]
    for text, passes in (("ttfr_p99<100ms", True), ("ttfr_p99<100ms@95%", True), ("p99<100ms", False)):
        controller = CapacityController(CapacitySearch(start_rate=400.0), parse_slo(text), settle=1, max_trials=10)
        controller.start_level(100.0, window_s=1.0)
        result = None
        for i, window in enumerate(windows):
            result = controller.on_window(101.0 + i, 1.0, window)
            if result is not None:
                break
        assert result is not None, text
        verdict = controller.verdicts[-1]
        assert verdict["passed"] is passes, (text, verdict)
        (clause,) = verdict["clauses"]
        expected_ms = 20.0 + 10.0 * 396 / 1000 if clause["metric"] == "ttfr_p99" else 500.0
        assert clause["measured"] == pytest.approx(expected_ms, rel=0.01), (text, clause)


def stream_params(triton) -> dict[str, float]:
    config = TritonControl(triton.http_address).model_config(MODEL)
    assert config["model_transaction_policy"]["decoupled"] is True
    params = {key: float(value["string_value"]) for key, value in config["parameters"].items()}
    assert params["inline"] == 1 and sum(group["count"] for group in config["instance_group"]) == 1
    return params


def test_the_capacity_under_a_ttfr_limit_is_the_models_service_rate(triton, tmp_path, bound):
    params = stream_params(triton)
    service_ms = params["first_ms"] + (params["responses"] - 1) * params["gap_ms"]
    truth_rps = 1000.0 / service_ms
    # Room for two requests queued ahead: a level under the capacity meets it on a busy host,
    # one above it builds a queue past it within a few seconds.
    limit_ms = params["first_ms"] + 2 * service_ms
    run_dir = tmp_path / "capacity"
    args = ["-m", "loadtests", "capacity", "--model", MODEL, "--protocol", "grpc", "--slo", f"ttfr_p99<{limit_ms:g}ms"]
    args += [*triton_options(triton), "--run-dir", str(run_dir), "--precision", f"{PRECISION_PERCENT:g}"]
    args += ["--probe-time", "2", "--measurement-interval", "1000", "--max-trials", "5"]
    result = run_cli(args, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    content = json.loads((run_dir / "capacity.json").read_text())
    levels = content["levels"]
    passing, failing = content["bracket"]["last_passing_rps"], content["bracket"]["first_failing_rps"]
    assert passing is not None and failing is not None, levels
    assert failing <= passing * (1 + PRECISION_PERCENT / 100) + 1e-9
    # A busy host only lowers what holds the limit (its stalls add to the time to first response):
    # beside another test folder and two other agents' tests it came to 0.899 of the truth once
    # (python -m tests.margins, 4 runs: 0.899-0.954); no host raises it beyond the search's precision.
    low = 1 - 1.5 * PRECISION_PERCENT / 100
    bound("capacity / truth", passing / truth_rps, at_least=low, at_most=1 + PRECISION_PERCENT / 100, context=levels)
    for level in levels:  # each level's time to first response, as the clause measured it
        (clause,) = level["clauses"]
        ttfr_p99_ms = level["stream"]["first_response_us"]["p99"] / 1000
        assert clause["measured"] == pytest.approx(ttfr_p99_ms, abs=0.01), level
        if not level["stopped_early"]:
            assert level["passed"] == (ttfr_p99_ms < limit_ms and level["dropped"] == 0), level
    assert "ttfr_p99 ms" in result.stdout  # the console table's column for the clause

    report = run_cli(["-m", "analysis", "report", str(run_dir)])
    assert report.returncode == 0, report.stderr
    per_rate = [line for line in (run_dir / "report.md").read_text().splitlines() if line.startswith("| request rate")]
    assert per_rate and "first response p99 (ms)" in per_rate[0], per_rate  # the levels' table, by rate


def test_a_ttfr_clause_on_a_model_that_does_not_stream_is_refused_before_any_load(triton, tmp_path):
    before = model_stats(triton.http_address, "identity")
    args = ["-m", "loadtests", "capacity", "--model", "identity", "--slo", "ttfr_p99<100ms", *triton_options(triton)]
    result = run_cli([*args, "--run-dir", str(tmp_path / "never"), "--shape", "INPUT0:16"], timeout=120)
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "not decoupled" in lines[0], result.stderr
    assert model_stats(triton.http_address, "identity") == before
    assert not (tmp_path / "never").exists()
