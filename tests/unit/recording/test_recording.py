"""Exact measurement: known latencies in, the same percentiles out (within HDR's precision)."""

from __future__ import annotations

import csv
import gc

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.histograms import EndpointStats, new_histogram
from loadtests.recording.run_dir import RunDirectory
from loadtests.recording.windows import RunAggregator, WindowRecorder
from tests.helpers import request_outcome

# HdrHistogram with 3 significant digits: a value is reported within 0.1 % of itself.
RELATIVE_PRECISION = 1e-3


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def known_latencies(count: int = 20_000, seed: int = 3) -> np.ndarray:
    """Generated, not measured: a sub-millisecond body with a long tail, in microseconds."""
    rng = np.random.default_rng(seed)
    body = rng.lognormal(mean=np.log(400), sigma=0.4, size=count)
    tail = rng.uniform(5_000, 900_000, size=count // 100)
    return np.round(np.concatenate([body, tail])).astype(np.int64)


def assert_close_to(reported: float, exact: float) -> None:
    assert abs(reported - exact) <= exact * RELATIVE_PRECISION + 1, (reported, exact)


def test_percentiles_match_a_direct_computation():
    values = known_latencies()
    stats = EndpointStats("m [http]", "m", "http")
    for value in values:
        stats.record(request_outcome(float(value), batch_size=2, failure=None))
    summary = stats.latency_summary_us()
    for key, percentile in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99), ("p99.9", 99.9)):
        # HDR reports the value at or above the exact rank ("inverted_cdf" in numpy's terms).
        assert_close_to(summary[key], float(np.percentile(values, percentile, method="inverted_cdf")))
    assert_close_to(summary["max"], float(values.max()))
    assert summary["mean"] == pytest.approx(values.mean(), rel=RELATIVE_PRECISION)
    assert stats.requests == len(values)
    assert stats.inferences == 2 * len(values)


def test_p50_and_p99_differ_at_sub_millisecond_latencies():
    stats = EndpointStats("m [grpc]", "m", "grpc")
    for value in (180.4, 210.0, 250.7, 300.2, 820.9):
        stats.record(request_outcome(value, batch_size=1, failure=None))
    summary = stats.latency_summary_us()
    assert summary["p50"] == pytest.approx(250, abs=1)
    assert summary["p99"] == pytest.approx(821, abs=1)


def test_failures_are_counted_by_name_and_kept_out_of_latency():
    stats = EndpointStats("m [http]", "m", "http")
    stats.record(request_outcome(100.0, 4, None))
    stats.record(request_outcome(30_000_000.0, 4, "timeout"))
    stats.record(request_outcome(5.0, 4, "invalid request: HTTP 400"))
    assert stats.requests == 3 and stats.inferences == 4
    assert dict(stats.failures) == {"timeout": 1, "invalid request: HTTP 400": 1}
    assert stats.latency_summary_us()["max"] == pytest.approx(100, abs=1)


def test_split_across_recorders_and_merged_is_identical_to_one_recorder():
    values = known_latencies(6_000)
    clock = FakeClock()
    single = WindowRecorder(window_s=1.0, clock=clock)
    workers = [WindowRecorder(window_s=1.0, clock=clock) for _ in range(3)]
    for index, value in enumerate(values):
        clock.now = 1_700_000_000.0 + index / 1000  # 6 windows of 1,000 values
        failure = "timeout" if index % 97 == 0 else None
        single.record(RequestOutcome("m [http]", "m", "http", float(value), 1 + index % 4, failure))
        workers[index % 3].record(RequestOutcome("m [http]", "m", "http", float(value), 1 + index % 4, failure))

    one, merged = RunAggregator(clock=clock), RunAggregator(clock=clock)
    one.merge(single.drain())
    for worker in workers:
        merged.merge(worker.drain())
    a, b = one.totals["m [http]"], merged.totals["m [http]"]
    assert (a.requests, a.inferences, dict(a.failures)) == (b.requests, b.inferences, dict(b.failures))
    assert a.latency_summary_us() == b.latency_summary_us()
    assert sorted(one.open) == sorted(merged.open)
    for key in one.open:
        assert one.open[key]["m [http]"].latency_summary_us() == merged.open[key]["m [http]"].latency_summary_us()


