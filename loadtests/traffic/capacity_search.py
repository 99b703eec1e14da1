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
loadtests/traffic/capacity_shape.py runs it as a load shape (`python -m loadtests capacity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from loadtests.run_format.slo import LATENCY_METRICS, Clause, measure

DEFAULT_GROWTH = 2.0
DEFAULT_PRECISION = 0.05  # stop when first failing / last passing <= 1.05
DEFAULT_MIN_RATE = 0.1  # requests/s: below this a failing start is "no capacity"
# A level is clearly failing (stopped before it is stable) when one measured window of at
# least MIN_EARLY_REQUESTS requests (fewer say little about a percentile or a ratio) has:
MIN_EARLY_REQUESTS = 20
FAR_PAST_LIMIT = 3.0  # a latency clause's metric over 3x its limit,
# a late ratio over 3x the SLO's late_ratio limit (lateness alone is no verdict: the corrected
# latency already counts it, and a busy machine sends a few requests late at any rate),
LATE_PAST_LIMIT = 3.0
CLEARLY_FAILING_RATIO = 0.05  # or more than 5 % of its requests failed (and the SLO allows fewer).


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
    for clause in clauses:
        if clause.metric not in LATENCY_METRICS or clause.op not in ("<", "<="):
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
