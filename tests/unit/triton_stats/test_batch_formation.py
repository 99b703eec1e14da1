"""Batcher formation: the batch sizes Triton executed (its batch_stats) beside the batch
sizes the client asked for, in summary.json and in the report."""

from __future__ import annotations

import pytest

from analysis import plots
from loadtests.recording.histograms import EndpointStats
from loadtests.triton_stats.statistics import compute_delta, fold, server_stats_document
from tests.helpers import request_outcome
from tests.unit.triton_stats.test_server_stats import entry, snapshot


def with_batches(raw: dict, executions_by_size: dict[int, int]) -> dict:
    """A hand-made stats entry with Triton's batch_stats: compute_infer.count per batch size."""
    raw["batch_stats"] = [
        {"batch_size": size, "compute_infer": {"count": count, "ns": count * 1000}}
        for size, count in executions_by_size.items()
    ]
    return raw


def test_batch_sizes_delta_counts_new_sizes_from_zero():
    before = snapshot(0, v1=with_batches(entry("1", 10), {1: 10}))
    after = snapshot(1, v1=with_batches(entry("1", 20), {1: 14, 4: 2}))
    assert compute_delta(before, after)["m"].batch_sizes == {"1": 4, "4": 2}


def test_batch_sizes_over_a_restart_add_both_server_lifetimes():
    # 6 executions of 1 and 2 of 8 before the restart (read at t=2), then 3 of 8 on the new server.
    series = fold(
        [
            snapshot(0, v1=with_batches(entry("1", 100), {1: 50, 8: 5})),
            snapshot(2, v1=with_batches(entry("1", 140), {1: 56, 8: 7})),
            snapshot(9, v1=with_batches(entry("1", 10), {8: 1})),
            snapshot(11, v1=with_batches(entry("1", 25), {8: 3})),
        ]
    )
    assert series.total_delta()["m"].batch_sizes == {"1": 6, "8": 2 + 3}
    document = server_stats_document("127.0.0.1:1", ["m"], 5.0, series, [], 0, streamed=False)
    assert document["deltas"]["total"]["m"]["batch_sizes"] == {"1": 6, "8": 5}


def test_requested_batch_sizes_count_every_request_and_survive_the_worker_message():
    stats = EndpointStats("m [http]", "m", "http")
    stats.record(request_outcome(100.0, 4, None))
    stats.record(request_outcome(100.0, 4, "timeout"))
    stats.record(request_outcome(100.0, 1, None))
    other = EndpointStats.from_message(stats.to_message())
    assert other.batch_sizes == {4: 2, 1: 1}
    other.merge(stats)
    assert other.batch_sizes == {4: 4, 1: 2}


def test_batch_sizes_chart_draws_executed_beside_requested_shares():
    server = {"m": {"batch_sizes": {"1": 30, "4": 10}}}
    requested = {"m": {"1": 40}}
    figure = plots.batch_sizes_figure(server, requested)
    axes = figure.axes[0]
    heights = {container.get_label(): [bar.get_height() for bar in container] for container in axes.containers}
    # Bars at batch sizes 1 and 4: shares of executions and of requests, in %.
    assert heights["m executed"] == pytest.approx([75.0, 25.0])
    assert heights["m requested"] == pytest.approx([100.0, 0.0])
