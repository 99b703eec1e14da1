"""A streamed endpoint's response timings (recording/stream_stats.py): held per request,
shipped as a worker report, merged on the master, summarised in summary.json and judged by
the ttfr_*/gap_* SLO gates; exact, as the latencies are. No server: outcomes built here."""

from __future__ import annotations

import random

import pytest

from loadtests.clients.outcome import RequestOutcome, StreamTimings
from loadtests.recording.histogram_merge import EncodedAdder
from loadtests.recording.histograms import EndpointStats, RunTotals, add_message
from loadtests.recording.run_dir import endpoint_json, totals_json
from loadtests.run_format.confidence import percentile_bounds_us
from loadtests.run_format.hdr import new_histogram, summarise_us
from loadtests.run_format.slo import evaluate, parse_slo, resolver_for_summary

NAME = "stream_gaps [grpc]"


def _outcomes(rng: random.Random, count: int) -> list[RequestOutcome]:
    out = []
    for _ in range(count):
        responses = rng.choice((0, 1, 4))
        first = rng.uniform(9_000, 14_000) if responses else None
        gaps = tuple(rng.uniform(18_000, 25_000) for _ in range(max(responses - 1, 0)))
        final = (first or 0.0) + sum(gaps) + rng.uniform(50, 500)
        timings = StreamTimings(first, gaps, final, responses)
        out.append(RequestOutcome(NAME, "stream_gaps", "grpc", final, stream=timings))
    return out


def test_workers_timings_merge_into_the_same_exact_histograms_as_one_process():
    rng = random.Random(29)
    workers = [_outcomes(rng, 700), _outcomes(rng, 300)]
    failed = RequestOutcome(
        NAME, "stream_gaps", "grpc", 500.0, failure="server error: gRPC stream error after responses"
    )
    master = EndpointStats(NAME, "stream_gaps", "grpc")
    adder = EncodedAdder()
    for outcomes in workers:
        worker = EndpointStats(NAME, "stream_gaps", "grpc")
        for outcome in [*outcomes, failed]:
            worker.hold(outcome)
        add_message(worker.to_message(), [master], adder)
    every = [outcome.stream for outcomes in workers for outcome in outcomes]
    first, gaps = new_histogram(), new_histogram()
    for timings in every:
        if timings.first_us is not None:
            first.record_value(round(timings.first_us))
        for gap in timings.gaps_us:
            gaps.record_value(round(gap))
    summary = endpoint_json(master, 10.0)["stream"]
    assert summary["requests"] == len(every)  # the failures' timings are not counted
    assert summary["responses"] == sum(timings.responses for timings in every)
    assert summary["requests_without_response"] == sum(timings.responses == 0 for timings in every)
    assert summary["first_response_us"] == summarise_us(first)
    assert summary["gap_us"] == summarise_us(gaps)
    assert summary["final_response_us"] == endpoint_json(master, 10.0)["latency_us"]
    assert summary["responses_per_s"] == pytest.approx(summary["responses"] / 10.0, abs=1e-3)


def test_ttfr_and_gap_gates_judge_the_streamed_timings():
    stats = EndpointStats(NAME, "stream_gaps", "grpc")
    for outcome in _outcomes(random.Random(7), 200):
        stats.hold(outcome)
    summary = totals_json(RunTotals.of({NAME: stats}), 10.0)
    gap_p99 = summary["overall"]["stream"]["gap_us"]["p99"]
    clauses = parse_slo(f"ttfr_p99<14.5ms, {NAME}:gap_p99<={gap_p99 / 1e3}ms, gap_p50<18ms, ttfr_max>1s")
    assert [result.passed for result in evaluate(clauses, resolver_for_summary(summary))] == [True, True, False, False]


def test_a_run_without_streamed_requests_has_no_ttfr_to_pass_on():
    stats = EndpointStats("identity [grpc]", "identity", "grpc")
    stats.hold(RequestOutcome("identity [grpc]", "identity", "grpc", 800.0))
    summary = totals_json(RunTotals.of({"identity [grpc]": stats}), 10.0)
    assert "stream" not in summary["endpoints"][0]
    [result] = evaluate(parse_slo("ttfr_p99<200ms"), resolver_for_summary(summary))
    assert not result.passed and result.measured is None and "streamed" in result.reason


def test_ttfr_and_gap_confidence_clauses_are_judged_on_the_stream_histograms():
    """`ttfr_p99<...@95%`: the bounds are the first-response histogram's (gap_: the gaps'), from
    the run's totals at the end; without histograms (a summary.json alone) inconclusive, saying why."""
    stats = EndpointStats(NAME, "stream_gaps", "grpc")
    for outcome in _outcomes(random.Random(11), 1_000):
        stats.hold(outcome)
    summary = totals_json(RunTotals.of({NAME: stats}), 10.0)
    first = percentile_bounds_us(stats.stream.first_response, 0.95)["p99"]
    gap = percentile_bounds_us(stats.stream.gap, 0.9)["p50"]
    clauses = parse_slo(f"ttfr_p99<={first[1]:.0f}us@95%, ttfr_p99<{first[0]:.0f}us@95%, gap_p50>={gap[0]:.0f}us@90%")
    results = evaluate(clauses, resolver_for_summary(summary), RunTotals.of({NAME: stats}).histogram_for)
    assert [result.verdict for result in results] == ["pass", "fail", "pass"]
    assert [result.bounds for result in results] == [tuple(first), tuple(first), tuple(gap)]
    [alone] = evaluate(clauses[:1], resolver_for_summary(summary))
    assert alone.inconclusive and "no hdr/ stream logs" in alone.reason
