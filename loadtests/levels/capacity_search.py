"""Capacity search, the pure part: which open-loop rate to try next, and when a level is
clearly failing. No Locust, no clock: fed the verdicts of the levels tried so far.

    search = CapacitySearch(start_rate=10.0)
    rate = search.next_rate()            # 10.0
    search.record(rate, passed=True)     # then 20, 40, ... until one fails, then bisection
    ...
    search.next_rate() is None and search.bracket   # (95.0, 97.5): last passing, first failing

The search grows the rate by `growth` while levels pass, then bisects between the highest
passing rate and the lowest failing one above it, until the two are within `precision` of
each other (relative to the passing one). A start that fails shrinks by `growth` instead,
down to `min_rate`. Levels that contradict monotony (a pass above a failure) are kept in
the record but the bracket always uses the lowest failure and the highest pass below it.
loadtests/levels/capacity_shape.py runs it as a load shape (`python -m loadtests capacity`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

from loadtests.run_format.confidence import percentile_bounds_us
from loadtests.run_format.slo import (
    PERCENTILE_METRICS,
    TIMED_METRICS,
    Clause,
    measure,
    percentile_of,
    stream_variant,
)

# The saturation probe's users when the model's configuration says nothing more (no dynamic
# batcher, or a configuration that could not be read).
MIN_PROBE_USERS = 16


def probe_users(config: dict) -> int:
    """Closed-loop users enough for the saturation probe to saturate a model as Triton
    configured it: a dynamic batcher is only saturated with about 2 x max batch x instances
    requests in flight (16 users left a one-instance batcher of 64 at 894 requests/s; its
    capacity was 2,349), at least MIN_PROBE_USERS."""
    instances = sum(int(group.get("count", 1) or 1) for group in config.get("instance_group") or [{"count": 1}])
    batch = int(config.get("max_batch_size") or 0) if "dynamic_batching" in config else 1
    return max(MIN_PROBE_USERS, 2 * max(batch, 1) * instances)


DEFAULT_GROWTH = 2.0
DEFAULT_PRECISION = 0.05  # stop when first failing / last passing <= 1.05
DEFAULT_MIN_RATE = 0.1  # requests/s: below this a failing start is "no capacity"
# Past a probe's throughput that passed, the rate grows by this factor twice (a probe a little
# short of saturation), then by `growth` (a probe far short of it).
PAST_HINT_GROWTH = 1.1
PAST_HINT_STEPS = 2
# A level is clearly failing (stopped before it is stable) when one measured window of at
# least MIN_EARLY_REQUESTS requests (fewer say little about a percentile or a ratio) has:
MIN_EARLY_REQUESTS = 20
FAR_PAST_LIMIT = 3.0  # a latency clause's metric over 3x its limit,
# a late ratio over 3x the SLO's late_ratio limit (lateness alone is no verdict: the corrected
# latency already counts it, and a busy machine sends a few requests late at any rate),
LATE_PAST_LIMIT = 3.0
CLEARLY_FAILING_RATIO = 0.05  # or more than 5 % of its requests failed (and the SLO allows fewer).
# A level's verdict is certain when every clause's confidence bound is on one side of its limit
# (certain_verdict), but only once the level has this many requests and measured windows: the
# first windows after a rate change can be unlike the rest (a warm-up spike, a queue still
# building up), and a bound over too few of them would decide on them alone.
MIN_CERTAIN_REQUESTS = 200
MIN_CERTAIN_S = 2.0  # of measured windows (after the settling ones)
CERTAIN_CONFIDENCE = 0.95  # two-sided; each bound alone holds at 97.5 %
_Z = 1.959964  # the normal quantile of 97.5 %, for the Wilson bounds of a ratio
# An early pass also needs the responses to keep up with the rate: a level just above the
# capacity builds a queue slowly, and its first windows can look like a pass.
KEEPING_UP_SHARE = 0.95


@dataclass(frozen=True)
class Tried:
    """One level of the search: the rate (requests/s) and whether it met every clause."""

    rate: float
    passed: bool


@dataclass
class CapacitySearch:
    """Exponential growth, then bisection, over open-loop rates (requests/s)."""

    start_rate: float
    growth: float = DEFAULT_GROWTH
    precision: float = DEFAULT_PRECISION
    min_rate: float = DEFAULT_MIN_RATE
    # The throughput a saturation probe reached (closed loop, many users): the first level above
    # a passing start. A hint, not a verdict: a probe with too few users for a batching server
    # underestimates it, and then the growth simply goes on past the hint.
    ceiling_hint: float | None = None
    tried: list[Tried] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_rate) and self.start_rate > 0):
            raise ValueError(f"start_rate must be positive, got {self.start_rate}")
        if not self.growth > 1:
            raise ValueError(f"growth must be above 1, got {self.growth}")
        if not self.precision > 0:
            raise ValueError(f"precision must be positive, got {self.precision}")

    def record(self, rate: float, passed: bool) -> None:
        self.tried.append(Tried(rate, passed))

    @property
    def first_failing(self) -> float | None:
        failing = [t.rate for t in self.tried if not t.passed]
        return min(failing) if failing else None

    @property
    def last_passing(self) -> float | None:
        """The highest passing rate below the lowest failing one (any passing rate if none failed)."""
        ceiling = self.first_failing
        passing = [t.rate for t in self.tried if t.passed and (ceiling is None or t.rate < ceiling)]
        return max(passing) if passing else None

    @property
    def bracket(self) -> tuple[float | None, float | None]:
        """(last passing, first failing): the capacity lies between them."""
        return self.last_passing, self.first_failing

    def next_rate(self) -> float | None:
        """The rate of the next level, or None when the search is done."""
        if not self.tried:
            return self.start_rate
        passing, failing = self.bracket
        if failing is None:
            hint = self.ceiling_hint
            if hint is not None and passing < hint and all(t.rate != hint for t in self.tried):  # type: ignore[operator]
                return hint  # the saturation probe's throughput: the capacity is most likely below it
            past_hint = 0 if hint is None else sum(1 for t in self.tried if t.passed and t.rate >= hint)
            if 1 <= past_hint <= PAST_HINT_STEPS:
                return passing * PAST_HINT_GROWTH  # type: ignore[operator]  # the probe was close: small steps
            return passing * self.growth  # type: ignore[operator]  # tried and none failed: one passed
        if passing is None:
            lower = failing / self.growth
            return lower if lower >= self.min_rate else None
        if failing <= passing * (1 + self.precision):
            return None
        return (passing + failing) / 2


def clearly_failing(window: dict, clauses: list[Clause]) -> str | None:
    """Why a level can stop before it is stable, from one measured window (a summary.json-like
    endpoint entry: requests, failures, latency_us, late), or None to keep measuring."""
    requests = int(window.get("requests", 0))
    if requests < MIN_EARLY_REQUESTS:
        return None
    allowed_late = _upper_limit(clauses, "late_ratio")
    late = int(window.get("late", 0))
    if allowed_late is not None and late / requests > LATE_PAST_LIMIT * allowed_late:
        return f"{late} of {requests} requests sent late"
    allowed_fail = _upper_limit(clauses, "fail_ratio")
    if allowed_fail is not None:
        ratio = int(window.get("failures", 0)) / requests
        if ratio > max(CLEARLY_FAILING_RATIO, allowed_fail):
            return f"{ratio:.1%} of requests failed"
    for clause in clauses:  # latencies, and a streamed model's ttfr_/gap_ (the window's `stream`)
        if clause.metric not in TIMED_METRICS or clause.op not in ("<", "<="):
            continue
        value, _why = measure(window, clause.metric)
        limit_us = clause.threshold * clause.scale
        if value is not None and value > FAR_PAST_LIMIT * limit_us:
            return f"{clause.metric} {value / 1000:.1f} ms, over {FAR_PAST_LIMIT:g}x the {limit_us / 1000:g} ms limit"
    return None


def _upper_limit(clauses: list[Clause], metric: str) -> float | None:
    """The tightest upper limit the clauses set on a metric, in its base unit (None: no limit)."""
    limits = [c.threshold * c.scale for c in clauses if c.metric == metric and c.op in ("<", "<=")]
    return min(limits) if limits else None


@dataclass(frozen=True)
class Certain:
    """A level's verdict that more requests cannot change (at CERTAIN_CONFIDENCE): why, in words."""

    passed: bool
    reason: str


