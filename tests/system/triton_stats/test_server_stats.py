"""Triton's server-side breakdown and metrics, against the real local Triton.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/triton_stats/test_server_stats.py.
"""

from __future__ import annotations

import csv
import itertools
import json
import threading

import gevent
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from loadtests.clients.control import TritonControl
from loadtests.errors import ServerError
from loadtests.triton_stats.metrics import CSV_HEADER, KEPT_PREFIXES, MetricsPoller, Sample, scrape
from loadtests.triton_stats.poller import ServerStatsPoller, take_snapshot
from loadtests.triton_stats.statistics import ModelDelta, StatsSnapshot, compute_delta
from tests.helpers import http_target
from tests.slow_statistics import SlowStatisticsProxy
from tests.system.clients.test_grpc_stream import streamed

# Batch sizes cycle over the threads, so inferences differ from requests even without batching.
BATCH_SIZES = (1, 2, 3)
# Queue and compute averages are rounded separately from the request average.
SUM_TOLERANCE_US = 1.0


def send(http_address: str, model: str, requests: int, batch_size: int = 1, width: int = 16) -> None:
    """`requests` sequential inferences of [batch_size, width] zeros, on a client of this thread's own."""
    client = httpclient.InferenceServerClient(http_address)
    try:
        tensor = httpclient.InferInput("INPUT0", [batch_size, width], "FP32")
        tensor.set_data_from_numpy(np.zeros((batch_size, width), np.float32))
        for _ in range(requests):
            client.infer(model, [tensor])
    finally:
        client.close()


def send_concurrently(http_address: str, model: str, threads: int, requests_each: int, batch_sizes=(1,)) -> int:
    """Threads started together (so the dynamic batcher can group them); returns inferences sent."""
    barrier = threading.Barrier(threads)
    errors = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            send(http_address, model, requests_each, batch_sizes[index % len(batch_sizes)])
        except Exception as exc:  # re-raised in the test's thread below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    return sum(batch_sizes[i % len(batch_sizes)] * requests_each for i in range(threads))


def batch_stats_totals(before: StatsSnapshot, after: StatsSnapshot, model: str) -> tuple[int, int]:
    """(executions, inferences) from the per-batch-size stats: an independent count of both."""

    def totals(snapshot):
        executions = inferences = 0
        for entry in snapshot.models[model].values():
            for batch in entry["batch_stats"]:
                executions += batch["compute_infer"]["count"]
                inferences += batch["compute_infer"]["count"] * batch["batch_size"]
        return executions, inferences

    (e0, i0), (e1, i1) = totals(before), totals(after)
    return e1 - e0, i1 - i0


def component_sum(delta: ModelDelta) -> float:
    return delta.queue_us + delta.compute_input_us + delta.compute_infer_us + delta.compute_output_us


# -- statistics deltas against the real Triton -------------------------------------------------
# -- the premise of the restart check (statistics.SnapshotSeries.client_window) -------------------
def successes(control: TritonControl, model: str) -> int:
    return sum(entry["inference_stats"]["success"]["count"] for entry in control.statistics([model])[model].values())


def unary(triton, model: str, protocol: str, width: int):
    """One [1, width] FP32 request at a time over `protocol`, with tritonclient."""
    module = grpcclient if protocol == "grpc" else httpclient
    client = module.InferenceServerClient(triton.grpc_address if protocol == "grpc" else triton.http_address)
    tensor = module.InferInput("INPUT0", [1, width], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, width), np.float32))
    return client, lambda: client.infer(model, [tensor])


