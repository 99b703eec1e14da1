"""Locust's --csv files with --json: its JSON print resets each endpoint's stats before Locust
quits, as --json-file's save does (tests/system/run/test_first_hour.py), so the final rewrite of the
CSV files must come before it."""

from __future__ import annotations

import json

from tests.helpers import locust_request_counts, read_summary, run_locust


def test_csv_with_json_keeps_the_counts(triton, tmp_path):
    """Before: the endpoint rows of <prefix>_stats.csv said 0 requests (the Aggregated row the total)."""
    run_dir, prefix = tmp_path / "run", tmp_path / "locust"
    extra = ["--csv", str(prefix), "--json", "--run-dir", str(run_dir)]
    result = run_locust(["TritonHttpUser"], [*triton.options, "--model", "identity", *extra], users=1, run_time="2s")
    assert result.returncode == 0, result.stderr[-3000:]
    exact = {e["model"]: e["requests"] for e in read_summary(run_dir)["endpoints"]}
    locust = {name: count for (_type, name), count in locust_request_counts(prefix).items()}
    assert exact and all(count > 0 for count in exact.values())
    assert locust == exact
    # Locust's JSON on stdout has them too.
    printed, _end = json.JSONDecoder().raw_decode(result.stdout[result.stdout.index("[") :])
    assert {entry["name"]: entry["num_requests"] for entry in printed} == exact
