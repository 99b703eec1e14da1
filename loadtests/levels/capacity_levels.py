"""The capacity search's levels: its `--shape-args`, the verdict on a level, and the controller.

A `CapacityController` is a sweep's controller (loadtests/levels/sweep_levels.py) whose next
rate comes from a `CapacitySearch` (capacity_search.py) instead of a list: a finished level
is judged against every SLO clause on its corrected latency (the way `--slo` judges an
open-loop run), and a level ends at once when one of its windows is clearly failing. A
failure below any confirmed one is measured once more before the search believes it (see
capacity_shape.py). No Locust here: tests feed it windows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from loadtests.config.converters import above, whole
from loadtests.errors import SpecError
from loadtests.levels.capacity_search import (
    CERTAIN_CONFIDENCE,
    DEFAULT_GROWTH,
    DEFAULT_PRECISION,
    CapacitySearch,
    Certain,
    certain_verdict,
    clearly_failing,
)
from loadtests.levels.stability import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_SETTLE_WINDOWS,
    DEFAULT_STABILITY_PERCENT,
    STABILITY_WINDOWS,
    is_stable,
)
from loadtests.levels.sweep_args import percent
from loadtests.levels.sweep_levels import LevelResult, SweepController, Trial, merge_parts
from loadtests.run_format import slo
from loadtests.run_format.confidence import percentile_bounds_us
from loadtests.traffic.profiles import RATE
from loadtests.traffic.shape_args import ShapeArgError, split_shape_args

CAPACITY_KEYS = ("slo", "start", "growth", "precision", "stability", "max_trials", "settle", "users", "probe")
DEFAULT_START_RATE = 10.0
# A level stopped early that completed under this share of its rate is overloaded beyond doubt.
OVERLOADED_SHARE = 0.9


# -- input ------------------------------------------------------------------------------------
def slo_from_shape_arg(text: str) -> list[slo.Clause]:
    """'p99<50ms;fail_ratio<0.001' -> clauses (raises slo.SloError)."""
    clauses = slo.parse_slo(text.replace(";", ","))
    if not clauses:
        raise slo.SloError("is empty (e.g. slo=p99<50ms)")
    return clauses


_CONVERTERS: Mapping[str, Callable[[str], Any]] = MappingProxyType(
    {
        "slo": lambda text: (slo_from_shape_arg(text), text)[1],
        "start": above(0, "must be a positive number"),
        "growth": above(1, "must be a number above 1"),
        "precision": above(0, "must be a positive number"),
        "stability": percent,
        "max_trials": whole(STABILITY_WINDOWS),
        "settle": whole(0),
        "users": whole(1),
        "probe": above(0, "must be a positive number"),
    }
)


def parse_capacity_args(text: str | None) -> dict[str, Any]:
    """`--shape-args` of the capacity shape, defaults filled in; raises SpecError.

    >>> parse_capacity_args("slo=p99<50ms;fail_ratio<0.001")["precision"]
    5.0
    """
    accepted = f"(accepted keys: {', '.join(CAPACITY_KEYS)})"
    try:
        args = split_shape_args(text, CAPACITY_KEYS, _CONVERTERS)
    except (ShapeArgError, slo.SloError) as error:
        raise SpecError(f"--shape-args for capacity: {error} {accepted}") from None
    if "slo" not in args:
        raise SpecError(f"--shape-args for capacity: missing slo= {accepted}")
    args.setdefault("start", DEFAULT_START_RATE)
    args.setdefault("growth", DEFAULT_GROWTH)
    args.setdefault("precision", DEFAULT_PRECISION * 100)
    args.setdefault("stability", DEFAULT_STABILITY_PERCENT)
    args.setdefault("max_trials", DEFAULT_MAX_TRIALS)
    args.setdefault("settle", DEFAULT_SETTLE_WINDOWS)
    return args


# -- the controller -----------------------------------------------------------------------------
def level_entry(result: LevelResult | Trial) -> dict[str, Any]:
    """A level (or one window) as a summary.json endpoint entry, for loadtests.run_format.slo."""
    return stats_entry(result.stats, result.duration_s if isinstance(result, LevelResult) else result.window_s)


def stats_entry(stats: Any, duration_s: float) -> dict[str, Any]:
    """Merged EndpointStats over `duration_s` as a summary.json endpoint entry (with its
    `stream` object when the model streams: ttfr_/gap_ clauses read it)."""
    entry = {
        "name": stats.name,
        "requests": stats.requests,
        "failures": stats.failure_count,
        "failures_by_class": dict(stats.failures),
        "inferences": stats.inferences,
        "duration_s": duration_s,
        "throughput_rps": stats.requests / duration_s,
        "throughput_infer_per_s": stats.inferences / duration_s,
        "latency_us": stats.latency_summary_us(),
        "late": stats.late,
        "dropped": stats.dropped,
    }
    if stats.stream is not None:
        entry["stream"] = stats.stream_json(entry["latency_us"], duration_s)
    return entry


def judge(result: LevelResult, clauses: list[slo.Clause]) -> tuple[bool, list[slo.Result]]:
    """Whether a level met every clause (and dropped nothing), with each clause's result."""
    entry = level_entry(result)
    # The level's own histograms: `@95%` clauses (and the MLPerf presets) are judged on their
    # bounds, a ttfr_/gap_ clause's on the stream's histogram of that variant.
    results = slo.evaluate(clauses, lambda _target: entry, lambda _target, variant: result.stats.histogram_of(variant))
    return (entry["dropped"] == 0 and not slo.failed(results)), results


