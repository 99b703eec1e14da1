"""Open-loop traffic: schedules (fake clock), rate plans, the statistics' merge, and the refusals
of bad traffic options. Runs against Triton that measure the rate delivered are in
tests/measurement/test_open_loop.py.
"""

from __future__ import annotations

import math
from argparse import Namespace

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from loadtests.errors import SpecError
from loadtests.options.reading import settings_from
from loadtests.recording.histograms import EndpointStats
from loadtests.run_format.hdr import PERCENTILES, summarise_us
from loadtests.traffic.open_loop import ArrivalSchedule, RatePlan
from tests.helpers import (
    request_outcome,
)


class FakeClock:
    def __init__(self, now_ns: int = 1_000_000_000) -> None:
        self.now_ns = now_ns

    def __call__(self) -> int:
        return self.now_ns


def gaps_of(schedule: ArrivalSchedule, count: int) -> np.ndarray:
    return np.diff(np.array([schedule.take() for _ in range(count + 1)], dtype=np.int64)) / 1e9


def ks_statistic_exponential(gaps: np.ndarray, mean_s: float) -> float:
    """Kolmogorov-Smirnov distance between the gaps and an exponential distribution of this mean."""
    ordered = np.sort(gaps)
    n = len(ordered)
    expected = 1.0 - np.exp(-ordered / mean_s)
    above = np.arange(1, n + 1) / n - expected
    below = expected - np.arange(0, n) / n
    return float(max(above.max(), below.max()))


# --- schedules (unit) ------------------------------------------------------------------------


def test_constant_schedule_has_fixed_gaps_from_the_first_request():
    clock = FakeClock()
    schedule = ArrivalSchedule("constant", clock=clock)
    assert schedule.take() is None  # no rate yet: nothing is due
    schedule.set_rate(200.0)
    due = [schedule.take() for _ in range(4)]
    assert due == [clock.now_ns + i * 5_000_000 for i in range(4)]


