"""What the load test writes is what loadtests/run_format/ says a run directory holds.

Real runs with an --slo gate (so summary.json has every part: endpoints, open-loop counts,
the merged `overall` and `model_totals`, the verdicts) are checked against the format's
file names and summary.json's TypedDicts: every required key present, no key the schema
does not name. A writer that adds or renames a key without the format following fails here.
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


# Closed loop over HTTP and gRPC (two endpoints of one model: `model_totals`), and open loop
# (the late/dropped counts and the uncorrected latency). Open loop over one class: the two
# classes' users share one send schedule, and one class can take every send.
RUNS = {
    "closed": (["TritonHttpUser", "TritonGrpcUser"], []),
    "open": (["TritonGrpcUser"], ["--traffic", "constant", "--rate", "40"]),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run_dir(request, triton, tmp_path_factory):
    user_classes, traffic = RUNS[request.param]
    run_dir = tmp_path_factory.mktemp(request.param) / "run"
    options = [*triton_options(triton), "--model", "identity", "--run-dir", str(run_dir), *traffic]
    options += ["--slo", "p99<10s,identity:fail_ratio<0.5"]
    result = run_locust(user_classes, options, users=2, run_time="3s")
    assert result.returncode == 0, result.stderr[-2000:]
    return run_dir


def test_the_written_files_are_the_ones_the_format_names(run_dir):
    for name in (*files.RUN_MARKERS, files.SERVER_STATS_JSON, files.SERVER_METRICS_CSV):
        assert (run_dir / name).exists(), name
    logs = sorted(path.name for path in (run_dir / files.HDR_DIR).iterdir())
    assert logs and all(name.endswith(files.HLOG_SUFFIX) for name in logs), logs


def test_summary_json_follows_the_schema(run_dir):
    summary = read_summary(run_dir)
    _check_keys(summary, Summary, "summary.json")
    open_loop = summary["traffic"]["mode"] != "closed"
    assert len(summary["endpoints"]) == (1 if open_loop else 2)
    for entry in summary["endpoints"]:
        _check_keys(entry, EndpointEntry, f"endpoint {entry['name']}")
        assert ({"late", "dropped", "latency_uncorrected_us"} <= set(entry)) == open_loop
    _check_keys(summary["overall"], MergedEntry, OVERALL)
    assert summary["overall"]["requests"] == sum(entry["requests"] for entry in summary["endpoints"])
    if not open_loop:
        _check_keys(summary["model_totals"]["identity"], MergedEntry, "model_totals.identity")


def test_the_reader_reads_what_the_writer_wrote(run_dir):
    run = load_run(run_dir)
    summary = read_summary(run_dir)
    assert sorted(run.endpoints) == sorted(entry["name"] for entry in summary["endpoints"])
    for entry in summary["endpoints"]:
        read = run.endpoints[entry["name"]]
        assert (read.requests, read.late, read.dropped) == (entry["requests"], entry.get("late"), entry.get("dropped"))
        assert read.latency_us == entry["latency_us"]
