"""Triton's server-side breakdown and metrics, against the real local Triton.

Counts are checked exactly: the requests sent here between two snapshots are the only
traffic the session's Triton sees meanwhile (tests run one at a time).
"""

from __future__ import annotations

import itertools
import math

import gevent
import pytest

from loadtests.clients.outcome import RequestOutcome
from loadtests.errors import ServerError
from loadtests.recording.histograms import EndpointStats
from loadtests.triton_stats.metrics import MetricsPoller, Sample, kept, parse, scrape
from loadtests.triton_stats.poller import ServerStatsPoller, client_answers
from loadtests.triton_stats.sampler import PeriodicSampler
from loadtests.triton_stats.statistics import (
    CLIENT_LATENCY_GRID_S,
    SnapshotSeries,
    StatsSnapshot,
    compute_delta,
    fold,
    server_stats_document,
)
from tests.helpers import http_target


# -- deltas on hand-made stats: no stats yet, versions, counter resets ---------------------
def entry(version: str, success: int, ns_each: int = 1000, executions: int | None = None, batch: int = 1) -> dict:
    executions = success if executions is None else executions
    timed = {"count": success, "ns": success * ns_each}
    return {
        "name": "m",
        "version": version,
        "inference_count": success * batch,
        "execution_count": executions,
        "inference_stats": {
            "success": {"count": success, "ns": success * ns_each * 4},
            "fail": {"count": 0, "ns": 0},
            "queue": timed,
            "compute_input": timed,
            "compute_infer": timed,
            "compute_output": timed,
        },
    }


def snapshot(time_s: float, **versions: dict) -> StatsSnapshot:
    return StatsSnapshot(time_s, {"m": {v["version"]: v for v in versions.values()}})


def test_model_without_stats_yet_counts_from_zero():
    delta = compute_delta(StatsSnapshot(0, {}), snapshot(1, v1=entry("1", 10, executions=5, batch=2)))["m"]
    assert (delta.requests, delta.executions, delta.inferences, delta.avg_batch) == (10, 5, 20, 4.0)
    assert delta.queue_us == delta.compute_infer_us == 1.0
    assert delta.request_us == 4.0


def test_versions_are_summed_and_a_new_version_counts_from_zero():
    before = snapshot(0, v1=entry("1", 10))
    after = snapshot(1, v1=entry("1", 15), v2=entry("2", 5))
    assert compute_delta(before, after)["m"].requests == 5 + 5


def test_a_counter_reset_counts_from_zero():
    delta = compute_delta(snapshot(0, v1=entry("1", 100)), snapshot(1, v1=entry("1", 7)))["m"]
    assert delta.requests == 7


def test_a_restart_mid_run_is_summed_over_both_server_lifetimes():
    # 40 requests before the restart (read at t=2), then 25 on the new server (from zero).
    series = fold(
        [
            snapshot(0, v1=entry("1", 100, ns_each=1000)),
            snapshot(2, v1=entry("1", 140, ns_each=1000)),
            snapshot(9, v1=entry("1", 10, ns_each=3000)),
            snapshot(11, v1=entry("1", 25, ns_each=3000)),
        ]
    )
    total = series.total_delta()["m"]
    assert (total.requests, total.inferences) == (40 + 25, 40 + 25)
    # Per-request times are weighted over both lifetimes: (40 x 1 + 25 x 3) / 65 µs of queue.
    assert total.queue_us == pytest.approx((40 * 1 + 25 * 3) / 65)
    assert series.restarts == [{"after_s": 2, "before_s": 9, "models": ["m"], "found_by": "counters went down"}]
    document = server_stats_document("127.0.0.1:1", ["m"], 5.0, series, [], 0, streamed=False)
    assert document["restarts"] == series.restarts
    assert document["deltas"]["total"]["m"]["requests"] == 65
    assert document["snapshot_count"] == 4


def test_no_restart_without_a_counter_going_down():
    series = fold([snapshot(0, v1=entry("1", 1)), snapshot(1, v1=entry("1", 1)), snapshot(2, v1=entry("1", 3))])
    assert series.restarts == []
    assert series.total_delta()["m"].requests == 2


def test_a_model_missing_from_the_later_snapshot_is_left_out():
    assert compute_delta(snapshot(0, v1=entry("1", 1)), StatsSnapshot(1, {})) == {}


def test_failures_and_missing_fields():
    failed = entry("1", 3)
    failed["inference_stats"]["fail"] = {"count": 2, "ns": 500}
    sparse = {"version": "1", "inference_count": 0, "execution_count": 0}  # an older Triton's answer
    delta = compute_delta(StatsSnapshot(0, {"m": {"1": sparse}}), StatsSnapshot(1, {"m": {"1": failed}}))["m"]
    assert (delta.requests, delta.failed_requests) == (3, 2)


# -- a restart the counters do not show: found from the client's answers ------------------------
# Triton killed 1 s after a snapshot of its count (1,590), started again, and read again only
# 8.5 s later, when the new server had counted 2,102 since it started: the counter went up, so only
# the client's answers show that the old server's count was lost (fresh53's drill).
KILL_SPAN = (1000.0, 1008.5)


