"""The capacity search's rate choice and early-failure rule (pure)."""

from __future__ import annotations

import pytest

from loadtests.run_format.slo import parse_slo
from loadtests.traffic.capacity_search import CapacitySearch, clearly_failing


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
        stats.record(latency_us, 1, None)
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
    from loadtests.traffic.capacity_levels import CapacityController

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
    from loadtests.traffic.capacity_levels import CapacityController

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
    from loadtests.recording.histograms import EndpointStats
    from loadtests.traffic.capacity_levels import judge
    from loadtests.traffic.sweep_levels import LevelResult

    stats = EndpointStats("m [http]", "m", "http")
    for i in range(2000):
        stats.record(900.0 + i % 200, 1, None)  # 0.9-1.1 ms
    level = LevelResult(100.0, "rate", True, 3, 0.0, 20.0, stats, {})
    passed, results = judge(level, parse_slo(clauses))
    assert passed is passes, [(r.clause.text, r.verdict, r.reason) for r in results]
