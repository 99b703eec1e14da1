"""The capacity search's rate choice and early-failure rule, and its files (pure)."""

from __future__ import annotations

import csv
import json

import pytest

from loadtests.clients.outcome import StreamTimings
from loadtests.levels.capacity_files import write_capacity_files
from loadtests.levels.capacity_levels import CapacityController
from loadtests.levels.capacity_search import CapacitySearch, clearly_failing, probe_users
from loadtests.recording.histograms import EndpointStats
from loadtests.run_format.slo import parse_slo
from tests.helpers import request_outcome


def run_search(search: CapacitySearch, capacity: float) -> list[float]:
    """Drive the search against a server that meets the SLO up to `capacity` requests/s."""
    rates = []
    while (rate := search.next_rate()) is not None:
        rates.append(rate)
        search.record(rate, passed=rate <= capacity)
        assert len(rates) < 50, rates
    return rates


def test_growth_then_bisection_brackets_the_capacity_within_the_precision():
    search = CapacitySearch(start_rate=10.0, precision=0.05)
    rates = run_search(search, capacity=97.0)
    assert rates[:5] == [10.0, 20.0, 40.0, 80.0, 160.0]  # doubling until the first failure
    passing, failing = search.bracket
    assert passing <= 97.0 < failing
    assert failing <= passing * 1.05
    # A linear sweep from 10 in steps of 5 % of the capacity needs (97 - 10) / 4.85 + 1 levels.
    assert len(rates) < (97.0 - 10.0) / (0.05 * 97.0) + 1


def test_a_failing_start_shrinks_until_a_level_passes_or_gives_up():
    search = CapacitySearch(start_rate=100.0)
    run_search(search, capacity=30.0)
    passing, failing = search.bracket
    assert passing <= 30.0 < failing <= passing * 1.05
    hopeless = CapacitySearch(start_rate=1.0, min_rate=0.1)
    run_search(hopeless, capacity=0.0)
    assert hopeless.bracket == (None, min(t.rate for t in hopeless.tried))
    assert min(t.rate for t in hopeless.tried) >= 0.1


def test_a_pass_above_a_failure_does_not_move_the_bracket_up():
    search = CapacitySearch(start_rate=10.0)
    for rate, passed in ((10, True), (20, True), (40, False), (30, True), (35, False), (60, True)):
        search.record(rate, passed)
    assert search.bracket == (30, 35)