class ListSink:
    def __init__(self) -> None:
        self.rows: list[tuple[float, dict, int]] = []
        self.by_class: list[dict[str, int] | None] = []

    def write_window(self, start_s, window_s, endpoints, users, target_rate=None, users_by_class=None) -> None:
        self.rows.append((start_s, {n: s.requests for n, s in endpoints.items()}, users))
        self.by_class.append(users_by_class)


def test_windows_close_in_order_after_the_grace_period_and_late_data_is_not_lost():
    clock = FakeClock(1000.0)
    sink = ListSink()
    aggregator = RunAggregator(window_s=1.0, grace_s=3.0, sink=sink, clock=clock)
    recorder = WindowRecorder(window_s=1.0, clock=clock)
    for second in range(5):
        clock.now = 1000.0 + second + 0.5
        aggregator.note_users(second + 1)
        for _ in range(second + 1):
            recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    aggregator.merge(recorder.drain())
    aggregator.close_windows()  # now = 1004.5: windows before 1001.5 - grace are final
    assert [row[0] for row in sink.rows] == [1000.0]
    clock.now = 1000.0  # a straggler for the closed window 1000
    recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    aggregator.merge(recorder.drain())
    aggregator.close_windows(final=True)
    assert [row[0] for row in sink.rows] == [1000.0, 1001.0, 1002.0, 1003.0, 1004.0]
    assert [row[1]["m [http]"] for row in sink.rows] == [1, 2, 3, 4, 5]
    assert [row[2] for row in sink.rows] == [1, 2, 3, 4, 5]
    assert aggregator.late_messages == 1
    assert aggregator.totals["m [http]"].requests == 16  # the straggler is in the totals


def test_a_window_closes_once_every_live_worker_has_drained_past_it_without_waiting_for_the_grace():
    # Each worker keys its records and its drain time on its own clock: after a drain at d, all
    # it records falls in windows from d's on. So a window every live worker has drained past is
    # final, and the master need not wait out the grace (8 s: every distributed sweep or capacity
    # level paid it) for it.
    clock = FakeClock(1000.0)
    sink = ListSink()
    aggregator = RunAggregator(window_s=1.0, grace_s=8.0, sink=sink, clock=clock)
    workers = {name: WindowRecorder(window_s=1.0, clock=clock) for name in ("a", "b")}
    for second in range(3):
        clock.now = 1000.0 + second + 0.5
        for recorder in workers.values():
            recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    clock.now = 1003.2
    aggregator.merge(workers["a"].drain())
    aggregator.note_drained("a", clock.now)
    aggregator.close_windows(workers=("a", "b"))
    assert sink.rows == []  # b has not drained: its windows may still come
    aggregator.merge(workers["b"].drain())
    aggregator.note_drained("b", clock.now)
    aggregator.close_windows(workers=("a", "b"))
    assert [(row[0], row[1]["m [http]"]) for row in sink.rows] == [(1000.0, 2), (1001.0, 2), (1002.0, 2)]
    # A worker that has not reported yet (joined late) holds the windows back until the grace ends.
    clock.now = 1004.5
    workers["a"].record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    clock.now = 1005.1
    aggregator.merge(workers["a"].drain())
    aggregator.note_drained("a", clock.now)
    aggregator.close_windows(workers=("a", "b", "c"))
    assert len(sink.rows) == 3
    clock.now = 1013.1  # the grace (8 s) is over for window 1004
    aggregator.close_windows(workers=("a", "b", "c"))
    assert [row[0] for row in sink.rows][-2:] == [1003.0, 1004.0]
    assert aggregator.late_messages == 0


def test_edge_windows_count_throughput_over_the_part_the_run_covered(tmp_path):
    directory = RunDirectory(tmp_path, started_at=1000.5)
    for start in (1000.0, 1001.0, 1002.0):
        stats = EndpointStats("m [http]", "m", "http")
        for _ in range(10):
            stats.record(request_outcome(100.0, 1, None))
        if start == 1002.0:
            directory.stopped_at = 1002.25  # the test stopped a quarter into the last window
        directory.write_window(start, 1.0, {stats.name: stats}, users=1)
    directory.close()
    with (tmp_path / "timeseries.csv").open() as file:
        rates = [float(row["throughput_rps"]) for row in csv.DictReader(file)]
    assert rates == [20.0, 10.0, 40.0]


