"""Triton's server-side breakdown and metrics, against the real local Triton.

Counts are checked exactly: the requests sent here between two snapshots are the only
traffic the session's Triton sees meanwhile (tests run one at a time).
"""

from __future__ import annotations

import math

import gevent
import pytest

from loadtests.errors import ServerError
from loadtests.triton_stats.metrics import MetricsPoller, Sample, kept, parse, scrape
from loadtests.triton_stats.poller import ServerStatsPoller
from loadtests.triton_stats.statistics import StatsSnapshot, compute_delta, fold, server_stats_document
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
    assert series.restarts == [{"after_s": 2, "before_s": 9, "models": ["m"]}]
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


def test_stats_poller_records_errors_and_keeps_going(held_ports):
    poller = ServerStatsPoller(
        http_target(f"127.0.0.1:{held_ports.http}"), ["identity"], interval_s=0.05, timeout_s=0.5
    )
    poller.start()
    gevent.sleep(0.2)
    assert poller.running  # still ticking after failures
    poller.stop()
    assert poller.series.count == 0
    assert len(poller.errors) >= 3
    assert "Connection refused" in poller.errors[0]["error"]
    assert poller.total_delta() == {}
    assert poller.to_json()["deltas"] == {"total": {}}


def test_metrics_poller_records_errors(held_ports):
    poller = MetricsPoller(http_target(f"127.0.0.1:{held_ports.http}"), interval_s=0.05, timeout_s=0.5)
    poller.start()
    gevent.sleep(0.12)
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
