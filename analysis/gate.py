"""A regression gate: is the candidate run worse than the baseline beyond noise, by more than
each clause allows?

    python -m analysis compare BASELINE CANDIDATE --gate "p99<+10%,throughput>-5%,fail_ratio<+0.5%" --junit gate.xml

Clauses use `--slo`'s shape, written relative to the baseline: `[ENDPOINT_OR_MODEL:]METRIC OP CHANGE`.

    metric                       op      change         regressed when (95 % intervals)
    p50 p90 p95 p99 p99.9 mean   < <=    +N% (or -N%)   candidate's lower bound > baseline's upper bound x (1 + N %)
    throughput rps               > >=    -N% (or +N%)   candidate's upper bound < baseline's lower bound x (1 - N %)
    fail_ratio                   < <=    +N% (points)   candidate's lower bound > baseline's upper bound + N points

Each side's interval comes from the data its run holds. A latency's is a bootstrap over the
run's windows: the HDR interval logs' windows drawn with replacement (BOOTSTRAP times, a fixed
seed: the same runs always get the same verdict), each draw merged and its percentile (or mean)
taken; the 2.5th and 97.5th of those are the interval. It holds how much the run moved from
window to window, the nearer proxy for run-to-run noise than the sampling noise of its requests
alone (without HDR logs, summary.json's order-statistics interval is used). Throughput's is the
interval of the mean per-window rate (timeseries.csv's full windows: mean +- t x sd / sqrt(n)).

Windows are not independent: a stalled host or a busy neighbour slows several seconds in a row,
and an interval that draws windows one by one is then too narrow (the same build once failed its
p99 clause against itself at 80 s). So each side's windows are also drawn in blocks of
consecutive windows (circular block bootstrap), the block as long as the lags over which the
per-window figure (mean latency, or rate) stays correlated beyond what independent windows show
(|autocorrelation| >= 2 / sqrt(n)); 1 when it does not, and the interval is then the one above.
The interval used is the wider of the two at each end: dependence only ever widens it. The
verdict is "regressed" only when the intervals are apart by more than the change allows,
"improved" when the candidate is better beyond noise, else "within noise". A clause that names
no endpoint applies to every endpoint the runs share (matched as compare matches them).

A clause that cannot be judged (a run too short for two windows, or a figure a run lacks) is
"cannot judge" and does not pass, as `--slo`'s inconclusive does not: a gate that judged nothing
must not let a build through.

Exit codes: 0 every clause passed, 3 a clause regressed or could not be judged (as `--slo`), 2
bad input (run directories only: a perf_analyzer CSV holds no windows to judge noise by).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis import noise
from analysis.series import Series
from loadtests.run_format.hdr import bucket_values, new_histogram, read_logs
from loadtests.run_format.slo.relative import LATENCY, RATES, RATIOS, GateClause, GateError

EXIT_REGRESSED = 3
REGRESSED, IMPROVED, WITHIN = "regressed", "improved", "within noise"
CANNOT_JUDGE = "cannot judge"
Z_95 = 1.96
BOOTSTRAP = 400  # resamples of a run's windows per latency interval
SEED = 20261129
PERCENTILE_OF = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99.9": 99.9}


@dataclass(frozen=True)
class GateResult:
    clause: GateClause
    endpoint: str
    baseline: float | None
    candidate: float | None
    difference: tuple[float, float] | None  # the change's interval (percent; fail_ratio: points)
    verdict: str

    @property
    def failed(self) -> bool:
        """Not passed: regressed, or not judged."""
        return self.verdict in (REGRESSED, CANNOT_JUDGE)

    @property
    def regressed(self) -> bool:
        return self.verdict == REGRESSED

    def line(self) -> str:
        clause, unit = self.clause, _unit(self.clause.metric)
        if self.baseline is None or self.candidate is None or self.difference is None:
            return f"{clause.text} [{self.endpoint}]: {CANNOT_JUDGE} (a run lacks this figure or its windows)"
        if clause.metric in RATIOS:
            change = f"{(self.candidate - self.baseline) * 100:+.2f} points"
            low, high = self.difference
            interval, allowed = f"{low:+.2f} to {high:+.2f} points", f"{clause.change:+g} points"
        else:
            change = f"{(self.candidate / self.baseline - 1) * 100:+.1f} %" if self.baseline else "n/a"
            interval, allowed = f"{self.difference[0]:+.1f} to {self.difference[1]:+.1f} %", f"{clause.change:+g} %"
        return (
            f"{clause.text} [{self.endpoint}]: baseline {_shown(self.baseline, clause.metric)}{unit}, candidate "
            f"{_shown(self.candidate, clause.metric)}{unit}, {change} (95 % interval {interval}), allowed "
            f"{allowed}: {self.verdict}"
        )


def _unit(metric: str) -> str:
    return " ms" if metric in LATENCY else " infer/s" if metric == "throughput" else " req/s" if metric == "rps" else ""


def _shown(value: float, metric: str) -> str:
    if metric in LATENCY:
        return f"{value / 1000:,.3f}"
    if metric in RATIOS:
        return f"{value:.4%}"
    return f"{value:,.1f}"


def _wilson(failures: int, requests: int) -> noise.Interval:
    if not requests:
        return None
    p, z2 = failures / requests, Z_95**2
    centre = (p + z2 / (2 * requests)) / (1 + z2 / requests)
    half = Z_95 * math.sqrt(p * (1 - p) / requests + z2 / (4 * requests**2)) / (1 + z2 / requests)
    return max(0.0, centre - half), min(1.0, centre + half)


def measure(series: Series, metric: str) -> tuple[float | None, noise.Interval]:
    """A side's figure and its interval (µs, infer/s or req/s, or a fraction)."""
    endpoint = series.endpoint
    if endpoint is None:
        return None, None
    if metric in RATES:
        count = "inferences" if metric == "throughput" else "requests"
        rates = noise.full_window_rates(series.timeseries, series.window_s, count=count)
        return getattr(endpoint, RATES[metric]), _widest(noise.mean_interval(rates), _rate_blocks(rates.to_numpy()))
    if metric in RATIOS:
        value = endpoint.failures / endpoint.requests if endpoint.requests else None
        return value, _wilson(endpoint.failures, endpoint.requests)
    value = endpoint.latency_us.get(metric)
    resampled = _bootstrap(series, metric)
    if resampled is not None:
        return value, resampled
    order = noise.latency_interval((endpoint.latency_ci_us or {}).get(metric)) if metric != "mean" else None
    return value, order