class CapacityController(SweepController):
    """A SweepController whose next level comes from a CapacitySearch (one rate at a time)."""

    def __init__(self, search: CapacitySearch, clauses: list[slo.Clause], **sweep: Any) -> None:
        super().__init__(levels=[search.start_rate], kind=RATE, **sweep)
        self.search = search
        self.clauses = clauses
        self.verdicts: list[dict[str, Any]] = []  # one per finished level, in the order tried
        self.confirming: float | None = None  # the rate being measured again after a failure

    def _add(self, trial: Trial) -> LevelResult | None:
        """A level ends when a window is clearly failing, when its verdict is certain (every
        clause's confidence bound on one side of its limit), or, as a sweep level, when it is
        stable, unless a clause's bounds still straddle its limit, or at max_trials."""
        self.trials.append(trial)
        reason = clearly_failing(level_entry(trial), self.clauses) if trial.stats.requests else None
        if reason is not None:
            return self._finish(False, STABILITY_WINDOWS, f"clearly failing: {reason}", early=reason)
        level = merge_parts(t.stats for t in self.trials)
        entry = stats_entry(level, sum(t.window_s for t in self.trials))
        certain = certain_verdict(entry, level.histogram_of, self.clauses, self.levels[self.index])
        if certain is not None:
            return self._finish(False, len(self.trials), f"certain: {certain.reason}", certain=certain)
        throughputs = [t.infer_per_s for t in self.trials]
        stable = is_stable(throughputs, [t.p95_us for t in self.trials], self.stability_percent)
        if len(self.trials) >= self.max_trials:
            return self._finish(stable, STABILITY_WINDOWS, "max_trials windows")
        if stable and not self._straddles():
            return self._finish(True, STABILITY_WINDOWS, "stable")
        return None

    def _straddles(self) -> bool:
        """Whether a percentile clause's bounds over the last 3 windows lie on both sides of its
        limit: more windows may decide it, so a stable level runs on (up to max_trials)."""
        last = merge_parts(t.stats for t in self.trials[-STABILITY_WINDOWS:])
        entry = stats_entry(last, sum(t.window_s for t in self.trials[-STABILITY_WINDOWS:]))
        for clause in self.clauses:
            percentile = slo.percentile_of(clause.metric)
            histogram = last.histogram_of(slo.stream_variant(clause.metric))
            if percentile not in slo.PERCENTILE_METRICS or histogram is None or not histogram.get_total_count():
                continue
            lower, upper = percentile_bounds_us(histogram, CERTAIN_CONFIDENCE, (float(percentile[1:]),))[percentile]
            limit = clause.threshold * clause.scale
            if lower is not None and upper is not None and lower <= limit <= upper and entry["requests"]:
                return True
        return False

    def _finish(
        self, stable: bool, last: int, why: str, early: str | None = None, certain: Certain | None = None
    ) -> LevelResult:
        result = self._result(stable, last)
        self.results.append(result)
        self.index += 1
        return self._decide(result, early, why, certain)

    def _decide(self, result: LevelResult, early: str | None, why: str, certain: Certain | None) -> LevelResult:
        passed, results = judge(result, self.clauses)
        passed = passed and early is None
        if certain is not None:
            passed = certain.passed  # the bounds decided it (the point estimates agree with them)
        rate = result.level
        confirmed_below = self.search.first_failing is not None and self.search.first_failing <= rate
        # Stopped early while completing well under the rate: the server cannot keep up, no hiccup.
        overloaded = early is not None and result.stats.requests / result.duration_s < OVERLOADED_SHARE * rate
        retry = not passed and self.confirming != rate and not confirmed_below and not overloaded
        self.verdicts.append(
            {
                "rate": rate,
                "passed": passed,
                "stopped_early": early,
                "stopped_because": why,
                "to_confirm": retry,
                "clauses": [r.to_json() for r in results],
            }
        )
        if retry:
            self.confirming = rate
            self.levels.append(rate)
            self.stopped_by = None
            return result
        self.confirming = None
        self.search.record(rate, passed)
        following = self.search.next_rate()
        if following is None:
            self.stopped_by = "done"
        else:
            self.levels.append(round(following, 6))
            self.stopped_by = None  # the sweep's rule ended the list; the search goes on
        return result
