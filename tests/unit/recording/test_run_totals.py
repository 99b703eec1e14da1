"""The run's end merged once (recording/histograms.py `RunTotals`) and handed to summary.json
(run_dir.py `totals_json`), the --slo gate and the console, which read and do not merge."""

from __future__ import annotations

import random

from loadtests.clients.outcome import RequestOutcome, StreamTimings
from loadtests.recording.console import print_exact_summary
from loadtests.recording.histograms import EndpointStats, RunTotals, merge_stats
from loadtests.recording.run_dir import totals_json
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE


def _stats(name: str, model: str, protocol: str, latencies_us: list[float], failures: int = 0) -> EndpointStats:
    stats = EndpointStats(name, model, protocol)
    for latency in latencies_us:
        stats.record(RequestOutcome(name, model, protocol, latency))
    for _ in range(failures):
        stats.record(RequestOutcome(name, model, protocol, 0.0, failure="invalid request: HTTP 400"))
    return stats


def _three() -> dict[str, EndpointStats]:
    """bert_qa over HTTP and gRPC (its two endpoints' latencies apart), resnet50 over HTTP alone."""
    rng = random.Random(3)
    http = _stats("bert_qa [http]", "bert_qa", "http", [rng.uniform(900, 1100) for _ in range(400)], failures=2)
    grpc = _stats("bert_qa [grpc]", "bert_qa", "grpc", [rng.uniform(29_000, 31_000) for _ in range(100)])
    resnet = _stats("resnet50 [http]", "resnet50", "http", [rng.uniform(1400, 1600) for _ in range(50)])
    return {stats.name: stats for stats in (http, grpc, resnet)}


def test_each_target_is_read_from_one_merge():
    endpoints = _three()
    totals = RunTotals.of(endpoints)
    assert totals.overall.requests == 552 and totals.overall.failure_count == 2
    assert totals.overall.latency_summary_us() == merge_stats(endpoints.values(), "overall").latency_summary_us()
    bert = merge_stats([endpoints["bert_qa [http]"], endpoints["bert_qa [grpc]"]], "bert_qa")
    assert totals.stats_for("bert_qa").latency_summary_us() == bert.latency_summary_us()
    assert totals.stats_for("resnet50") is endpoints["resnet50 [http]"]  # one endpoint: itself, not a copy
    assert totals.stats_for("bert_qa [grpc]") is endpoints["bert_qa [grpc]"]
    assert totals.stats_for(None) is totals.overall
    assert totals.stats_for("bert") is None and totals.histogram_for("bert") is None
    assert list(totals.shared_models()) == ["bert_qa"]
    assert totals.histogram_for("bert_qa").get_total_count() == 500
    assert totals.histogram_for("bert_qa", "gap") is None  # nothing streamed


def test_a_streamed_models_first_response_and_gap_histograms_are_merged_across_its_endpoints():
    endpoints = {}
    for protocol, first_us in (("grpc", 10_000.0), ("http", 40_000.0)):
        stats = EndpointStats(f"stream [{protocol}]", "stream", protocol)
        for _ in range(20):
            stats.hold(
                RequestOutcome(
                    stats.name, "stream", protocol, 50_000.0, stream=StreamTimings(first_us, (5_000.0,), 50_000.0, 2)
                )
            )
        endpoints[stats.name] = stats
    totals = RunTotals.of(endpoints)
    first = totals.histogram_for("stream", "first_response")
    assert first.get_total_count() == 40
    assert first.get_value_at_percentile(25) < 11_000 < 39_000 < first.get_value_at_percentile(75)
    assert totals.histogram_for(None, "gap").get_total_count() == 40


def test_the_summarys_merged_entries_carry_the_merged_percentiles_and_their_intervals():
    totals = RunTotals.of(_three())
    summary = totals_json(totals, 10.0)
    assert [entry["name"] for entry in summary["endpoints"]] == ["bert_qa [grpc]", "bert_qa [http]", "resnet50 [http]"]
    overall, bert = summary["overall"], summary["model_totals"]["bert_qa"]
    assert (overall["requests"], overall["failures"], bert["requests"]) == (552, 2, 502)
    assert overall["latency_us"] == totals.overall.latency_summary_us()
    assert overall["latency_ci_us"] == totals.overall.latency_ci_us(DEFAULT_CONFIDENCE)
    assert bert["latency_ci_us"] == totals.stats_for("bert_qa").latency_ci_us(DEFAULT_CONFIDENCE)
    assert bert["endpoints"] == ["bert_qa [grpc]", "bert_qa [http]"]
    assert "model_totals" not in totals_json(RunTotals.of({"a [http]": _stats("a [http]", "a", "http", [1.0])}), 1.0)


def test_the_console_prints_the_summarys_numbers(capsys):
    """The console reads summary.json's entries: what it prints is what the file holds."""
    summary = totals_json(RunTotals.of(_three()), 10.0)
    entry = summary["endpoints"][0]
    entry["throughput_rps"], entry["latency_us"]["p99"] = 123.4, 98_765.0  # not what the histograms say
    print_exact_summary(summary["endpoints"])
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(entry["name"]))
    assert "123.4" in row.split() and "98.765" in row.split()


def test_releasing_the_merged_totals_leaves_the_endpoints_own_histograms_whole():
    """The web UI's diagnosis builds a provisional summary every 15 s and releases its merges; the
    endpoints' histograms (a one-endpoint model's is the endpoint's) go on being recorded and shipped."""
    endpoints = _three()
    totals = RunTotals.of(endpoints)
    totals.release()
    for stats in endpoints.values():
        assert EndpointStats.from_message(stats.to_message()).requests == stats.requests
    assert totals.overall.latency_summary_us()["p50"] > 0  # a released merge is still readable