@dataclass(frozen=True)
class Windows:
    """A run's windows of one endpoint: a (windows x buckets) count matrix over the buckets any
    window uses, and each bucket's value as hdrh reports it: its highest equivalent value for a
    percentile, its midpoint for the mean (loadtests/run_format/hdr.summarise_us does the same)."""

    counts: np.ndarray
    highest: np.ndarray
    midpoint: np.ndarray

    def statistic(self, merged: np.ndarray, metric: str) -> np.ndarray:
        """The figure of each row of `merged` (merged windows' counts), as summary.json computes it."""
        totals = merged.sum(axis=1)
        if metric == "mean":
            return (merged @ self.midpoint) / totals
        cumulative = np.cumsum(merged, axis=1)
        # hdrh's get_target_count_at_percentile: the count rounded, at least 1.
        targets = np.maximum((PERCENTILE_OF[metric] * totals / 100 + 0.5).astype(np.int64), 1)
        at = np.array([np.searchsorted(row, target) for row, target in zip(cumulative, targets, strict=True)])
        return self.highest[np.minimum(at, len(self.highest) - 1)]


def windows_of(series: Series) -> Windows | None:
    """The endpoint's windows from the run's HDR interval log (None without one, or with one window)."""
    if series.hdr_dir is None or not series.hdr_dir.is_dir():
        return None
    log = read_logs(series.hdr_dir).get(series.name)
    if log is None:
        return None
    rows, histogram = [], None
    for _start, _length, encoded in log.intervals():
        histogram = new_histogram()
        histogram.decode_and_add(encoded)
        counts = np.ctypeslib.as_array(histogram.counts, shape=(histogram.counts_len,))
        indexes = np.flatnonzero(counts)
        if len(indexes):
            rows.append((indexes, counts[indexes].astype(np.int64)))
    if len(rows) < 2 or histogram is None:
        return None
    used = np.unique(np.concatenate([indexes for indexes, _ in rows]))
    matrix = np.zeros((len(rows), len(used)), dtype=np.int64)
    for row, (indexes, counts) in enumerate(rows):
        matrix[row, np.searchsorted(used, indexes)] = counts
    lowest, size = bucket_values(histogram, used)
    return Windows(matrix, (lowest + size - 1).astype(np.float64), (lowest + (size >> 1)).astype(np.float64))