def certain_verdict(
    entry: dict, histogram_of: Callable[[str], HdrHistogram | None], clauses: list[Clause], rate: float
) -> Certain | None:
    """Whether a level's verdict is already certain, from everything it measured so far (a
    summary.json-like entry over its usable windows, and its histograms: `histogram_of("")`
    the latency's, `histogram_of("first_response")` / `("gap")` a streamed model's).

    It fails as soon as one clause's lower bound is over its limit, and passes once every
    clause's upper bound is under its limit; None: measure on. Percentiles are bounded by
    order statistics (run_format/confidence.py), ratios by Wilson's score interval; `max` and
    the counts can only grow, so they can fail a level early but never pass it; `mean` is never
    decided early (the stability rule does)."""
    requests = int(entry.get("requests", 0))
    if requests < MIN_CERTAIN_REQUESTS or float(entry.get("duration_s", 0.0)) < MIN_CERTAIN_S:
        return None
    undecided = False
    reasons = []
    for clause in clauses:
        lower, upper = _bounds(clause, entry, histogram_of, requests)
        limit = clause.threshold * clause.scale
        shown = _shown(clause)
        if lower is not None and (lower > limit or (clause.op == "<" and lower == limit)):
            return Certain(False, f"{clause.metric} at least {shown(lower)}, over {clause.text} ({requests} requests)")
        if upper is None or not (upper < limit or (clause.op == "<=" and upper == limit)):
            undecided = True
        else:
            reasons.append(f"{clause.metric} at most {shown(upper)}")
    if undecided or int(entry.get("dropped", 0)):
        return None
    duration_s = float(entry.get("duration_s", 0.0))
    if duration_s > 0 and requests / duration_s < KEEPING_UP_SHARE * rate:
        return None  # the responses lag the rate: a queue may be building up
    return Certain(True, f"{', '.join(reasons)} ({requests} requests, {CERTAIN_CONFIDENCE:.0%} bounds)")


