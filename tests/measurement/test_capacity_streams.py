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
from tests.helpers import run_cli, triton_options

MODEL = "stream_queued"
PRECISION_PERCENT = 10.0


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