def _bootstrap(series: Series, metric: str) -> noise.Interval:
    """The 95 % interval of a latency figure over BOOTSTRAP resamples of the run's windows: drawn
    one by one, and in blocks as long as the windows' mean latency stays correlated; the wider."""
    windows = windows_of(series)
    if windows is None:
        return None
    n = len(windows.counts)
    independent = _percentiles(windows.statistic(_draws(n, 1) @ windows.counts, metric))
    block = dependence_block(windows.statistic(windows.counts, "mean"))
    if block == 1:
        return independent
    return _widest(independent, _percentiles(windows.statistic(_draws(n, block) @ windows.counts, metric)))


def _rate_blocks(rates: np.ndarray) -> noise.Interval:
    """The mean rate's 95 % interval from block resamples of the windows' rates (None when the
    windows are independent, or too few)."""
    block = dependence_block(rates) if len(rates) >= 2 else 1
    if block == 1:
        return None
    draws = _draws(len(rates), block)
    return _percentiles(draws @ rates / len(rates))


def dependence_block(values: np.ndarray) -> int:
    """How many consecutive windows move together: 1 + the lags (from 1 on) over which the
    per-window figure's autocorrelation stays at or beyond 2 / sqrt(n), the band independent
    windows keep it within 95 % of the time; at most a quarter of the windows. The figure's ranks
    are correlated, not its values: one stalled window (a mean of a second among 20-ms ones)
    would otherwise decide alone."""
    n = len(values)
    ranks = np.argsort(np.argsort(np.asarray(values, dtype=float), kind="stable"), kind="stable")
    centred = ranks - (n - 1) / 2
    variance = float(centred @ centred)
    if n < 8 or variance <= 0:
        return 1
    band, lag = 2 / math.sqrt(n), 0
    while lag + 1 <= n // 4 and abs(float(centred[: -(lag + 1)] @ centred[lag + 1 :]) / variance) >= band:
        lag += 1
    return lag + 1


def _draws(n: int, block: int) -> np.ndarray:
    """BOOTSTRAP resamples of n windows as each window's multiplicity (BOOTSTRAP x n): one by one
    (block 1), or as ceil(n / block) runs of `block` consecutive windows from random starts,
    wrapping at the end, cut to n windows."""
    rng = np.random.default_rng(SEED)
    if block <= 1:
        return rng.multinomial(n, np.full(n, 1 / n), size=BOOTSTRAP)
    starts = rng.integers(0, n, size=(BOOTSTRAP, math.ceil(n / block)))
    chosen = ((starts[:, :, None] + np.arange(block)) % n).reshape(BOOTSTRAP, -1)[:, :n]
    draws = np.zeros((BOOTSTRAP, n), dtype=np.int64)
    np.add.at(draws, (np.repeat(np.arange(BOOTSTRAP), n), chosen.ravel()), 1)
    return draws


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _widest(first: noise.Interval, second: noise.Interval) -> noise.Interval:
    if first is None or second is None:
        return first or second
    return min(first[0], second[0]), max(first[1], second[1])


