"""The request path's recording: latencies held in a list and folded into the HDR histograms in
one numpy pass give exactly what hdrh's record_value gives one by one."""

from __future__ import annotations

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from loadtests.clients.outcome import RequestOutcome
from loadtests.recording.batched_hdr import counts_below, record_values
from loadtests.recording.histograms import FOLD_EVERY, EndpointStats, clamp_us
from loadtests.recording.windows import WindowRecorder
from loadtests.run_format.hdr import HIGHEST_US, new_histogram
from tests.helpers import request_outcome

# Rounding ties, bucket edges (the sub-bucket count is 2048: values double their step there),
# and both ends of the range (clamped, not lost).
EDGES = [0.0, 0.2, 0.5, 1.0, 1.5, 2.5, 1023.5, 2047.0, 2047.5, 2048.0, 2049.0, 4095.5, 4096.0, 65_535.4]
EDGES += [1e6 + 0.5, HIGHEST_US - 0.4, HIGHEST_US + 1.0, 1e12]


def latencies(count: int = 30_000, seed: int = 7) -> list[float]:
    """Generated floats in µs: a sub-millisecond body, a long tail, and the edge values."""
    rng = np.random.default_rng(seed)
    body = rng.lognormal(mean=np.log(300), sigma=0.6, size=count)
    tail = rng.uniform(5_000, 2_000_000, size=count // 50)
    return [*EDGES, *body.tolist(), *tail.tolist()]


def state(histogram: HdrHistogram) -> tuple:
    return list(histogram.counts), histogram.get_total_count(), histogram.get_min_value(), histogram.get_max_value()


def test_record_values_equals_record_value_one_by_one():
    values = latencies()
    one_by_one, batched = new_histogram(), new_histogram()
    for value in values:
        one_by_one.record_value(clamp_us(value))
    record_values(batched, values[:1000])  # in two passes: a fold adds to what is there
    record_values(batched, values[1000:])
    assert state(batched) == state(one_by_one)
    assert batched.encode() == one_by_one.encode()


def test_counts_below_equal_hdrhs_own_iteration_and_never_count_a_bucket_the_bound_falls_in():
    histogram = new_histogram()
    record_values(histogram, latencies())
    # Bounds at bucket edges and inside buckets (above 2048 µs a bucket holds 2 or more values).
    bounds = [1.0, 300.0, 2047.0, 2048.0, 2049.0, 4096.0, 4097.0, 1e3, 1e6, 64e6, HIGHEST_US]
    expected = [0] * len(bounds)
    for item in histogram.get_recorded_iterator():
        highest = histogram.get_highest_equivalent_value(item.value_iterated_to)
        for index, bound in enumerate(bounds):
            expected[index] += item.count_at_value_iterated_to if highest < bound else 0
    assert counts_below(histogram, bounds) == expected
    assert 0 < expected[1] < expected[-2] < histogram.get_total_count()
    edges = new_histogram()
    record_values(edges, [999, 1000, 1001, 4095, 4096])
    # 1000 is not below 1000; 4096's bucket, [4096, 4099], is surely below 4100 only.
    assert counts_below(edges, [1000, 1001, 4096, 4099, 4100]) == [1, 2, 4, 4, 5]


@pytest.mark.parametrize("open_loop", [False, True])
def test_held_requests_give_the_same_stats_as_recorded_ones(open_loop):
    recorded, held = EndpointStats("m [grpc]", "m", "grpc"), EndpointStats("m [grpc]", "m", "grpc")
    for index, value in enumerate(latencies(count=3_000)):
        failure = "timeout" if index % 17 == 0 else ("connection refused" if index % 23 == 0 else None)
        uncorrected = value * 0.8 if open_loop else None
        args = (value, 1 + index % 4, failure, uncorrected, index % 5 == 0, 100, 40)
        recorded.record(request_outcome(*args))
        held.hold(request_outcome(*args))
    assert held.to_message() == recorded.to_message()
    assert held.latency_summary_us() == recorded.latency_summary_us()
    assert held.uncorrected_summary_us() == recorded.uncorrected_summary_us()


def test_a_recorder_holds_latencies_until_it_is_drained():
    clock = lambda: 1_700_000_000.2  # noqa: E731
    recorder = WindowRecorder(clock=clock)
    for value in (250.4, 251.0, 1830.7):
        recorder.record(RequestOutcome("m [grpc]", "m", "grpc", value, 1, None, value - 50.0, False, 96, 64))
    (stats,) = recorder.pending[1_700_000_000].values()
    assert (stats.requests, stats.histogram.get_total_count(), len(stats.held)) == (3, 0, 3)
    (message,) = recorder.drain()
    assert message["requests"] == 3
    decoded = HdrHistogram.decode(message["histogram"].encode("ascii"))
    uncorrected = HdrHistogram.decode(message["uncorrected"].encode("ascii"))
    highest = new_histogram().get_highest_equivalent_value(1831)
    assert (decoded.get_total_count(), decoded.get_max_value()) == (3, highest)
    assert (uncorrected.get_total_count(), uncorrected.get_min_value()) == (3, 200)


def test_a_long_held_list_is_folded_on_the_way():
    stats = EndpointStats("m [http]", "m", "http")
    for _ in range(FOLD_EVERY):
        stats.hold(request_outcome(500.0, 1, None))
    assert (stats.histogram.get_total_count(), stats.held) == (FOLD_EVERY, [])
