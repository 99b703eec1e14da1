"""Confidence intervals for latency percentiles, from order statistics (no assumption on the distribution).

Of n latencies, the number B that fall at or below the true q-quantile is Binomial(n, q)
whatever the latency distribution is. So the r-th smallest latency X_(r) lies above the true
quantile only when B < r, with probability P(B <= r - 1): picking the ranks l and u from the
binomial distribution gives an interval [X_(l), X_(u)] that holds the true quantile with at
least the chosen confidence. This is the equal-tailed, two-sided distribution-free interval;
each of its bounds alone is a one-sided bound at (1 + confidence) / 2. MLPerf Inference's
early-stopping criterion (MLPerf Inference Rules, appendix "Early Stopping Criterion") rests
on the same binomial count of requests under and over a latency bound, one-sided, at c = 0.99.

The latencies come from the run's HDR histograms (3 significant digits): the order statistic
is known only to its bucket, so the lower bound is the bucket's lowest equivalent value and
the upper bound its highest, which keeps the coverage.

    bounds = percentile_bounds_us(histogram, 0.95)
    bounds["p99"]       # [lower µs, upper µs]; None inside for a bound too few requests can give
"""

from __future__ import annotations

import math

import numpy as np
from hdrh.histogram import HdrHistogram

from loadtests.run_format.hdr import PERCENTILES

DEFAULT_CONFIDENCE = 0.95
# The binomial mass further than this many standard deviations (plus a margin for small n)
# from the mean is far below any confidence level anyone asks for (< 1e-20).
_TAIL_SDS = 12.0
_TAIL_MARGIN = 30


def _binomial_cdf(n: int, p: float) -> tuple[int, np.ndarray]:
    """(k0, cdf) with cdf[i] = P(B <= k0 + i) for B ~ Binomial(n, p), over a window that holds
    all but a negligible mass. Log-pmf ratios, so large n neither overflows nor takes long."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    k0 = max(0, math.floor(mean - _TAIL_SDS * sd) - _TAIL_MARGIN)
    k1 = min(n, math.ceil(mean + _TAIL_SDS * sd) + _TAIL_MARGIN)
    log_choose = math.lgamma(n + 1) - math.lgamma(k0 + 1) - math.lgamma(n - k0 + 1)
    log_first = log_choose + k0 * math.log(p) + (n - k0) * math.log1p(-p)
    k = np.arange(k0, k1, dtype=np.float64)  # ratio pmf(k + 1) / pmf(k) for k in [k0, k1)
    log_ratios = np.log(n - k) - np.log(k + 1) + math.log(p) - math.log1p(-p)
    log_pmf = log_first + np.concatenate(([0.0], np.cumsum(log_ratios)))
    return k0, np.cumsum(np.exp(log_pmf))


def rank_bounds(n: int, quantile: float, confidence: float = DEFAULT_CONFIDENCE) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) of the order statistics that bound the `quantile` (0..1) of n samples.

    P(X_(l) > true quantile) <= alpha/2 and P(X_(u) < true quantile) <= alpha/2 with
    alpha = 1 - confidence. None for a bound that n samples cannot give (l < 1 or u > n): with
    1,000 requests, even the largest is below the true p99.9 with probability 0.999^1000 = 37 %.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n <= 0:
        return None, None
    tail = (1 - confidence) / 2
    k0, cdf = _binomial_cdf(n, quantile)
    # l - 1 = the largest k with P(B <= k) <= tail.
    lower = k0 + int(np.searchsorted(cdf, tail, side="right"))
    # u - 1 = the smallest k with P(B <= k) >= 1 - tail.
    upper = k0 + int(np.searchsorted(cdf, 1 - tail, side="left")) + 1
    return (lower if lower >= 1 else None), (upper if upper <= n else None)


def min_requests(quantile: float, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The fewest requests with which the quantile has both bounds at this confidence: the
    largest of n samples must exceed it (and the smallest stay below it) with probability
    >= 1 - alpha/2."""
    tail = math.log((1 - confidence) / 2)
    return max(math.ceil(tail / math.log(quantile)), math.ceil(tail / math.log1p(-quantile)))


def percentile_key(percentile: float) -> str:
    return f"p{percentile:g}"


def percentile_bounds_us(
    histogram: HdrHistogram, confidence: float = DEFAULT_CONFIDENCE, percentiles: tuple[float, ...] = PERCENTILES
) -> dict[str, list[float | None]]:
    """summary.json's `latency_ci_us`: [lower, upper] µs per percentile key ("p99"), None for a
    bound the request count cannot give; {} for an empty histogram."""
    total = histogram.get_total_count()
    if total == 0:
        return {}
    counts = np.ctypeslib.as_array(histogram.counts, shape=(histogram.counts_len,))
    indexes = np.flatnonzero(counts)
    cumulative = np.cumsum(counts[indexes])

    def value_at(rank: int) -> int:
        return histogram.get_value_from_index(int(indexes[int(np.searchsorted(cumulative, rank))]))

    bounds: dict[str, list[float | None]] = {}
    for percentile in percentiles:
        lower, upper = rank_bounds(int(total), percentile / 100, confidence)
        bounds[percentile_key(percentile)] = [
            None if lower is None else float(histogram.get_lowest_equivalent_value(value_at(lower))),
            None if upper is None else float(histogram.get_highest_equivalent_value(value_at(upper))),
        ]
    return bounds


def confidence_label(confidence: float) -> str:
    """0.95 -> "95 %", 0.999 -> "99.9 %"."""
    return f"{confidence * 100:g} %"


def not_enough_note(key: str, confidence: float) -> str:
    """Why a bound is missing, e.g. "not enough requests for p99.9 at 95 % (needs 3,688)"."""
    needed = min_requests(float(key[1:]) / 100, confidence)
    return f"not enough requests for {key} at {confidence_label(confidence)} (needs {needed:,})"


__all__ = [
    "DEFAULT_CONFIDENCE",
    "confidence_label",
    "min_requests",
    "not_enough_note",
    "percentile_bounds_us",
    "rank_bounds",
]
