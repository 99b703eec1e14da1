"""Percentile confidence intervals (loadtests/run_format/confidence.py) and `@95%` SLO gates on them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from loadtests.recording.histograms import EndpointStats, clamp_us
from loadtests.recording.run_dir import endpoint_json
from loadtests.run_format.confidence import min_requests, not_enough_note, percentile_bounds_us, rank_bounds
from loadtests.run_format.hdr import new_histogram, summarise_us
from tests.helpers import request_outcome

MEAN_US = 10_000.0  # exponential latencies, mean 10 ms
TRUE_P99_US = -math.log(0.01) * MEAN_US  # 46,051.7 µs


def exponential_histogram(rng: np.random.Generator, n: int):
    histogram = new_histogram()
    for value in rng.exponential(MEAN_US, n):
        histogram.record_value(clamp_us(value))
    return histogram


def test_the_p99_interval_covers_the_true_p99_in_95_percent_of_trials():
    rng = np.random.default_rng(20261123)
    # The recorder stores whole microseconds (clamp_us rounds), so the truth it can hold is the
    # rounded one; HDR's 3-digit buckets are handled by the bounds themselves (bucket edges).
    truth = round(TRUE_P99_US)
    covered = point_hits = 0
    widths = []
    trials = 1000
    for _ in range(trials):
        histogram = exponential_histogram(rng, 2000)
        lower, upper = percentile_bounds_us(histogram, 0.95)["p99"]
        covered += lower <= truth <= upper
        widths.append(upper - lower)
        # The point estimate alone, as an "interval" of width 0 at its bucket: the same check
        # misses it almost always, so this test can fail.
        p99 = summarise_us(histogram)["p99"]
        point_hits += histogram.get_lowest_equivalent_value(int(p99)) <= truth <= p99
    # A 95 % interval covers in 95 % of trials on average: over 1,000 seeded trials the share
    # itself varies by about sqrt(0.95 x 0.05 / 1000) = 0.7 %, so allow three of those (another
    # seed gave 0.948), while an interval that covered like the point estimate would still fail.
    assert covered / trials >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials), (covered, trials)
    assert point_hits / trials < 0.2, point_hits
    # Not trivially wide: ranks 1971..1989 of 2000 span roughly 36-62 ms here.
    assert np.median(widths) < 0.6 * TRUE_P99_US


def test_a_narrower_confidence_covers_less():
    rng = np.random.default_rng(7)
    truth = round(TRUE_P99_US)
    covered = sum(
        lower <= truth <= upper
        for lower, upper in (percentile_bounds_us(exponential_histogram(rng, 2000), 0.5)["p99"] for _ in range(300))
    )
    assert 0.35 < covered / 300 < 0.75  # about 50 %: the coverage follows the confidence asked for


def test_ranks_follow_the_binomial_distribution():
    assert rank_bounds(2000, 0.99, 0.95) == (1971, 1989)
    assert rank_bounds(1000, 0.999, 0.95) == (997, None)  # the largest of 1,000 is not above p99.9 often enough
    assert min_requests(0.999, 0.95) == 3688
    assert rank_bounds(3688, 0.999, 0.95)[1] == 3688
    assert rank_bounds(3687, 0.999, 0.95)[1] is None
    assert rank_bounds(0, 0.5) == (None, None)
    assert not_enough_note("p99.9", 0.95) == "not enough requests for p99.9 at 95 % (needs 3,688)"
    with pytest.raises(ValueError):
        rank_bounds(10, 0.5, 1.0)


def test_bounds_hold_the_point_estimate_and_are_null_when_too_few():
    stats = EndpointStats("m [http]", "m", "http")
    for value in np.random.default_rng(3).exponential(MEAN_US, 1000):
        stats.record(request_outcome(float(value), 1, None))
    entry = endpoint_json(stats, 10.0)
    assert entry["confidence"] == 0.95
    ci = entry["latency_ci_us"]
    assert set(ci) == {"p50", "p90", "p95", "p99", "p99.9"}
    for key in ("p50", "p90", "p95", "p99"):
        lower, upper = ci[key]
        assert lower <= entry["latency_us"][key] <= upper
    assert ci["p99.9"][1] is None and ci["p99.9"][0] is not None
    assert endpoint_json(EndpointStats("e [http]", "e", "http"), 10.0)["latency_ci_us"] == {}


# -- `@95%` SLO gates ------------------------------------------------------------------
def _gate(latencies_us, text: str, confidence_stats: bool = True):
    from loadtests.run_format.slo import evaluate, parse_slo

    stats = EndpointStats("m [http]", "m", "http")
    for latency in latencies_us:
        stats.record(request_outcome(float(latency), 1, None))
    entry = endpoint_json(stats, 10.0)
    histogram_for = (lambda target, variant: stats.histogram) if confidence_stats else None
    (result,) = evaluate(parse_slo(text), lambda target: entry, histogram_for)
    return result, entry


@pytest.fixture(scope="module")
def five_thousand() -> np.ndarray:
    return np.random.default_rng(11).exponential(MEAN_US, 5000)


def test_a_confident_clause_passes_on_the_upper_bound(five_thousand):
    result, entry = _gate(five_thousand, "p99<80ms@95%")
    lower, upper = entry["latency_ci_us"]["p99"]
    assert upper < 80_000
    assert (result.verdict, result.passed) == ("pass", True)
    assert result.bounds == pytest.approx((lower / 1000, upper / 1000))


def test_a_confident_clause_fails_on_the_lower_bound(five_thousand):
    result, entry = _gate(five_thousand, "p99<20ms@95%")
    assert entry["latency_ci_us"]["p99"][0] >= 20_000
    assert (result.verdict, result.passed) == ("fail", False)


def test_a_limit_inside_the_interval_is_inconclusive(five_thousand):
    lower, upper = _gate(five_thousand, "p99<1s@95%")[1]["latency_ci_us"]["p99"]
    limit_ms = (lower + upper) / 2 / 1000
    result, entry = _gate(five_thousand, f"p99<{limit_ms:.3f}ms@95%")
    assert entry["latency_us"]["p99"] < upper
    assert (result.verdict, result.passed) == ("inconclusive", False)
    assert "INCONCLUSIVE" in _table(result)
    # Without @, the same limit is judged on the point estimate alone, as before.
    plain, _ = _gate(five_thousand, f"p99<{limit_ms:.3f}ms")
    assert plain.verdict in ("pass", "fail") and plain.bounds is None


def test_too_few_requests_say_so_instead_of_passing(five_thousand):
    result, entry = _gate(five_thousand[:1000], "p99.9<10s@95%")
    assert entry["latency_ci_us"]["p99.9"][1] is None
    assert result.verdict == "inconclusive" and not result.passed
    assert "not enough requests for p99.9 at 95 % (needs 3,688)" in result.message
    # ... but an interval whose lower bound is already past the limit is a failure, known.
    failed, _ = _gate(five_thousand[:1000], "p99.9<1ms@95%")
    assert failed.verdict == "fail"


def test_other_confidences_come_from_the_histogram_or_are_not_measured(five_thousand):
    wide, entry = _gate(five_thousand, "p99<80ms@99.9%")
    narrow, _ = _gate(five_thousand, "p99<80ms@90%")
    assert wide.bounds[0] < narrow.bounds[0] and wide.bounds[1] > narrow.bounds[1]
    # summary.json alone holds the 95 % interval: another confidence needs the histograms.
    from_summary, _ = _gate(five_thousand, "p99<80ms@95%", confidence_stats=False)
    assert from_summary.bounds == pytest.approx(tuple(v / 1000 for v in entry["latency_ci_us"]["p99"]))
    missing, _ = _gate(five_thousand, "p99<80ms@99%", confidence_stats=False)
    assert missing.verdict == "inconclusive" and "99 %" in missing.message


def _table(result) -> str:
    from loadtests.run_format.slo import format_table

    return format_table([result])


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        ("mlperf-resnet50", "p99<=15ms@98%"),
        ("mlperf-bert", "p99<=130ms@98%"),
        ("MLPerf-BERT, fail_ratio<1%", "p99<=130ms@98%"),
    ],
)
def test_mlperf_presets_expand(text, expanded):
    from loadtests.run_format.slo import parse_slo

    clause = parse_slo(text)[0]
    assert (clause.metric, clause.op, clause.threshold, clause.unit, clause.confidence) == (
        "p99",
        "<=",
        float(expanded.split("=")[1].split("ms")[0]),
        "ms",
        0.98,
    )
    assert clause.text == text.split(",")[0].strip()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("p99<5ms@", "confidence"),
        ("p99<5ms@100%", "between 0 and 100 %"),
        ("p99<5ms@0%", "between 0 and 100 %"),
        ("max<5ms@95%", "applies only to percentiles"),
        ("fail_ratio<1%@95%", "applies only to percentiles"),
        ("p99<5ms@95", "a percentage"),
    ],
)
def test_bad_confidences_say_why(text, why):
    from loadtests.run_format.slo import SloError, parse_slo

    with pytest.raises(SloError, match=why):
        parse_slo(text)


def test_console_table_shows_the_p99_interval(capsys, five_thousand):
    from loadtests.recording.console import print_exact_summary
    from loadtests.recording.histograms import RunTotals
    from loadtests.recording.run_dir import totals_json

    many, few = EndpointStats("many [http]", "m", "http"), EndpointStats("few [grpc]", "m", "grpc")
    for index, value in enumerate(five_thousand):
        many.record(request_outcome(float(value), 1, None))
        if index < 100:
            few.record(request_outcome(float(value), 1, None))
    print_exact_summary(totals_json(RunTotals.of({"many [http]": many, "few [grpc]": few}), 10.0)["endpoints"])
    out = capsys.readouterr().out
    lower, upper = many.latency_ci_us()["p99"]
    assert f"{lower / 1000:.3f}-{upper / 1000:.3f}" in out.splitlines()[3]
    assert out.splitlines()[2].rstrip().endswith("too few requests")  # 100 < 368 requests for p99 at 95 %
    assert "p99 interval ms" in out and "95 % confidence" in out


def test_web_ui_row_has_the_p99_interval(five_thousand):
    from loadtests.run.live_snapshot import LiveEndpoint, LiveSnapshot

    stats = EndpointStats("m [http]", "m", "http")
    for value in five_thousand:
        stats.record(request_outcome(float(value), 1, None))
    (row,) = LiveSnapshot(endpoints=[LiveEndpoint.of(stats, None, 1.0)]).table_rows()
    lower, upper = stats.latency_ci_us()["p99"]
    assert row["p99_interval_ms"] == f"{lower / 1000:.3f}-{upper / 1000:.3f}"
    assert lower / 1000 <= row["p99_ms"] <= upper / 1000