def _shown(clause: Clause) -> Callable[[float], str]:
    if clause.metric in TIMED_METRICS:
        return lambda value: f"{value / 1000:.2f} ms"
    return lambda value: f"{value:.4g}"


def _bounds(
    clause: Clause, entry: dict, histogram_of: Callable[[str], HdrHistogram | None], requests: int
) -> tuple[float | None, float | None]:
    """(lower, upper) bound of the clause's metric in its base unit; None for a side it cannot bound.
    A ttfr_/gap_ percentile is bounded on the stream's histogram of that variant, like a latency's."""
    metric = clause.metric
    percentile = percentile_of(metric)
    if percentile in PERCENTILE_METRICS:
        histogram = histogram_of(stream_variant(metric))
        if histogram is None or histogram.get_total_count() == 0:
            return None, None
        confidence = max(clause.confidence or 0.0, CERTAIN_CONFIDENCE)
        lower, upper = percentile_bounds_us(histogram, confidence, (float(percentile[1:]),))[percentile]
        return lower, upper
    if percentile == "max":  # max, ttfr_max, gap_max: can only grow
        value, _ = measure(entry, metric)
        return value, None
    if metric in ("fail_ratio", "late_ratio"):
        count = int(entry.get("failures" if metric == "fail_ratio" else "late", 0))
        return wilson_bounds(count, requests)
    if metric in ("failures", "dropped"):
        return float(entry.get(metric, 0)), None
    return None, None


def wilson_bounds(count: int, total: int) -> tuple[float, float]:
    """Wilson's score interval for a proportion count/total at CERTAIN_CONFIDENCE (two-sided).

    >>> [round(b, 4) for b in wilson_bounds(0, 1000)]
    [0.0, 0.0038]
    """
    if total <= 0:
        return 0.0, 1.0
    p = count / total
    denominator = 1 + _Z**2 / total
    centre = (p + _Z**2 / (2 * total)) / denominator
    half = _Z * math.sqrt(p * (1 - p) / total + _Z**2 / (4 * total**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
