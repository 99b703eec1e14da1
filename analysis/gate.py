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
interval of the mean per-window rate (timeseries.csv's full windows). The
verdict is "regressed" only when the intervals are apart by more than the change allows,
"improved" when the candidate is better beyond noise, else "within noise". A clause that names
no endpoint applies to every endpoint the runs share (matched as compare matches them).

Exit codes: 0 no clause regressed, 3 a clause regressed (as `--slo`), 2 bad input.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

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


def _window_interval(timeseries: pd.DataFrame | None, column: str, window_s: float) -> noise.Interval:
    """95 % interval of the mean per-window value of `column` over the full windows with requests."""
    if timeseries is None or column not in timeseries:
        return None
    rows = timeseries[timeseries["requests"] > timeseries["failures"]]
    if "covered_s" in rows:
        rows = rows[rows["covered_s"] >= noise.FULL_WINDOW * window_s]
    values = rows[column].astype(float).dropna()
    if len(values) < 2:
        return None
    n, mean, sd = len(values), float(values.mean()), float(values.std(ddof=1))
    half = (noise.T_975[n - 2] if n - 1 <= len(noise.T_975) else 1.96) * sd / math.sqrt(n)
    return mean - half, mean + half


def _union(*intervals: noise.Interval) -> noise.Interval:
    known = [interval for interval in intervals if interval is not None]
    return (min(i[0] for i in known), max(i[1] for i in known)) if known else None


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
        value = getattr(endpoint, RATES[metric])
        column = "throughput_infer_per_s" if metric == "throughput" else "throughput_rps"
        return value, _window_interval(series.timeseries, column, series.window_s)
    if metric in RATIOS:
        value = endpoint.failures / endpoint.requests if endpoint.requests else None
        return value, _wilson(endpoint.failures, endpoint.requests)
    value = endpoint.latency_us.get(metric)
    resampled = _bootstrap(series, metric)
    if resampled is not None:
        return value, resampled
    order = noise.latency_interval((endpoint.latency_ci_us or {}).get(metric)) if metric != "mean" else None
    return value, order


def _windows(series: Series) -> tuple[np.ndarray, np.ndarray] | None:
    """The run's windows of this endpoint as a (windows x buckets) count matrix over the buckets
    any window uses, and each bucket's value (hdrh's highest equivalent value, µs)."""
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
    return matrix, (lowest + size - 1).astype(np.float64)


def _bootstrap(series: Series, metric: str) -> noise.Interval:
    """The 95 % interval of a latency figure over BOOTSTRAP resamples of the run's windows."""
    found = _windows(series)
    if found is None:
        return None
    matrix, values = found
    rng = np.random.default_rng(SEED)
    draws = rng.multinomial(len(matrix), np.full(len(matrix), 1 / len(matrix)), size=BOOTSTRAP)
    merged = draws @ matrix  # (resamples x buckets)
    totals = merged.sum(axis=1)
    if metric == "mean":
        stats = (merged @ values) / totals
    else:
        cumulative = np.cumsum(merged, axis=1)
        targets = np.ceil(totals * PERCENTILE_OF[metric] / 100).astype(np.int64)
        at = np.array([np.searchsorted(row, target) for row, target in zip(cumulative, targets, strict=True)])
        stats = values[np.minimum(at, len(values) - 1)]
    low, high = np.percentile(stats, [2.5, 97.5])
    return float(low), float(high)


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
    bad = [result for result in results if result.regressed]
    tail = (
        f"Gate: {len(bad)} of {len(results)} clause(s) regressed (exit code {EXIT_REGRESSED})"
        if bad
        else f"Gate: no clause regressed beyond noise ({len(results)} checked)"
    )
    return [result.line() for result in results] + [tail]


def write_junit(path: str | Path, results: list[GateResult]) -> Path:
    """JUnit XML: one testcase per clause and endpoint, a <failure> on each regressed one."""
    testsuites = ET.Element("testsuites", name="triton-loadtest")
    failures = sum(result.regressed for result in results)
    suite = ET.SubElement(testsuites, "testsuite", name="gate", tests=str(len(results)), failures=str(failures))
    for result in results:
        case = ET.SubElement(suite, "testcase", classname="triton-loadtest.gate", name=result.clause.text)
        if result.regressed:
            failure = ET.SubElement(case, "failure", message=result.line(), type="regression")
            failure.text = result.line()
        else:
            ET.SubElement(case, "system-out").text = result.line()
    ET.indent(testsuites)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(testsuites).write(path, encoding="utf-8", xml_declaration=True)
    return path