def test_poisson_gaps_pass_a_test_of_exponentiality():
    schedule = ArrivalSchedule("poisson", seed=20261122, clock=FakeClock())
    schedule.set_rate(200.0)
    gaps = gaps_of(schedule, 20_000)
    n = len(gaps)
    critical = 1.63 / math.sqrt(n)  # Kolmogorov-Smirnov at the 1 % level
    assert ks_statistic_exponential(gaps, 1 / 200.0) < critical
    assert gaps.mean() == pytest.approx(1 / 200.0, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential: CV 1
    # The same test tells other gap distributions apart: it is not a test that cannot fail.
    constant = ArrivalSchedule("constant", clock=FakeClock())
    constant.set_rate(200.0)
    assert ks_statistic_exponential(gaps_of(constant, 20_000), 1 / 200.0) > critical
    uniform = np.random.default_rng(1).uniform(0, 2 / 200.0, n)
    assert ks_statistic_exponential(uniform, 1 / 200.0) > critical


def gamma_cdf(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """The gamma distribution's CDF without scipy: with u = t^shape the integral of
    t^(shape-1) e^-t becomes the smooth one of e^(-u^(1/shape)) / shape, integrated on a fine grid."""
    t_max = max(float(np.max(x)) / scale, 1.0) * 1.01
    u = np.linspace(0.0, t_max**shape, 400_001)
    integrand = np.exp(-(u ** (1.0 / shape)))
    cumulative = np.concatenate(([0.0], np.cumsum((integrand[1:] + integrand[:-1]) / 2 * np.diff(u))))
    cdf = cumulative / math.gamma(shape + 1)
    return np.interp((x / scale) ** shape, u, cdf)


def ks_statistic_whole_ns(gaps: np.ndarray, cdf) -> float:
    """Kolmogorov-Smirnov distance between gaps and a continuous CDF, for gaps the schedule has
    rounded to whole nanoseconds (at least 1): with a CV of 3, 15 % of the gaps are under 1.5 ns
    and tie at 1 ns, so each recorded value v stands for the continuous range around it."""
    values, counts = np.unique(np.round(gaps * 1e9), return_counts=True)
    n = counts.sum()
    at = np.cumsum(counts) / n  # the empirical CDF at each recorded value ...
    before = at - counts / n  # ... and just below it
    expected_at = cdf((values + 0.5) / 1e9)
    expected_before = np.where(values <= 1, 0.0, cdf((values - 0.5) / 1e9))
    return float(max(np.abs(at - expected_at).max(), np.abs(before - expected_before).max()))


def test_gamma_gaps_have_the_asked_burstiness_and_poisson_ones_do_not():
    rate, cv, n = 200.0, 3.0, 20_000
    shape, scale = 1 / cv**2, cv**2 / rate  # mean shape * scale = 1/rate, CV 1/sqrt(shape)
    schedule = ArrivalSchedule("gamma", seed=20261123, clock=FakeClock(), burstiness=cv)
    schedule.set_rate(rate)
    gaps = gaps_of(schedule, n)
    critical = 1.63 / math.sqrt(n)  # Kolmogorov-Smirnov at the 1 % level

    def is_gamma(sample: np.ndarray) -> bool:
        return ks_statistic_whole_ns(sample, lambda x: gamma_cdf(x, shape, scale)) < critical

    assert is_gamma(gaps)
    poisson = ArrivalSchedule("poisson", seed=20261123, clock=FakeClock())
    poisson.set_rate(rate)
    assert not is_gamma(gaps_of(poisson, n))  # Poisson gaps are rejected as gamma with CV 3
    assert ks_statistic_exponential(gaps, 1 / rate) > critical  # and these gaps are not Poisson
    # Moments, with margins of 4 standard errors at this sample size: the mean's relative error
    # is CV/sqrt(n); the CV's is at most sqrt((kurtosis excess 6 CV^2 + 2)/4n + CV^2/n).
    mean_margin = 4 * cv / math.sqrt(n)
    cv_margin = 4 * math.sqrt((6 * cv**2 + 2) / (4 * n) + cv**2 / n)
    assert gaps.mean() == pytest.approx(1 / rate, rel=mean_margin)
    assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=cv_margin)
    poisson_gaps = gaps_of(poisson, n)
    assert abs(poisson_gaps.std() / poisson_gaps.mean() / cv - 1) > cv_margin  # the same check rejects CV 1


def test_gamma_with_burstiness_1_is_poisson():
    schedule = ArrivalSchedule("gamma", seed=5, clock=FakeClock(), burstiness=1.0)
    schedule.set_rate(200.0)
    gaps = gaps_of(schedule, 20_000)
    assert ks_statistic_exponential(gaps, 1 / 200.0) < 1.63 / math.sqrt(len(gaps))


def test_rate_changes_apply_to_the_next_gap_and_zero_pauses():
    clock = FakeClock()
    schedule = ArrivalSchedule("constant", clock=clock)
    schedule.set_rate(1.0)
    first = schedule.take()
    assert first == clock.now_ns
    schedule.set_rate(100.0)  # the pending 1-s gap shrinks to 10 ms
    assert schedule.take() == clock.now_ns + 10_000_000
    schedule.set_rate(0.0)
    assert schedule.take() is None
    clock.now_ns += 3_000_000_000
    schedule.set_rate(100.0)  # after a pause the schedule restarts now, without a burst
    assert schedule.take() == clock.now_ns
    assert schedule.take() == clock.now_ns + 10_000_000


def test_each_process_takes_its_share_by_users():
    plan = RatePlan(rate=300.0, users=6)
    assert [plan.share(users) for users in (2, 2, 2)] == [100.0, 100.0, 100.0]
    assert plan.share(0) == 0.0  # a worker without users sends nothing
    assert RatePlan(rate=300.0, users=0).share(2) == 0.0
    assert RatePlan.from_message(plan.to_message()) == plan


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"traffic": "closed", "rate": 10.0}, "--rate applies to open-loop traffic"),
        ({"traffic": "constant", "rate": -1.0}, "--rate must be"),
        ({"traffic": "constant", "rate": 10.0, "max_in_flight": 0}, "--max-in-flight must be at least 1"),
        ({"traffic": "bursty"}, "--traffic 'bursty'"),
        ({"traffic": "gamma", "rate": 10.0}, "--traffic gamma needs --burstiness"),
        ({"traffic": "gamma", "rate": 10.0, "burstiness": 0.0}, "--burstiness must be a finite number > 0"),
        ({"traffic": "gamma", "rate": 10.0, "burstiness": -2.0}, "--burstiness must be a finite number > 0"),
        ({"traffic": "gamma", "rate": 10.0, "burstiness": math.inf}, "--burstiness must be a finite number > 0"),
        ({"traffic": "poisson", "rate": 10.0, "burstiness": 2.0}, "--burstiness applies to --traffic gamma"),
    ],
)
def test_bad_traffic_settings(options, message):
    with pytest.raises(SpecError, match=message):
        settings_from(Namespace(**options))


def test_open_loop_stats_travel_and_merge():
    a = EndpointStats("m [http]", "m", "http")
    a.record(request_outcome(1500.0, 1, None, uncorrected_us=900.0, late=True))
    a.record_dropped()
    b = EndpointStats.from_message(a.to_message())
    assert (b.late, b.dropped, b.uncorrected.get_total_count()) == (1, 1, 1)
    b.merge(a)
    assert (b.requests, b.late, b.dropped) == (2, 2, 2)
    assert b.uncorrected_summary_us()["p50"] == pytest.approx(900, rel=0.001)
    assert b.latency_summary_us()["p50"] == pytest.approx(1500, rel=0.001)
    closed = EndpointStats("m [http]", "m", "http")
    closed.record(request_outcome(1500.0, 1, None))
    assert closed.uncorrected is None and closed.uncorrected_summary_us() is None


def test_summary_equals_hdrh_own_calls():
    rng = np.random.default_rng(5)
    histogram = HdrHistogram(1, 600_000_000, 3)
    for value in np.concatenate([rng.lognormal(8, 1.2, 5000), [1, 2, 599_999_999]]):
        histogram.record_value(int(value))
    expected = {f"p{p:g}": float(histogram.get_value_at_percentile(p)) for p in PERCENTILES}
    expected["max"] = float(histogram.get_max_value())
    expected["mean"] = round(float(histogram.get_mean_value()), 3)
    assert summarise_us(histogram) == expected
