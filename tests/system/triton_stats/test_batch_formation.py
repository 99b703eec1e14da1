"""Batcher formation: the batch sizes Triton executed (its batch_stats) beside the batch sizes the
client asked for, in summary.json and in the report.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/triton_stats/test_batch_formation.py.
"""

from __future__ import annotations

import pytest

from analysis.report import write_report
from tests.helpers import model_stats, read_summary, run_locust, triton_options

MODEL = "bert_qa_dynbatch"
# Requests of 1 and 2: whatever batch larger than 2 Triton ran, its dynamic batcher formed.
REQUESTED_SPEC = "1:0.7,2:0.3"


def by_size(histogram: dict[str, int]) -> dict[int, int]:
    return {int(size): count for size, count in histogram.items()}


def test_executed_batch_histogram_matches_tritons_counts_under_8_users(triton, tmp_path):
    run_dir = tmp_path / "run"
    before = model_stats(triton.http_address, MODEL)
    result = run_locust(
        ["BertQAHttpUser"],
        [*triton_options(triton), "--model", MODEL, "--batch-size", REQUESTED_SPEC, "--run-dir", str(run_dir)],
        users=8,
        run_time="5s",
    )
    after = model_stats(triton.http_address, MODEL)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = read_summary(run_dir)

    server = summary["server"][MODEL]
    executed = by_size(server["batch_sizes"])
    assert sum(executed.values()) == server["executions"] == after["executions"] - before["executions"]
    assert sum(size * count for size, count in executed.items()) == server["inferences"]
    weighted_mean = sum(size * count for size, count in executed.items()) / sum(executed.values())
    assert weighted_mean == pytest.approx(server["avg_batch"], abs=5e-4)  # avg_batch keeps 3 decimals
    assert max(executed) > 2, executed  # batches the client never sent: formed by the batcher

    (endpoint,) = summary["endpoints"]
    requested = by_size(endpoint["requested_batch_sizes"])
    assert set(requested) == {1, 2}
    assert endpoint["failures"] == 0
    assert sum(requested.values()) == endpoint["requests"]
    assert sum(size * count for size, count in requested.items()) == endpoint["inferences"]

    report = write_report(run_dir)
    assert (run_dir / "batch_sizes.png").read_bytes().startswith(b"\x89PNG")
    assert "batch_sizes.png" in report.with_suffix(".md").read_text()