def test_run_directory_writes_timeseries_and_readable_hdr_logs(tmp_path):
    directory = RunDirectory(tmp_path, started_at=1000.0)
    expected_total = 0
    for second in range(3):
        stats = EndpointStats("bert_qa [grpc]", "bert_qa", "grpc")
        for value in range(100, 100 + 50 * (second + 1)):
            stats.record(request_outcome(float(value), 2, None))
        expected_total += stats.requests
        directory.write_window(1000.0 + second, 1.0, {stats.name: stats}, users=4)
    directory.close()

    with (tmp_path / "timeseries.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [int(r["requests"]) for r in rows] == [50, 100, 150]
    assert [float(r["time_s"]) for r in rows] == [0.0, 1.0, 2.0]
    assert all(r["users"] == "4" and r["endpoint"] == "bert_qa [grpc]" for r in rows)
    assert float(rows[2]["throughput_infer_per_s"]) == 300.0
    assert float(rows[0]["p50_us"]) == pytest.approx(124, abs=1)

    log = tmp_path / "hdr" / "bert_qa_grpc.hlog"
    reader = HistogramLogReader(str(log), new_histogram())
    total = HdrHistogram(1, 600_000_000, 3)
    intervals = 0
    while (interval := reader.get_next_interval_histogram()) is not None:
        total.add(interval)
        intervals += 1
    reader.close()
    assert intervals == 3
    assert total.get_total_count() == expected_total
    assert total.get_max_value() == pytest.approx(249, abs=1)
    assert "#[StartTime: 1000.000 (seconds since epoch)" in log.read_text()


def test_a_window_before_the_first_user_count_takes_the_next_one():
    clock = FakeClock(1000.0)
    sink = ListSink()
    aggregator = RunAggregator(window_s=1.0, grace_s=0.0, sink=sink, clock=clock)
    recorder = WindowRecorder(window_s=1.0, clock=clock)
    clock.now = 1000.5
    recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    clock.now = 1001.2  # the run loop notes users only after the first window has passed
    aggregator.note_users(3)
    aggregator.merge(recorder.drain())
    aggregator.close_windows(final=True)
    assert [(row[0], row[2]) for row in sink.rows] == [(1000.0, 3)]


def test_windows_in_which_nothing_completed_are_written_as_zero_rows():
    # A frozen server: requests complete at 1000 and 1004 only; 1001-1003 and the end are an outage.
    clock = FakeClock(1000.2)
    sink = ListSink()
    aggregator = RunAggregator(window_s=1.0, grace_s=0.0, sink=sink, clock=clock, started_s=999.7)
    recorder = WindowRecorder(window_s=1.0, clock=clock)
    recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    clock.now = 1004.5
    recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    aggregator.merge(recorder.drain())
    clock.now = 1005.1
    aggregator.close_windows()
    assert [(row[0], row[1]) for row in sink.rows] == [
        (999.0, {"m [http]": 0}),
        (1000.0, {"m [http]": 1}),
        (1001.0, {"m [http]": 0}),
        (1002.0, {"m [http]": 0}),
        (1003.0, {"m [http]": 0}),
        (1004.0, {"m [http]": 1}),
    ]
    clock.now = 1009.0  # the server stays frozen until the run stops at 1007.5
    aggregator.close_windows(final=True, end_s=1007.5)
    assert [row[0] for row in sink.rows][6:] == [1005.0, 1006.0, 1007.0]
    assert all(row[1] == {"m [http]": 0} for row in sink.rows[6:])


def test_a_window_with_no_success_has_no_latency_in_timeseries(tmp_path):
    directory = RunDirectory(tmp_path, started_at=1000.0)
    failed = EndpointStats("m [http]", "m", "http")
    failed.record(request_outcome(100.0, 1, "connection refused"))
    directory.write_window(1000.0, 1.0, {failed.name: failed}, users=1)
    directory.write_window(1001.0, 1.0, {failed.name: EndpointStats("m [http]", "m", "http")}, users=1)
    directory.close()
    with (tmp_path / "timeseries.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [(r["requests"], r["failures"], r["throughput_rps"]) for r in rows] == [("1", "1", "1.0"), ("0", "0", "0.0")]
    assert all(r["p50_us"] == r["p99_us"] == r["max_us"] == "" for r in rows)  # not 0 µs: nothing was measured


def test_users_by_class_are_noted_beside_the_total_and_written_per_window(tmp_path):
    """`users` is the total over the user classes: each class's count goes beside it."""
    clock = FakeClock(1000.5)
    sink = ListSink()
    aggregator = RunAggregator(window_s=1.0, grace_s=0.0, sink=sink, clock=clock)
    recorder = WindowRecorder(window_s=1.0, clock=clock)
    recorder.record(RequestOutcome("m [http]", "m", "http", 100.0, 1, None))
    aggregator.note_users(8, by_class={"ResNetHttpUser": 4, "BertQAHttpUser": 4})
    aggregator.merge(recorder.drain())
    aggregator.close_windows(final=True)
    assert sink.rows[0][2] == 8 and sink.by_class == [{"ResNetHttpUser": 4, "BertQAHttpUser": 4}]

    directory = RunDirectory(tmp_path, started_at=1000.0)
    stats = EndpointStats("m [http]", "m", "http")
    stats.record(request_outcome(100.0, 1, None))
    directory.write_window(1000.0, 1.0, {stats.name: stats}, users=8, users_by_class=sink.by_class[0])
    directory.write_window(1001.0, 1.0, {stats.name: stats}, users=3)  # a sink without the split
    directory.close()
    with (tmp_path / "timeseries.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [row["users_by_class"] for row in rows] == ["BertQAHttpUser=4;ResNetHttpUser=4", ""]


def test_refused_requests_put_no_bytes_on_the_wire_but_sent_ones_do():
    stats = EndpointStats("m [http]", "m", "http")
    stats.record(request_outcome(500.0, 1, None, sent_bytes=600, received_bytes=80))
    stats.record(
        request_outcome(500.0, 1, "connection refused", sent_bytes=600, received_bytes=0)
    )  # never left the host
    stats.record(
        request_outcome(500.0, 1, "invalid request: HTTP 400", sent_bytes=600, received_bytes=40)
    )  # sent, and answered
    stats.record(request_outcome(500.0, 1, "interrupted", sent_bytes=600, received_bytes=0))  # sent, cut at the stop
    assert (stats.bytes_sent, stats.bytes_received) == (1800, 120)


def _histograms_in(*containers) -> set[int]:
    """ids of the HdrHistograms held by EndpointStats in these {name: stats} dicts."""
    held = set()
    for endpoints in containers:
        for stats in endpoints.values():
            held.update(id(h) for h in (stats.histogram, stats.uncorrected) if h is not None)
    return held


def test_histograms_the_master_is_done_with_are_freed_at_once_not_at_a_full_collection():
    """hdrh's HdrHistogram and its encoder refer to each other, so a dropped histogram (a
    decoded report, a merged window) waited for the garbage collector's rare full collection:
    a 30-minute soak's master grew by 85 MB, tracemalloc naming new_histogram's counts arrays.
    Whatever the recorders and the aggregator drop must be freed by reference counting."""
    clock = FakeClock(1000.0)
    aggregator = RunAggregator(window_s=1.0, grace_s=3.0, sink=ListSink(), clock=clock)
    workers = [WindowRecorder(window_s=1.0, clock=clock) for _ in range(2)]
    gc.collect()
    gc.disable()  # as between two full collections
    try:
        for second in range(10):
            for tick in range(3):  # a report every 3 s, as Locust's workers send
                clock.now = 1000.0 + 3 * second + tick + 0.5
                for worker in workers:
                    for _ in range(5):  # open loop: a corrected and an uncorrected histogram
                        worker.record(RequestOutcome("m [http]", "m", "http", 500.0, 1, None, uncorrected_us=400.0))
            for worker in workers:
                aggregator.merge(worker.drain())
            aggregator.close_windows()
        live = {id(o) for o in gc.get_objects() if isinstance(o, HdrHistogram)}
        held = _histograms_in(aggregator.totals, aggregator.last_window, *aggregator.open.values())
        held.add(id(aggregator.adder.scratch))  # the merge's one reused decode buffer
        assert len(live) == len(held), f"{len(live)} histograms alive, {len(held)} held by the aggregator"
    finally:
        gc.enable()


def test_a_released_window_is_still_readable_and_can_be_merged_from():
    """What the aggregator releases may still be read by whoever held it (the live view, a window
    listener): its percentiles, and merging it into another."""
    stats = EndpointStats("m [http]", "m", "http")
    for value in known_latencies(2_000):
        stats.record(request_outcome(float(value), 1, None, uncorrected_us=float(value) / 2))
    summary = stats.latency_summary_us()
    stats.release()
    assert stats.latency_summary_us() == summary
    total = EndpointStats("m [http]", "m", "http")
    total.merge(stats)
    assert (total.requests, total.latency_summary_us()) == (stats.requests, summary)


def _state(histogram: HdrHistogram) -> tuple:
    return list(histogram.counts), histogram.get_total_count(), histogram.get_max_value(), histogram.encode()


@pytest.mark.parametrize("first_value", [1, 400, 900_000])
def test_merging_an_encoded_histogram_in_place_equals_decoding_and_adding_it(first_value):
    from loadtests.recording.histogram_merge import EncodedAdder

    adder = EncodedAdder()
    rng = np.random.default_rng(first_value)
    incoming = [new_histogram() for _ in range(4)]
    for index, histogram in enumerate(incoming):
        histogram.record_value(first_value)
        for value in rng.lognormal(np.log(300 * (index + 1)), 0.8, 2_000):
            histogram.record_value(max(1, round(value)))
    incoming.append(new_histogram())  # an empty window (a worker that only saw failures)
    slow, fast = [new_histogram(), new_histogram()], [new_histogram(), new_histogram()]
    slow[1].record_value(5)
    fast[1].record_value(5)  # one target empty, one not
    for histogram in incoming:
        encoded = histogram.encode().decode("ascii")
        for target in slow:
            target.add(HdrHistogram.decode(encoded.encode("ascii")))
        adder.add(encoded, fast)
    for a, b in zip(slow, fast, strict=True):
        assert _state(a) == _state(b)
    # The smallest value, which hdrh's add turns to 0 when it adds an empty histogram.
    smallest = min(h.get_min_value() for h in incoming if h.get_total_count())
    assert [h.get_min_value() for h in fast] == [smallest, min(smallest, 5)]
    assert not any(adder.scratch.counts)  # the reused buffer is left empty


def test_the_aggregator_merges_exactly_what_the_workers_recorded():
    clock = FakeClock()
    workers = [WindowRecorder(window_s=1.0, clock=clock) for _ in range(3)]
    expected = EndpointStats("m [grpc]", "m", "grpc")
    values = known_latencies(3_000)
    for index, value in enumerate(values):
        clock.now = 1_700_000_000.0 + index / 1000
        failure = "timeout" if index % 31 == 0 else None
        args = (float(value), 1 + index % 8, failure, float(value) * 0.9, index % 7 == 0, 100 + index, 7)
        workers[index % 3].record(RequestOutcome("m [grpc]", "m", "grpc", *args))
        expected.record(request_outcome(*args))
    aggregator = RunAggregator(clock=clock)
    for worker in workers:
        aggregator.merge(worker.drain())
    total = aggregator.totals["m [grpc]"]
    fields = ("requests", "inferences", "failures", "batch_sizes", "late", "dropped", "bytes_sent", "bytes_received")
    assert [getattr(total, f) for f in fields] == [getattr(expected, f) for f in fields]
    assert list(total.histogram.counts) == list(expected.histogram.counts)
    assert list(total.uncorrected.counts) == list(expected.uncorrected.counts)
    assert total.latency_summary_us() == expected.latency_summary_us()
    windows = [stats for window in aggregator.open.values() for stats in window.values()]
    assert sum(w.requests for w in windows) == expected.requests
    assert sum(w.histogram.get_total_count() for w in windows) == expected.histogram.get_total_count()