@pytest.mark.parametrize(
    ("model", "protocol", "width"),
    [
        ("identity", "http", 16),
        ("identity", "grpc", 16),
        ("sleep_20ms_dynbatch4", "http", 4),  # dynamic batching, one instance
        ("identity_ensemble", "grpc", 16),  # an ensemble: counted once for itself
    ],
)
def test_triton_has_counted_a_request_by_the_time_its_answer_arrives(triton, model, protocol, width):
    """What the restart check rests on: a client's success is in Triton's success count when the
    answer arrives, so the client's answers between two snapshots are a lower bound of Triton's rise."""
    control = TritonControl(triton.http_address)
    client, infer = unary(triton, model, protocol, width)
    start = successes(control, model)
    try:
        for answered in range(1, 31):
            infer()
            assert successes(control, model) - start >= answered, (model, protocol, answered)
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_decoupled_model_has_counted_a_streamed_request_by_its_final_response(triton, protocol):
    """The same premise for a decoupled model, streamed as the suite streams it (its final response
    read): its release may come after the final response, which the check's 10 % margin is for;
    here it never came after the answer was read."""
    control = TritonControl(triton.http_address)
    start = successes(control, "stream_gaps")
    for call in range(1, 11):
        _, failures, _ = streamed(triton, "stream_gaps", count=1, protocol=protocol)
        assert failures == [None]
        assert successes(control, "stream_gaps") - start >= 2 * call  # streamed() sends one unjudged first


def test_identity_delta_counts_exactly_what_was_sent(triton):
    before = take_snapshot(http_target(triton.http_address), ["identity"])
    send(triton.http_address, "identity", 10)
    inferences = 10 + send_concurrently(triton.http_address, "identity", 6, 5, BATCH_SIZES)
    after = take_snapshot(http_target(triton.http_address), ["identity"])

    delta = compute_delta(before, after)["identity"]
    assert delta.requests == 10 + 6 * 5
    assert delta.failed_requests == 0
    assert delta.inferences == inferences == 10 + 5 * (1 + 2 + 3) * 2
    assert (delta.executions, delta.inferences) == batch_stats_totals(before, after, "identity")
    assert 0 < delta.executions <= delta.requests
    assert delta.avg_batch == pytest.approx(delta.inferences / delta.executions)
    for component in (delta.queue_us, delta.compute_input_us, delta.compute_infer_us, delta.compute_output_us):
        assert component > 0
    assert component_sum(delta) <= delta.request_us + SUM_TOLERANCE_US
    assert delta.overhead_us == pytest.approx(delta.request_us - component_sum(delta), abs=SUM_TOLERANCE_US)
    # The divisors perf_analyzer uses all equal the success count here (no response cache).
    counts = {
        name: sum(e["inference_stats"][name]["count"] for e in after.models["identity"].values())
        - sum(e["inference_stats"][name]["count"] for e in before.models["identity"].values())
        for name in ("success", "queue", "compute_input", "compute_infer", "compute_output")
    }
    assert set(counts.values()) == {delta.requests}


def test_sleep_model_compute_infer_is_its_sleep(triton):
    # Each of the 8 instances is slow on its first requests (we saw 50-270 ms): warm them all.
    send_concurrently(triton.http_address, "sleep", 8, 2)
    before = take_snapshot(http_target(triton.http_address), ["sleep"])
    send_concurrently(triton.http_address, "sleep", 8, 2)
    after = take_snapshot(http_target(triton.http_address), ["sleep"])

    delta = compute_delta(before, after)["sleep"]
    assert (delta.requests, delta.executions, delta.inferences) == (16, 16, 16)  # no batching
    assert delta.avg_batch == 1.0
    assert 15_000 <= delta.compute_infer_us <= 40_000  # sleeps 20 ms per request
    assert component_sum(delta) <= delta.request_us + SUM_TOLERANCE_US
    assert json.dumps(delta.to_json())


def test_model_without_traffic_gives_zeros(triton):
    before = take_snapshot(http_target(triton.http_address), ["text_reverse", "identity"])
    after = take_snapshot(http_target(triton.http_address), ["text_reverse", "identity"])
    assert compute_delta(before, after) == {"text_reverse": ModelDelta(), "identity": ModelDelta()}
    assert ModelDelta().to_json()["avg_batch"] == 0.0


def test_statistics_keep_the_raw_entry_per_version(triton):
    stats = TritonControl(triton.http_address).statistics(["identity"])
    entry = stats["identity"]["1"]
    assert entry["name"] == "identity"
    assert {"inference_count", "execution_count", "inference_stats", "batch_stats"} <= set(entry)


