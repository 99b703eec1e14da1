"""Judging clauses on summary.json entries: a measured value, a verdict, and its interval.

An entry is an endpoint's, a model's or the overall one (resolver_for_summary picks it).

    resolve = resolver_for_summary(summary)        # target -> summary.json entry
    results = evaluate(clauses, resolve)           # [Result(...)], one per clause
    failed(results)                                # the ones that give exit code 3
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from loadtests.run_format.confidence import confidence_label, not_enough_note, percentile_bounds_us
from loadtests.run_format.slo.clauses import (
    LATENCY_METRICS,
    OPEN_LOOP_METRICS,
    OPERATORS,
    STREAM_METRICS,
    Clause,
    SloError,
    percentile_of,
    rounded,
    shown,
)
from loadtests.run_format.summary import OVERALL, combine, late_ratio

EXIT_SLO_FAILED = 3
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"


@dataclass(frozen=True)
class Result:
    """A clause's verdict. `measured` is in the clause's unit; None when nothing was measured.

    `bounds` (clauses with a confidence): the percentile's interval in the clause's unit, None
    inside for a bound too few requests can give. `inconclusive`: neither pass nor fail could
    be shown at that confidence (`passed` is then False: a gate does not pass on no evidence).
    """

    clause: Clause
    measured: float | None
    passed: bool
    reason: str = ""
    bounds: tuple[float | None, float | None] | None = None
    inconclusive: bool = False

    @property
    def verdict(self) -> str:
        return INCONCLUSIVE if self.inconclusive else PASS if self.passed else FAIL

    @property
    def message(self) -> str:
        """E.g. "measured 62.1 ms, limit 50 ms", or with a confidence
        "measured 62.1 ms (95 % interval 58.2 ms .. 66.0 ms), limit 50 ms"."""
        clause = self.clause
        limit = f"limit {shown(clause.threshold, clause)}"
        if self.measured is None:
            return f"not measured ({self.reason}), {limit}"
        measured = f"measured {shown(self.measured, clause)}"
        if self.bounds is not None and clause.confidence is not None:
            lower, upper = (shown(v, clause) if v is not None else "unbounded" for v in self.bounds)
            measured += f" ({confidence_label(clause.confidence)} interval {lower} .. {upper})"
        note = f"; {self.reason}" if self.reason else ""
        return f"{measured}, {limit}{note}"

    def to_json(self) -> dict:
        clause = self.clause
        return {
            "clause": clause.text,
            "endpoint": clause.endpoint,
            "metric": clause.metric,
            "op": clause.op,
            "threshold": clause.threshold,
            "measured": None if self.measured is None else rounded(self.measured, clause),
            "unit": clause.unit,
            "passed": self.passed,
            **(
                {
                    "confidence": clause.confidence,
                    "bounds": None if self.bounds is None else [_maybe_rounded(v, clause) for v in self.bounds],
                    "verdict": self.verdict,
                    **({"reason": self.reason} if self.reason else {}),
                }
                if clause.confidence is not None
                else {}
            ),
        }


def _maybe_rounded(value: float | None, clause: Clause) -> float | None:
    return None if value is None else rounded(value, clause)


def measure(entry: dict, metric: str) -> tuple[float | None, str]:
    """A metric of one summary.json entry in its base unit, or (None, why not)."""
    requests = int(entry.get("requests", 0))
    failures = int(entry.get("failures", 0))
    if metric in LATENCY_METRICS:
        if requests - failures <= 0:
            return None, "no successful requests"
        return float(entry["latency_us"][metric]), ""
    if metric in STREAM_METRICS:
        stream = entry.get("stream")
        if not stream or not stream.get("requests"):
            return None, "no successful streamed requests (a decoupled model's)"
        key, percentile = STREAM_METRICS[metric]
        return float(stream[key][percentile]), ""
    if metric == "fail_ratio":
        return (failures / requests, "") if requests else (None, "no requests")
    if metric == "failures":
        return float(failures), ""
    if metric == "rps":
        return float(entry["throughput_rps"]), ""
    if metric == "infer_per_s":
        return float(entry["throughput_infer_per_s"]), ""
    key = OPEN_LOOP_METRICS[metric]
    if key not in entry:
        return None, f"no '{key}' count in summary.json: closed-loop run"
    if metric == "dropped":
        return float(entry[key]), ""
    return (late_ratio(int(entry[key]), requests), "") if requests else (None, "no requests")


def interval(
    clause: Clause, entry: dict, histogram: HdrHistogram | None
) -> tuple[tuple[float | None, float | None] | None, str]:
    """A percentile's confidence interval in µs at the clause's confidence: from the merged
    histogram when there is one (any confidence), else from summary.json's `latency_ci_us`
    (which holds one confidence, DEFAULT_CONFIDENCE; latencies only, not ttfr_/gap_).
    (None, why) when neither has it."""
    assert clause.confidence is not None
    if histogram is not None:
        bounds = percentile_bounds_us(histogram, clause.confidence).get(percentile_of(clause.metric))
    elif clause.metric in STREAM_METRICS:
        return None, f"no hdr/ stream logs to compute {clause.metric}'s bounds from"
    elif entry.get("confidence") == clause.confidence and "latency_ci_us" in entry:
        bounds = entry["latency_ci_us"].get(clause.metric)
    else:
        stored = entry.get("confidence")
        held = f"holds bounds at {confidence_label(stored)} only" if stored else "holds no bounds"
        return None, f"summary.json {held}, and no hdr/ logs to compute them at {confidence_label(clause.confidence)}"
    if not bounds:
        return None, "no successful requests"
    if None in bounds and clause.metric in STREAM_METRICS:  # the note below would name the latency's count
        return None, f"not enough {clause.metric.partition('_')[0]} values for {percentile_of(clause.metric)}"
    return (bounds[0], bounds[1]), ""


def judge_interval(
    clause: Clause, measured: float, bounds: tuple[float | None, float | None] | None, why_not: str
) -> Result:
    """Pass when the whole interval meets the limit, fail when none of it does, else inconclusive."""
    if bounds is None:
        return Result(clause, measured, False, why_not, None, inconclusive=True)
    scaled = tuple(None if v is None else v / clause.scale for v in bounds)
    compare = OPERATORS[clause.op]
    lower, upper = (None if v is None else rounded(v, clause) for v in scaled)
    # For < and <= the upper bound must meet the limit; for > and >= the lower one.
    decisive, opposite = (upper, lower) if clause.op in ("<", "<=") else (lower, upper)
    if decisive is not None and compare(decisive, clause.threshold):
        return Result(clause, measured, True, "", scaled)
    if opposite is not None and not compare(opposite, clause.threshold):
        return Result(clause, measured, False, "", scaled)
    assert clause.confidence is not None
    reason = (
        not_enough_note(clause.metric, clause.confidence)
        if decisive is None
        else f"the limit lies inside the {confidence_label(clause.confidence)} interval: a longer run can tell"
    )
    return Result(clause, measured, False, reason, scaled, inconclusive=True)


def evaluate(
    clauses: Iterable[Clause],
    resolve: Callable[[str | None], dict],
    histogram_for: Callable[[str | None, str], HdrHistogram | None] | None = None,
) -> list[Result]:
    """Each clause against the entry resolve(target) returns (target None: overall).

    histogram_for(target, variant): the target's merged histogram, for clauses with a confidence
    other than the one summary.json stores and for ttfr_/gap_ clauses with one; variant "" the
    latency, hdr.FIRST_RESPONSE or hdr.GAP a streamed endpoint's (stream_variant); optional.
    """
    results = []
    for clause in clauses:
        entry = resolve(clause.target)
        value, reason = measure(entry, clause.metric)
        if value is None:
            results.append(Result(clause, None, False, reason))
            continue
        measured = value / clause.scale
        if clause.confidence is not None:
            histogram = histogram_for(clause.target, stream_variant(clause.metric)) if histogram_for else None
            results.append(judge_interval(clause, measured, *interval(clause, entry, histogram)))
            continue
        # Compared as shown: a p99 of 50.0004 ms against "<=50ms" is judged on 50 ms.
        results.append(Result(clause, measured, OPERATORS[clause.op](rounded(measured, clause), clause.threshold)))
    return results


def stream_variant(metric: str) -> str:
    """The hdr/ log variant a metric's histogram is: "" (latency), "first_response" or "gap"."""
    return STREAM_METRICS[metric][0].removesuffix("_us") if metric in STREAM_METRICS else ""


def failed(results: Iterable[Result]) -> list[Result]:
    """Clauses that did not pass: failed or inconclusive (both give exit code 3)."""
    return [result for result in results if not result.passed]


def resolver_for_summary(summary: dict) -> Callable[[str | None], dict]:
    """resolve(target) over summary.json: an endpoint, a model, or overall.

    Merged percentiles (overall, a model with several endpoints) are read from the
    `overall` and `model_totals` entries the load test writes; a summary without them
    (written by an older version) can be checked only where no merge is needed.
    """
    entries = summary.get("endpoints", [])

    def merged(name: str, group: list[dict], stored: dict | None) -> dict:
        if stored is not None:
            return stored
        if len(group) == 1:
            return group[0]
        if not group:
            return combine([], name, {})
        raise SloError(f"summary.json has no merged percentiles for '{name}' (its {len(group)} endpoints)")

    def resolve(target: str | None) -> dict:
        if target is None:
            return merged(OVERALL, entries, summary.get("overall"))
        for entry in entries:
            if entry["name"] == target:
                return entry
        group = [entry for entry in entries if entry.get("model") == target]
        return merged(target, group, summary.get("model_totals", {}).get(target))

    return resolve