def answered(*latencies_s: float, model: str = "m") -> dict[str, list[int]]:
    """A window's successes of `model` as the series takes them: per bound of the latency grid,
    how many answers came faster than it."""
    return {model: [sum(1 for latency in latencies_s if latency < bound) for bound in CLIENT_LATENCY_GRID_S]}


def killed_and_restarted(
    new_count: int, windows: dict[int, dict[str, list[int]]], unreachable: bool = True
) -> SnapshotSeries:
    series = SnapshotSeries()
    series.add(snapshot(KILL_SPAN[0], v1=entry("1", 1590)))
    series.add(snapshot(KILL_SPAN[1], v1=entry("1", new_count)), unreachable=unreachable)
    for start_s, successes in windows.items():
        series.client_window(start_s, start_s + 1.0, successes)
    series.settle()
    return series


def test_a_restart_whose_new_count_passed_the_old_one_is_found_from_the_clients_answers():
    # 300 answers a second, at 1 ms: up to the kill, none while down, then the new server's.
    windows = {second: answered(*[0.001] * 300) for second in (1000, 1001, 1006, 1007, 1008, 1009)}
    series = killed_and_restarted(2102, windows)
    assert series.restarts == [
        {"after_s": KILL_SPAN[0], "before_s": KILL_SPAN[1], "models": ["m"], "found_by": "client answers"}
    ]
    # The new server's count from zero, not the rise from the old one's (2,102 - 1,590 = 512).
    assert series.total_delta()["m"].requests == 2102


def test_only_an_interval_with_a_failed_snapshot_is_judged_by_the_clients_answers():
    # The same answers, with every snapshot read: no outage, so no restart (the client may send to
    # another server than the statistics are read from).
    windows = {second: answered(*[0.001] * 300) for second in (1000, 1001, 1006, 1007, 1008, 1009)}
    series = killed_and_restarted(2102, windows, unreachable=False)
    assert series.restarts == [] and series.total_delta()["m"].requests == 512


def test_a_server_that_counted_every_answer_did_not_restart():
    windows = {second: answered(*[0.001] * 300) for second in (1000, 1001, 1006, 1007, 1008, 1009)}
    series = killed_and_restarted(1590 + 1800, windows)  # a freeze: every answer counted by the same server
    assert series.restarts == []
    assert series.total_delta()["m"].requests == 1800


def test_only_answers_to_requests_sent_after_the_first_snapshot_count():
    # 2,000 answers in the window after the first snapshot, each 0.5 s long: sent before it, so
    # Triton may have counted them before it was read. Only whole windows inside the span count.
    windows = {1000: answered(*[0.5] * 2000), 1008: answered(*[0.001] * 2000)}
    series = killed_and_restarted(1590, windows)
    assert series.restarts == [] and series.total_delta()["m"].requests == 0


def test_answers_after_the_second_snapshot_was_asked_do_not_count():
    series = SnapshotSeries()
    series.add(StatsSnapshot(1000.0, {"m": {"1": entry("1", 1590)}}))
    # Asked at 1003.2, answered at 1009.5 (a slow server): a request answered at 1004 may be
    # counted after the snapshot's reading.
    series.add(StatsSnapshot(1009.5, {"m": {"1": entry("1", 1600)}}, asked_s=1003.2), unreachable=True)
    for second in range(1001, 1010):
        series.client_window(second, second + 1.0, answered(*[0.001] * (5 if second < 1003 else 300)))
    assert series.restarts == []  # judged: a window past the asking closed
    assert series.total_delta()["m"].requests == 10
    series.settle()
    assert series.restarts == []


def test_the_clients_answers_are_read_by_model_and_latency():
    endpoints = {}
    for protocol in ("http", "grpc"):
        stats = endpoints[f"m [{protocol}]"] = EndpointStats(f"m [{protocol}]", "m", protocol)
        for latency_us in (500, 1000, 3000, 20_000):  # 1 ms is not faster than 1 ms
            stats.hold(RequestOutcome(f"m [{protocol}]", "m", protocol, latency_us=latency_us, batch_size=1))
        stats.hold(RequestOutcome(f"m [{protocol}]", "m", protocol, latency_us=100, batch_size=1, failure="timeout"))
    assert client_answers(endpoints) == answered(*[0.0005, 0.001, 0.003, 0.02] * 2)


def polled_until(poller, errors: int, deadline_s: float = 30.0) -> None:
    """Until the poller has recorded `errors` failed polls: a count, not a time (fresh71 read 2
    in a fixed 0.2 s at nice 19 on a busy host); a poller that stops after its first error
    fails at the deadline."""
    waited = 0.0
    while len(poller.errors) < errors and waited < deadline_s:
        gevent.sleep(0.01)
        waited += 0.01