def test_statistics_name_what_failed(triton, held_ports):
    with pytest.raises(ServerError, match="not available"):
        TritonControl(triton.http_address).statistics(["no_such_model"])
    with pytest.raises(ServerError, match="Connection refused"):
        TritonControl(f"127.0.0.1:{held_ports.http}", timeout_s=1.0).statistics(["identity"])


# -- the pollers under gevent -------------------------------------------------------------------
def read_lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_stats_poller_streams_every_snapshot_and_totals_the_run(triton, tmp_path):
    announced = []
    poller = ServerStatsPoller(
        http_target(triton.http_address),
        ["identity", "sleep"],
        interval_s=0.2,
        stream_to=tmp_path,
        on_snapshot=announced.append,
    )
    poller.start()
    gevent.sleep(0.5)
    send(triton.http_address, "identity", 5, batch_size=2)
    gevent.sleep(0.6)
    poller.stop()
    poller.stop()  # a second stop does nothing
    document = json.loads(json.dumps(poller.to_json()))
    poller.close()

    snapshots = read_lines(tmp_path / "server_snapshots.jsonl")
    times = [s["time_s"] for s in snapshots]
    assert len(times) >= 6, times  # the start, about five ticks in 1.1 s, the stop
    assert times == sorted(times)
    # Every snapshot, periodic or the last, reached on_snapshot (the suite's server_snapshot_taken).
    assert [s.time_s for s in announced] == times
    assert not poller.errors
    total = poller.total_delta()
    assert (total["identity"].requests, total["identity"].inferences) == (5, 10)
    assert total["sleep"] == ModelDelta()
    # No restart: the whole run is also the first raw snapshot subtracted from the last.
    assert compute_delta(StatsSnapshot(**snapshots[0]), StatsSnapshot(**snapshots[-1])) == total

    assert document["snapshot_count"] == len(times)
    assert document["snapshots_file"] == "server_snapshots.jsonl"
    assert document["intervals_file"] == "server_intervals.jsonl"
    assert "snapshots" not in document and "intervals" not in document["deltas"]
    assert document["deltas"]["total"]["identity"]["requests"] == 5
    intervals = read_lines(tmp_path / "server_intervals.jsonl")
    assert [(i["start_s"], i["end_s"]) for i in intervals] == list(itertools.pairwise(times))
    assert sum(i["models"]["identity"]["requests"] for i in intervals) == 5
    assert sum(i["models"]["identity"]["inferences"] for i in intervals) == 10
    assert poller.last_interval[:2] == (times[-2], times[-1])


def test_a_snapshot_still_in_flight_at_the_stop_lands_before_the_last_one(triton, tmp_path):
    """A step boundary's snapshot (taken without waiting) that Triton answers late: the stop's
    last snapshot comes after it, never before it, and nothing lands after the stop."""
    proxy = SlowStatisticsProxy(triton.http_address, delay=lambda n: 1.0 if n == 2 else 0.0)
    try:
        poller = ServerStatsPoller(http_target(proxy.address), ["identity"], interval_s=60, stream_to=tmp_path)
        poller.start()  # the first snapshot
        poller.snapshot_soon()  # the 2nd: 1 s late
        gevent.sleep(0.1)
        send(triton.http_address, "identity", 3)
        poller.stop()
        taken = poller.series.count
        gevent.sleep(1.5)  # before the fix the boundary's snapshot landed here, after the last
        poller.close()
    finally:
        proxy.close()
    assert taken == poller.series.count == 3 and not poller.errors
    snapshots = read_lines(tmp_path / "server_snapshots.jsonl")
    times = [s["time_s"] for s in snapshots]
    assert times == sorted(times) and len(times) == 3
    assert poller.total_delta()["identity"].requests == 3