@pytest.mark.parametrize("bad", [{"start_rate": 0}, {"start_rate": 1, "growth": 1}, {"start_rate": 1, "precision": 0}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        CapacitySearch(**bad)


def window(p99_ms: float, requests: int = 100, failures: int = 0, late: int = 0) -> dict:
    latency = dict.fromkeys(("p50", "p90", "p95", "p99", "p99.9", "max", "mean"), p99_ms * 1000)
    return {"requests": requests, "failures": failures, "late": late, "latency_us": latency}


def test_clearly_failing_windows_are_named_and_borderline_ones_keep_measuring():
    clauses = parse_slo("p99<50ms,fail_ratio<0.001")
    assert clearly_failing(window(60), clauses) is None  # over the limit, not far past it
    assert clearly_failing(window(151), clauses) == "p99 151.0 ms, over 3x the 50 ms limit"
    assert clearly_failing(window(10, late=90), clauses) is None  # no late_ratio clause: latency judges
    late_clauses = parse_slo("p99<50ms,late_ratio<0.1")
    assert clearly_failing(window(10, late=31), late_clauses) == "31 of 100 requests sent late"
    assert clearly_failing(window(10, late=30), late_clauses) is None  # over the limit, not 3x past it
    assert clearly_failing(window(500, requests=19), clauses) is None  # too few to judge early
    assert clearly_failing(window(10, failures=6), clauses) == "6.0% of requests failed"
    assert clearly_failing(window(10, failures=1), clauses) is None


# -- the controller (sweep levels chosen by the search), with fake windows -----------------------
def fake_window(requests: int, latency_us: float):
    from loadtests.recording.histograms import EndpointStats

    stats = EndpointStats("m [http]", "m", "http")
    for _ in range(requests):
        stats.record(request_outcome(latency_us, 1, None))
    return {stats.name: stats}


def measure_level(controller, now: float, latency_us: float, windows: int = 3):
    """Start the controller's current level at `now` and feed it windows of one latency."""
    controller.start_level(now, window_s=1.0)
    start = now + 2  # the change's window and one settling window are discarded
    result = None
    for i in range(windows + 2):
        result = controller.on_window(start - 1 + i, 1.0, fake_window(40, latency_us)) or result
        if result is not None:
            return result
    return result


def test_controller_confirms_a_failure_before_the_search_believes_it():
    from loadtests.levels.capacity_levels import CapacityController

    controller = CapacityController(CapacitySearch(start_rate=20.0), parse_slo("p99<50ms"), settle=1)
    assert measure_level(controller, 100.0, 60_000).level == 20.0  # fails (a hiccup, say)
    assert controller.levels[-1] == 20.0 and controller.search.tried == []  # measured again first
    assert measure_level(controller, 200.0, 10_000).level == 20.0  # passes the second time
    assert [t.passed for t in controller.search.tried] == [True]
    assert controller.levels[-1] == 40.0  # growth goes on
    # A window far past the limit ends the level at once (one window, not three).
    result = measure_level(controller, 300.0, 200_000)
    assert result.level == 40.0 and result.windows == 1
    assert controller.verdicts[-1]["stopped_early"].endswith("ms, over 3x the 50 ms limit")
    assert measure_level(controller, 400.0, 200_000).level == 40.0  # confirmed
    assert controller.search.bracket == (20.0, 40.0) and controller.levels[-1] == 30.0
    assert measure_level(controller, 500.0, 60_000).level == 30.0  # below the confirmed failure: again
    assert controller.levels[-1] == 30.0


def test_an_overloaded_level_stopped_early_is_not_measured_again():
    from loadtests.levels.capacity_levels import CapacityController

    controller = CapacityController(CapacitySearch(start_rate=100.0), parse_slo("p99<50ms"), settle=1)
    # 40 responses a second at a rate of 100, p99 far past the limit: overloaded, no hiccup.
    result = measure_level(controller, 100.0, 400_000)
    assert result.windows == 1 and controller.verdicts[-1]["to_confirm"] is False
    assert controller.search.bracket == (None, 100.0) and controller.levels[-1] == 50.0


@pytest.mark.parametrize(
    ("clauses", "passes"),
    [
        ("p99<50ms", True),
        ("p99<50ms@95%", True),  # judged on the level's own interval, not "no bounds": inconclusive
        ("mlperf-resnet50", True),  # p99<=15ms@98%
        ("p99<0.5ms@95%", False),
    ],
)
def test_a_level_is_judged_on_its_confidence_interval_too(clauses, passes):
    from loadtests.levels.capacity_levels import judge
    from loadtests.levels.sweep_levels import LevelResult
    from loadtests.recording.histograms import EndpointStats

    stats = EndpointStats("m [http]", "m", "http")
    for i in range(2000):
        stats.record(request_outcome(900.0 + i % 200, 1, None))  # 0.9-1.1 ms
    level = LevelResult(100.0, "rate", True, 3, 0.0, 20.0, stats, {})
    passed, results = judge(level, parse_slo(clauses))
    assert passed is passes, [(r.clause.text, r.verdict, r.reason) for r in results]


# -- certain verdicts: a level ends when more requests cannot change it ---------------------------
def mixed_window(latencies_us: list[float]):
    from loadtests.recording.histograms import EndpointStats

    stats = EndpointStats("m [http]", "m", "http")
    for latency in latencies_us:
        stats.record(request_outcome(latency, 1, None))
    return {stats.name: stats}


def feed(controller, rate_windows: list[list[float]], now: float = 100.0):
    """Start the current level at `now` and feed one window per list of latencies; the result
    and how many windows the level took (None if it has not ended)."""
    controller.start_level(now, window_s=1.0)
    start = now + 2
    for i, latencies in enumerate(rate_windows):
        result = controller.on_window(start - 1 + i, 1.0, mixed_window(latencies))
        if result is not None:
            return result, i
    return None, len(rate_windows) - 1


def test_a_level_whose_bound_is_past_the_limit_fails_before_it_is_stable():
    from loadtests.levels.capacity_levels import CapacityController

    controller = CapacityController(CapacitySearch(start_rate=400.0), parse_slo("p99<50ms"), settle=1, max_trials=10)

    # 400 requests a window, 3 % of them at 80 ms (over the limit, under 3x it): not clearly
    # failing, and the p95 swings between 5 and 25 ms (never stable), but p99's lower bound is over 50 ms.
    def window(w: int) -> list[float]:
        return [80_000.0] * 12 + [5_000.0 if w % 2 else 25_000.0] * 388

    result, _ = feed(controller, [window(w) for w in range(11)])
    assert result is not None and result.windows == 2  # 2 s of windows decide it (800 requests), not 10
    verdict = controller.verdicts[-1]
    assert verdict["passed"] is False and verdict["stopped_early"] is None
    assert verdict["stopped_because"].startswith("certain: p99 at least")


def test_a_level_under_the_limit_beyond_doubt_passes_without_waiting_for_stability():
    from loadtests.levels.capacity_levels import CapacityController

    controller = CapacityController(CapacitySearch(start_rate=400.0), parse_slo("p99<50ms"), settle=1, max_trials=10)
    # p95 alternates between 4 and 20 ms (never stable within 10 %), p99 far under 50 ms.
    windows = [[4_000.0 if (i + w) % 3 else 20_000.0 for i in range(400)] for w in range(11)]
    result, _ = feed(controller, windows)
    assert result is not None and result.windows == 2
    assert controller.verdicts[-1]["passed"] is True
    assert controller.verdicts[-1]["stopped_because"].startswith("certain: p99 at most")
    assert result.stats.requests == 800  # every window it measured


def test_a_warm_up_spike_does_not_decide_a_level():
    """Without the minimum count, the first window (3 of 40 requests at 300 ms: p99's lower
    bound far over 50 ms) would fail a level that meets the SLO in steady state."""
    from loadtests.levels.capacity_levels import CapacityController
    from loadtests.levels.capacity_search import MIN_CERTAIN_REQUESTS, certain_verdict

    first = [300_000.0] * 3 + [10_000.0] * 37
    (stats,) = mixed_window(first).values()
    entry = {"requests": 40, "failures": 0, "duration_s": 1.0, "latency_us": stats.latency_summary_us()}
    spike_alone = certain_verdict(
        {**entry, "requests": MIN_CERTAIN_REQUESTS, "duration_s": 5.0}, stats.histogram_of, parse_slo("p99<50ms"), 40
    )
    assert spike_alone is not None and spike_alone.passed is False  # what the minimum count prevents
    controller = CapacityController(CapacitySearch(start_rate=40.0), parse_slo("p99<50ms"), settle=1, max_trials=10)
    result, _ = feed(controller, [first] + [[10_000.0] * 40] * 9)
    assert result is not None and controller.verdicts[-1]["passed"] is True, controller.verdicts[-1]
    assert controller.verdicts[-1]["stopped_because"] == "stable"  # judged on its last 3 windows


def test_a_limit_at_the_models_own_p99_runs_to_max_trials_and_converges():
    """Bounds that straddle the limit cannot decide: the level runs on to max_trials (it is
    stable long before), then is judged on its point estimate, and the search goes on."""
    from loadtests.levels.capacity_levels import CapacityController

    latencies = [1_000.0 * (1 + i % 100) for i in range(400)]  # 1..100 ms, p99 = 99 ms
    controller = CapacityController(CapacitySearch(start_rate=400.0), parse_slo("p99<99ms"), settle=1, max_trials=6)
    result, _ = feed(controller, [latencies] * 7)  # the first window settles
    assert result is not None and result.windows == 6
    assert controller.verdicts[-1]["stopped_because"] == "max_trials windows"
    assert controller.pending and not controller.done  # the search named its next level (here: the confirmation)


def test_the_probe_hint_is_tried_after_a_passing_start_and_growth_goes_on_past_it():
    search = CapacitySearch(start_rate=80.0, ceiling_hint=100.0)
    assert search.next_rate() == 80.0
    search.record(80.0, passed=True)
    assert search.next_rate() == 100.0  # the probe's throughput, not 160
    search.record(100.0, passed=True)  # the probe was a little short of saturation
    assert search.next_rate() == pytest.approx(110.0)
    search.record(110.0, passed=True)
    assert search.next_rate() == pytest.approx(121.0)
    search.record(121.0, passed=True)  # far short (too few users for a batcher): growth as usual
    assert search.next_rate() == pytest.approx(242.0)
    search = CapacitySearch(start_rate=80.0, ceiling_hint=100.0)
    search.record(80.0, passed=True)
    search.record(100.0, passed=False)
    assert search.next_rate() == 90.0


def test_wilson_bounds_hold_a_ratio():
    from loadtests.levels.capacity_search import wilson_bounds

    low, high = wilson_bounds(5, 1000)
    assert low < 0.005 < high and high < 0.012
    assert wilson_bounds(0, 0) == (0.0, 1.0)


def test_the_probe_has_enough_users_to_saturate_a_batcher():
    """The probe's throughput is the bound --stop-below compares with the best capacity, so it
    must saturate the model (a tune variant, or a capacity run's model): about 2 x max batch x
    instances requests in flight for a batcher (16 users left one instance batching up to 64
    at 894 requests/s, where its capacity was 2,349, and a two-instance batcher was skipped as
    'cannot beat the best')."""
    no_batcher = {"max_batch_size": 64, "instance_group": [{"count": 2}]}
    assert probe_users(no_batcher) == 16
    batcher = {**no_batcher, "dynamic_batching": {}}
    assert probe_users(batcher) == 2 * 64 * 2
    assert probe_users({"max_batch_size": 4, "dynamic_batching": {}, "instance_group": [{"count": 1}]}) == 16
    assert probe_users({"max_batch_size": 0, "instance_group": [{"count": 1}, {"count": 3}]}) == 16


def test_capacity_csv_holds_each_levels_rate_as_capacity_json_does(tmp_path):
    """A search started from a probe tries rates such as 0.8 x 118.43081: the CSV row must name
    the same level as the JSON (it once kept 6 significant digits: 94.7446 for 94.74465)."""
    rate = 0.8 * 118.43081
    level = {
        "order": 1, "rate": rate, "passed": True, "stopped_early": None, "to_confirm": False, "stable": True,
        "windows": 3, "throughput_rps": 94.6, "requests": 284, "failures": 0, "late": 0, "dropped": 0,
        "latency_us": {"p50": 10_100.0, "p95": 12_000.0, "p99": 14_000.0, "p99.9": 15_000.0},
    }  # fmt: skip
    write_capacity_files(tmp_path, {"levels": [level]})
    with open(tmp_path / "capacity.csv", newline="") as file:
        (row,) = csv.DictReader(file)
    assert float(row["rate"]) == json.loads((tmp_path / "capacity.json").read_text())["levels"][0]["rate"] == rate


def streamed_window(latency_us: float, first_us: list[float]) -> dict[str, EndpointStats]:
    """One window of streamed requests: each `latency_us` to its final response, its first
    response at the given time."""
    stats = EndpointStats("m [grpc]", "m", "grpc")
    for first in first_us:
        stats.record(request_outcome(latency_us, 1, None, stream=StreamTimings(first, (), latency_us, 1)))
    return {stats.name: stats}


def test_a_ttfr_clause_is_judged_on_the_streams_first_responses():
    """Final responses at 500 ms, first responses at 20 ms: `ttfr_p99<100ms` passes (on the
    stream's histogram, its confidence bounds too), and the level's entry carries the stream
    object summary.json has; `p99<100ms` on the same windows fails."""
    windows = [streamed_window(500_000.0, [20_000.0 + 10.0 * i for i in range(400)]) for _ in range(11)]
    for text, passes in (("ttfr_p99<100ms", True), ("ttfr_p99<100ms@95%", True), ("p99<100ms", False)):
        controller = CapacityController(CapacitySearch(start_rate=400.0), parse_slo(text), settle=1, max_trials=10)
        controller.start_level(100.0, window_s=1.0)
        result = None
        for i, window in enumerate(windows):
            result = controller.on_window(101.0 + i, 1.0, window)
            if result is not None:
                break
        assert result is not None, text
        verdict = controller.verdicts[-1]
        assert verdict["passed"] is passes, (text, verdict)
        (clause,) = verdict["clauses"]
        expected_ms = 20.0 + 10.0 * 396 / 1000 if clause["metric"] == "ttfr_p99" else 500.0
        assert clause["measured"] == pytest.approx(expected_ms, rel=0.01), (text, clause)