def judge(clause: GateClause, base: Series, candidate: Series) -> GateResult:
    b, b_int = measure(base, clause.metric)
    c, c_int = measure(candidate, clause.metric)
    name = candidate.name if candidate.name == base.name else f"{base.name} vs {candidate.name}"
    if b is None or c is None or b_int is None or c_int is None:
        return GateResult(clause, name, b, c, None, CANNOT_JUDGE)  # too few requests or windows to tell noise
    if clause.metric in RATIOS:
        limit = b_int[1] + clause.change / 100
        difference = ((c_int[0] - b_int[1]) * 100, (c_int[1] - b_int[0]) * 100)
        regressed, improved = c_int[0] > limit, c_int[1] < b_int[0]
    else:
        factor = 1 + clause.change / 100
        difference = (_pct(c_int[0], b_int[1]), _pct(c_int[1], b_int[0]))
        if clause.higher_is_worse:
            regressed, improved = c_int[0] > b_int[1] * factor, c_int[1] < b_int[0]
        else:
            regressed, improved = c_int[1] < b_int[0] * factor, c_int[0] > b_int[1]
    verdict = REGRESSED if regressed else IMPROVED if improved else WITHIN
    return GateResult(clause, name, b, c, difference, verdict)


def _pct(a: float, b: float) -> float:
    return (a / b - 1) * 100 if b and math.isfinite(a) and math.isfinite(b) else math.inf


def evaluate(clauses: list[GateClause], groups: list[list[Series]]) -> list[GateResult]:
    """Every clause on every matched pair (baseline, candidate) it names. GateError for a
    clause whose target neither run has."""
    results = []
    for clause in clauses:
        chosen = [
            group
            for group in groups
            if clause.target is None
            or clause.target in {group[0].name, group[1].name}
            or clause.target in {getattr(group[0].endpoint, "model", None), getattr(group[1].endpoint, "model", None)}
        ]
        if not chosen:
            names = sorted({side.name for group in groups for side in group[:2]})
            raise GateError(f"--gate clause '{clause.text}': no endpoint or model '{clause.target}' in both runs "
                            f"(known: {', '.join(names)})")  # fmt: skip
        results += [judge(clause, group[0], group[1]) for group in chosen]
    return results


def summary_lines(results: list[GateResult]) -> list[str]:
    regressed = sum(result.regressed for result in results)
    unjudged = sum(result.verdict == CANNOT_JUDGE for result in results)
    parts = [f"{regressed} of {len(results)} clause(s) regressed"] if regressed else []
    parts += [f"{unjudged} could not be judged"] if unjudged else []
    tail = (
        f"Gate: {', '.join(parts)} (exit code {EXIT_REGRESSED})"
        if parts
        else f"Gate: no clause regressed beyond noise ({len(results)} checked)"
    )
    return [result.line() for result in results] + [tail]


def write_junit(path: str | Path, results: list[GateResult]) -> Path:
    """JUnit XML: one testcase per clause and endpoint, a <failure> on each regressed one."""
    testsuites = ET.Element("testsuites", name="triton-loadtest")
    failures = sum(result.failed for result in results)
    suite = ET.SubElement(testsuites, "testsuite", name="gate", tests=str(len(results)), failures=str(failures))
    for result in results:
        case = ET.SubElement(suite, "testcase", classname="triton-loadtest.gate", name=result.clause.text)
        if result.failed:
            kind = "regression" if result.regressed else "not judged"
            failure = ET.SubElement(case, "failure", message=result.line(), type=kind)
            failure.text = result.line()
        else:
            ET.SubElement(case, "system-out").text = result.line()
    ET.indent(testsuites)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(testsuites).write(path, encoding="utf-8", xml_declaration=True)
    return path