def test_a_snapshot_answered_late_is_kept_before_one_asked_after_it(triton, tmp_path):
    """A step boundary's snapshot whose answer comes late (Triton read its counters at once), and
    another asked while it is on its way (a periodic tick, a sweep's boundary): each is kept in the
    order Triton read it. Kept in the order the answers came, the counters went down, and the run
    took it for a restart and counted the model's whole history (fresh87: a capacity search over
    identity recorded a restart 4.9 s in, and Triton's count 24,406 against the 380 it was sent)."""
    proxy = SlowStatisticsProxy(
        triton.http_address, delay=lambda _n: 0.0, answer_delay=lambda n: 1.0 if n == 2 else 0.0
    )
    try:
        poller = ServerStatsPoller(http_target(proxy.address), ["identity"], interval_s=60, stream_to=tmp_path)
        poller.start()  # the first snapshot
        poller.snapshot_soon()  # the 2nd: read by Triton now, its answer held back 1 s
        while proxy.read < 2:
            gevent.sleep(0.01)
        send(triton.http_address, "identity", 3)
        poller.snapshot_now()  # the 3rd: asked after the 2nd was read
        poller.stop()
        poller.close()
    finally:
        proxy.close()
    assert poller.restarts() == [] and not poller.errors
    assert poller.total_delta()["identity"].requests == 3
    snapshots = read_lines(tmp_path / "server_snapshots.jsonl")
    counts = [s["models"]["identity"]["1"]["inference_stats"]["success"]["count"] for s in snapshots]
    assert len(snapshots) == 4 and counts == sorted(counts), counts


def test_metrics_poller_writes_server_metrics_csv(triton, tmp_path):
    poller = MetricsPoller(http_target(triton.metrics_address), interval_s=0.2)
    poller.start()
    gevent.sleep(0.5)
    poller.stop()
    assert not poller.errors
    path = poller.write_csv(tmp_path / "server_metrics.csv")

    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == CSV_HEADER
    body = rows[1:]
    assert {name for _, name, _, _ in body} >= {"nv_inference_count", "nv_cpu_utilization"}
    assert all(name.startswith(KEPT_PREFIXES) for _, name, _, _ in body)
    assert len({time_s for time_s, _, _, _ in body}) >= 3  # start, at least one tick, stop
    for _, _, labels, value in body:
        assert labels == json.dumps(json.loads(labels), sort_keys=True, separators=(",", ":"))
        float(value)
    identity = [r for r in body if r[1] == "nv_inference_count" and json.loads(r[2]).get("model") == "identity"]
    assert identity and json.loads(identity[0][2]) == {"model": "identity", "version": "1"}


def test_metrics_poller_streams_to_its_csv_and_keeps_nothing(triton, tmp_path):
    # A master scraping every 2 s for 30 minutes grew by 160 MB holding these rows (bench/soak.py).
    path = tmp_path / "server_metrics.csv"
    poller = MetricsPoller(http_target(triton.metrics_address), interval_s=0.2, csv_path=path)
    poller.start()
    gevent.sleep(0.5)
    poller.stop()
    assert poller.rows == []  # nothing held in memory
    assert poller.write_csv(path) == path
    with path.open() as file:
        rows = list(csv.reader(file))
    assert tuple(rows[0]) == CSV_HEADER
    assert len(rows) - 1 == poller.rows_written > 0
    scrapes = {row[0] for row in rows[1:]}
    assert len(scrapes) >= 3  # the start, ticks, the stop


# -- metrics against the real Triton ------------------------------------------------------------
def identity_metric(samples: list[Sample], name: str) -> float:
    (value,) = [s.value for s in samples if s.name == name and s.labels == {"model": "identity", "version": "1"}]
    return value


def test_scraped_inference_count_grows_by_what_was_sent(triton):
    before = scrape(triton.metrics_address)
    send(triton.http_address, "identity", 7, batch_size=3)
    after = scrape(triton.metrics_address)
    assert identity_metric(after, "nv_inference_count") - identity_metric(before, "nv_inference_count") == 21
    grown = identity_metric(after, "nv_inference_request_success") - identity_metric(
        before, "nv_inference_request_success"
    )
    assert grown == 7
    assert all(s.name.startswith(KEPT_PREFIXES) for s in after)
    assert not any(s.name.startswith("nv_pinned_memory") for s in after)  # exported, not kept
