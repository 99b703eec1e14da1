"""What the load test writes is what loadtests/run_format/ says a run directory holds.

A real open-loop run over HTTP and gRPC with an --slo gate (so summary.json has every part:
endpoints with open-loop counts, the merged `overall` and `model_totals`, the verdicts) is
checked against the format's file names and summary.json's TypedDicts: every required key
present, no key the schema does not name. A writer that adds or renames a key without the
format following fails here.
"""

from __future__ import annotations

from typing import get_type_hints

import pytest

from analysis import load_run
from loadtests.run_format import files
from loadtests.run_format.summary import OVERALL, EndpointEntry, MergedEntry, Summary
from tests.helpers import read_summary, run_locust, triton_options


def _check_keys(entry: dict, schema: type, where: str) -> None:
    missing = schema.__required_keys__ - set(entry)
    unknown = set(entry) - set(get_type_hints(schema))
    assert not missing, f"{where} lacks {sorted(missing)}"
    assert not unknown, f"{where} has keys the format does not name: {sorted(unknown)}"


@pytest.fixture(scope="module")
def open_loop_run(triton, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("format") / "run"
    options = [*triton_options(triton), "--model", "identity", "--run-dir", str(run_dir)]
    options += ["--traffic", "constant", "--rate", "40", "--slo", "p99<10s,identity:fail_ratio<0.5"]
    result = run_locust(["TritonHttpUser", "TritonGrpcUser"], options, users=2, run_time="3s")
    assert result.returncode == 0, result.stderr[-2000:]
    return run_dir


def test_the_written_files_are_the_ones_the_format_names(open_loop_run):
    for name in (*files.RUN_MARKERS, files.SERVER_STATS_JSON, files.SERVER_METRICS_CSV):
        assert (open_loop_run / name).exists(), name
    logs = sorted(path.name for path in (open_loop_run / files.HDR_DIR).iterdir())
    assert logs and all(name.endswith(files.HLOG_SUFFIX) for name in logs), logs


def test_summary_json_follows_the_schema(open_loop_run):
    summary = read_summary(open_loop_run)
    _check_keys(summary, Summary, "summary.json")
    assert len(summary["endpoints"]) == 2
    for entry in summary["endpoints"]:
        _check_keys(entry, EndpointEntry, f"endpoint {entry['name']}")
        assert {"late", "dropped", "latency_uncorrected_us"} <= set(entry)  # open loop
    _check_keys(summary["overall"], MergedEntry, OVERALL)
    assert summary["overall"]["requests"] == sum(entry["requests"] for entry in summary["endpoints"])
    for model, merged in summary["model_totals"].items():
        _check_keys(merged, MergedEntry, f"model_totals.{model}")


def test_the_reader_reads_what_the_writer_wrote(open_loop_run):
    run = load_run(open_loop_run)
    summary = read_summary(open_loop_run)
    assert sorted(run.endpoints) == sorted(entry["name"] for entry in summary["endpoints"])
    for entry in summary["endpoints"]:
        read = run.endpoints[entry["name"]]
        assert (read.requests, read.late, read.dropped) == (entry["requests"], entry["late"], entry["dropped"])
        assert read.latency_us == entry["latency_us"]
