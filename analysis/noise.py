"""Is a difference between two runs beyond noise? Verdicts for a comparison's ratios.

Two 95 % intervals that do not overlap are the test, for latency and throughput alike:

- a latency percentile's interval is summary.json's `latency_ci_us` (order statistics of the
  HDR histogram, loadtests/run_format/confidence.py), or a load step's, computed the same way
  from the step's merged histogram (the level table's p99_ci_lo_us / p99_ci_hi_us);
- throughput's is the interval of the mean per-window throughput: the full windows of
  timeseries.csv (a window the run covered only in part is left out) give mean +- t * sd /
  sqrt(n), t from Student's distribution with n - 1 degrees of freedom.

Non-overlapping 95 % intervals differ at a level stricter than 5 %, so a verdict errs toward
"no difference beyond noise". Windows of one run are not independent (a slow second drags
the next), so the throughput interval is narrower than the truth; stepped runs mix loads in
the whole run's windows, which widens it: per step the windows share one load.

    verdict(base_interval, other_interval, higher_is_faster=False)   # latency
    window_interval(timeseries, "bert_qa [http]", window_s)           # (lo, hi) infer/s
"""

from __future__ import annotations

import math

import pandas as pd

FASTER, NOISE, SLOWER = "faster", "no difference beyond noise", "slower"
CANNOT_JUDGE = "cannot judge"
# Student's t, 97.5th percentile, for 1..30 degrees of freedom; above 30 the normal's 1.96
# is within 4 %.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip
# A window counts as full when the run covered at least this share of it.
FULL_WINDOW = 0.99

Interval = tuple[float, float] | None


def verdict(base: Interval, other: Interval, higher_is_faster: bool) -> str:
    """FASTER / SLOWER when the intervals are apart, NOISE when they overlap, CANNOT_JUDGE
    when either is missing."""
    if not base or not other or any(_missing(v) for v in (*base, *other)):
        return CANNOT_JUDGE
    if other[0] > base[1]:
        return FASTER if higher_is_faster else SLOWER
    if other[1] < base[0]:
        return SLOWER if higher_is_faster else FASTER
    return NOISE


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def latency_interval(bounds: list | None) -> Interval:
    """summary.json's [lower, upper] µs. A bound too few requests give is open (0 or infinity):
    a p99 of 300 requests has no upper bound, yet its lower one can still be above another
    run's whole interval. None when neither bound is known."""
    if not bounds or (bounds[0] is None and bounds[1] is None):
        return None
    return (0.0 if bounds[0] is None else float(bounds[0]), math.inf if bounds[1] is None else float(bounds[1]))


def window_interval(
    timeseries: pd.DataFrame | None,
    window_s: float,
    start: float = -math.inf,
    end: float = math.inf,
    count: str = "inferences",
) -> Interval:
    """95 % interval of the mean per-second `count` (inferences, or requests: req/s) over the full
    windows whose middle lies in [start, end)."""
    return mean_interval(full_window_rates(timeseries, window_s, start, end, count))


def mean_interval(rates: pd.Series) -> Interval:
    """95 % interval of the mean of independent values: mean +- t * sd / sqrt(n) (None under 2)."""
    n = len(rates)
    if n < 2:
        return None
    mean, sd = float(rates.mean()), float(rates.std(ddof=1))
    half = (T_975[n - 2] if n - 1 <= len(T_975) else 1.96) * sd / math.sqrt(n)
    return mean - half, mean + half


def full_window_rates(
    timeseries: pd.DataFrame | None,
    window_s: float,
    start: float = -math.inf,
    end: float = math.inf,
    count: str = "inferences",
) -> pd.Series:
    """The per-second `count` of each full window whose middle lies in [start, end), in time order."""
    if timeseries is None or not len(timeseries):
        return pd.Series([], dtype=float)
    windows = timeseries[(timeseries["time_s"] + window_s / 2 >= start) & (timeseries["time_s"] + window_s / 2 < end)]
    if "covered_s" in windows:
        windows = windows[windows["covered_s"] >= FULL_WINDOW * window_s]
    return windows[count].astype(float) / window_s


def interval_text(interval: Interval, scale: float = 1.0, unit: str = "") -> str:
    if interval is None:
        return "no interval"
    return f"{interval[0] / scale:,.3f} to {interval[1] / scale:,.3f}{unit}"