def test_stats_poller_records_errors_and_keeps_going(held_ports):
    poller = ServerStatsPoller(
        http_target(f"127.0.0.1:{held_ports.http}"), ["identity"], interval_s=0.05, timeout_s=0.5
    )
    poller.start()
    polled_until(poller, 3)
    assert poller.running  # still ticking after failures
    poller.stop()
    assert poller.series.count == 0
    assert len(poller.errors) >= 3
    assert "Connection refused" in poller.errors[0]["error"]
    assert poller.total_delta() == {}
    assert poller.to_json()["deltas"] == {"total": {}}


def test_samples_asked_side_by_side_are_taken_one_after_another_in_order():
    """The periodic greenlet, step boundaries (sample_soon) and a sweep's boundaries (sample_now)
    ask at any moment; one sample waits for the one in flight, so each is read and kept in turn.
    (Side by side, the one answered late was kept last: tests/system/triton_stats.) A sample
    that asks for another from inside itself (a snapshot's listener) gets it, not a deadlock."""
    log, inside, overlaps = [], [], []
    numbers = itertools.count(1)

    def sample() -> None:
        number = next(numbers)
        log.append(("asked", number))
        if inside:
            overlaps.append((inside[-1], number))  # checked below: a greenlet's assert is only printed
        inside.append(number)
        gevent.sleep(0.01)  # the answer on its way: the others get the loop
        if number == 2:
            inside.remove(number)
            sampler.sample_now()  # from inside a sample: taken at once, in this greenlet
            inside.append(number)
        inside.remove(number)
        log.append(("kept", number))

    sampler = PeriodicSampler(sample, interval_s=60)
    sampler.start()
    sampler.sample_soon()
    sampler.sample_soon()
    sampler.sample_now()
    sampler.stop()
    asked = [number for event, number in log if event == "asked"]
    kept = [number for event, number in log if event == "kept"]
    assert overlaps == [] and len(asked) == 6 and sorted(kept) == asked, (
        overlaps,
        log,
    )  # start, now (asking again), 2 soon, stop
    assert not sampler.errors


def test_metrics_poller_records_errors(held_ports):
    poller = MetricsPoller(http_target(f"127.0.0.1:{held_ports.http}"), interval_s=0.05, timeout_s=0.5)
    poller.start()
    polled_until(poller, 2)
    assert poller.running
    poller.stop()
    assert not poller.running
    assert poller.rows == [] and len(poller.errors) >= 2


# -- the exposition-format parser ---------------------------------------------------------------
EXPOSITION = r"""# HELP nv_inference_count Number of inferences performed (does not include cached requests)
# TYPE nv_inference_count counter
nv_inference_count{model="resnet50",version="1"} 1234
nv_inference_count{model="bert",version="2",} 5 1700000000123
# a free comment
   # TYPE weird gauge

nv_gpu_utilization{gpu_uuid="GPU-1"} NaN
nv_gpu_power_usage{gpu_uuid="GPU-1"} +Inf
nv_gpu_memory_used_bytes{gpu_uuid="GPU-1"} -Inf
nv_inference_queue_duration_us{ model = "say \"hi\"" , path="C:\\models\\m", note="a\nb", odd="x\y,}=" } 1.5e3
nv_cpu_utilization 0.25
nv_energy_consumption{gpu_uuid="GPU-1"}	12	-5
nv_pinned_memory_pool_used_bytes 0
"""


def test_parser_reads_the_exposition_format():
    samples = parse(EXPOSITION)
    assert samples[0] == Sample("nv_inference_count", {"model": "resnet50", "version": "1"}, 1234.0)
    assert samples[1] == Sample("nv_inference_count", {"model": "bert", "version": "2"}, 5.0, 1700000000123)
    assert math.isnan(samples[2].value)
    assert samples[3].value == math.inf and samples[4].value == -math.inf
    assert samples[5].labels == {"model": 'say "hi"', "path": "C:\\models\\m", "note": "a\nb", "odd": "x\\y,}="}
    assert samples[5].value == 1500.0
    assert samples[6] == Sample("nv_cpu_utilization", {}, 0.25)
    assert samples[7] == Sample("nv_energy_consumption", {"gpu_uuid": "GPU-1"}, 12.0, -5)
    assert [s.name for s in kept(samples)] == [s.name for s in samples[:-1]]  # pinned memory dropped
    assert (
        samples[5].labels_json == '{"model":"say \\"hi\\"","note":"a\\nb","odd":"x\\\\y,}=","path":"C:\\\\models\\\\m"}'
    )


@pytest.mark.parametrize(
    "line",
    [
        'm{a="1"',  # unterminated label set
        'm{a="1} 2',  # unterminated value
        "m{a=1} 2",  # unquoted value
        "m",  # no value
        "m 1 2 3",  # too many fields
        "m one",  # not a number
        "m 1 1.5",  # timestamps are integers
        '{a="1"} 2',  # no name
        "9m 1",  # a name cannot start with a digit
        'm{a="1"}x 2',  # junk after the labels
    ],
)
def test_parser_rejects_malformed_lines(line):
    with pytest.raises(ValueError, match="line 1"):
        parse(line)


def test_scrape_names_an_unreachable_server(held_ports):
    with pytest.raises(ServerError, match="metrics"):
        scrape(f"127.0.0.1:{held_ports.metrics}", timeout_s=1.0)
