"""SLO gates: parse `--slo` clauses, evaluate them on summary.json numbers, report pass/fail.

Pure Python (no Locust, no gevent): the load test evaluates at the end of a run
(loadtests/slo_gate.py) and `python -m analysis check RUN_DIR` evaluates a finished run
directory, with the same code and the same numbers.

    clauses = parse_slo("p99<50ms, bert_qa [grpc]:p95<=20ms, fail_ratio<1%, infer_per_s>100")
    results = evaluate(clauses, resolve)   # resolve(target) -> a summary.json endpoint entry
    print(format_table(results)); write_junit("slo.xml", results)

Grammar (whitespace around tokens is ignored; clauses are separated by commas):

    SLO    := CLAUSE ("," CLAUSE)*
    CLAUSE := [TARGET ":"] METRIC OP NUMBER [UNIT] ["@" CONFIDENCE "%"]  |  PRESET
    TARGET := a model name (its endpoints merged) or an endpoint name "MODEL [http|grpc]";
              without a target, the clause is on all endpoints merged ("overall")
    METRIC := p50 | p90 | p95 | p99 | p99.9 | max | mean      latency, UNIT us|µs|ms|s required
            | fail_ratio | late_ratio                         fraction (0.01) or percentage (1%)
            | failures | dropped                             counts
            | rps | infer_per_s                              per second, optional UNIT /s
    OP     := < | <= | > | >=
    CONFIDENCE := a percentage in (0, 100), percentiles only: judge the clause on the percentile's
              confidence interval (analysis/confidence.py) instead of its point estimate
    PRESET := mlperf-resnet50 | mlperf-bert                    (MLPERF_PRESETS)

A clause with a confidence has three verdicts. For `<` and `<=`: pass when the interval's
upper bound meets the limit, fail when its lower bound does not, inconclusive otherwise
(the limit lies inside the interval, or too few requests to bound the percentile at that
confidence). For `>` and `>=` the roles of the bounds swap. Inconclusive counts as not
passed: exit code 3, like a failure, with its own word in the table and in summary.json.

Latency is that of successful requests, from summary.json's `latency_us` (for open-loop
runs the corrected latency, timed from the intended send). `late_ratio` and `dropped`
exist only for open-loop traffic.
"""

from __future__ import annotations

import json
import math
import operator
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analysis.confidence import confidence_label, not_enough_note, percentile_bounds_us
from analysis.hdr import HlogError, new_histogram, read_logs
from analysis.output_paths import EXIT_OUTPUT_FAILED, file_problem

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram

EXIT_SLO_FAILED = 3
OVERALL = "overall"
JUNIT_CLASSNAME = "triton-loadtest.slo"

LATENCY_METRICS = ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")
PERCENTILE_METRICS = ("p50", "p90", "p95", "p99", "p99.9")  # the ones a confidence interval bounds
RATIO_METRICS = ("fail_ratio", "late_ratio")
COUNT_METRICS = ("failures", "dropped")
RATE_METRICS = ("rps", "infer_per_s")
METRICS = LATENCY_METRICS + RATIO_METRICS + COUNT_METRICS + RATE_METRICS
# Metrics measured only by open-loop traffic, and the summary.json key each needs.
OPEN_LOOP_METRICS = {"late_ratio": "late", "dropped": "dropped"}
LATENCY_UNITS_US = {"us": 1.0, "µs": 1.0, "ms": 1_000.0, "s": 1_000_000.0}
# Digits shown per latency unit: microsecond precision, as the rest of the suite shows it.
LATENCY_DECIMALS = {"us": 0, "µs": 0, "ms": 3, "s": 6}
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
# MLPerf Inference's server-scenario latency constraints (MLPerf Inference Rules, mlcommons/
# inference_policies inference_rules.adoc, datacenter benchmark table, "Server latency
# constraint", as of v4.1; tail latency 99 %), judged the way its early-stopping criterion
# judges them: a one-sided bound at c = 0.99, which is the upper end of the two-sided 98 %
# interval (docs/ci.md).
MLPERF_PRESETS = {"mlperf-resnet50": "p99<=15ms@98%", "mlperf-bert": "p99<=130ms@98%"}
PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
_CONFIDENCE = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]*)?)\s*(?P<percent>%?)$")
_OPERATOR = re.compile(r"<=|>=|==|!=|<|>|=")
_VALUE = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE](?P<exponent>[+-]?[0-9]+))?\s*(?P<unit>.*)$")


class SloError(ValueError):
    """A malformed --slo string, or a clause that cannot apply to this run. One line."""


@dataclass(frozen=True)
class Clause:
    """One parsed clause. `threshold` is in the clause's own `unit` (as written)."""

    text: str
    target: str | None
    metric: str
    op: str
    threshold: float
    unit: str
    # Judge on the percentile's confidence interval at this level (0.95), or None: the point estimate.
    confidence: float | None = None

    @property
    def scale(self) -> float:
        """Multiplier from the clause's unit to the base unit (µs for latency, fraction for ratios)."""
        if self.metric in LATENCY_METRICS:
            return LATENCY_UNITS_US[self.unit]
        return 0.01 if self.unit == "%" else 1.0

    @property
    def endpoint(self) -> str:
        return self.target or OVERALL


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
        limit = f"limit {_show(clause.threshold, clause)}"
        if self.measured is None:
            return f"not measured ({self.reason}), {limit}"
        measured = f"measured {_show(self.measured, clause)}"
        if self.bounds is not None and clause.confidence is not None:
            lower, upper = (_show(v, clause) if v is not None else "unbounded" for v in self.bounds)
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
            "measured": None if self.measured is None else _rounded(self.measured, clause),
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
    return None if value is None else _rounded(value, clause)


def _rounded(value: float, clause: Clause) -> float:
    if clause.metric in LATENCY_METRICS:
        return round(value, LATENCY_DECIMALS[clause.unit])
    if clause.metric in RATE_METRICS:
        return round(value, 3)  # as summary.json rounds throughput
    return float(f"{value:.6g}")


def _show(value: float, clause: Clause) -> str:
    number = f"{_rounded(value, clause):f}".rstrip("0").rstrip(".") or "0"
    if not clause.unit:
        return number
    return f"{number}{clause.unit}" if clause.unit in ("%", "/s") else f"{number} {clause.unit}"


# -- parsing -------------------------------------------------------------------------
def parse_slo(text: str | None) -> list[Clause]:
    """Parse a whole --slo string; empty or None means no gates. Raises SloError."""
    if text is None or not text.strip():
        return []
    return [parse_clause(part) for part in text.split(",")]


def _preset(clause_text: str) -> Clause | None:
    expansion = MLPERF_PRESETS.get(clause_text.lower())
    if expansion is None:
        return None
    clause = parse_clause(expansion)
    return Clause(clause_text, None, clause.metric, clause.op, clause.threshold, clause.unit, clause.confidence)


def _parse_confidence(text: str, metric: str, bad: Callable[[str], SloError]) -> float:
    if metric not in PERCENTILE_METRICS:
        raise bad(f"a confidence (@95%) applies only to percentiles ({', '.join(PERCENTILE_METRICS)}), not {metric}")
    match = _CONFIDENCE.match(text.strip())
    if match is None:
        raise bad(f"'@{text.strip()}' is not a confidence (a percentage, e.g. @95%)")
    if not match.group("percent"):
        raise bad(f"'@{text.strip()}': write the confidence as a percentage, e.g. @95%")
    value = float(match.group("number")) / 100
    if not 0 < value < 1:
        raise bad(f"confidence '@{text.strip()}' must be between 0 and 100 % (exclusive)")
    return value


def parse_clause(text: str) -> Clause:
    """Parse one clause, e.g. "bert_qa:p99<50ms". Raises SloError naming the clause."""
    clause_text = text.strip()
    if not clause_text:
        raise SloError("empty clause (two commas in a row, or a trailing comma?)")
    if (preset := _preset(clause_text)) is not None:
        return preset

    def bad(why: str) -> SloError:
        return SloError(f"clause '{clause_text}': {why}")

    target, _, condition = clause_text.rpartition(":")
    target = target.strip()
    if ":" in clause_text and not target:
        raise bad("empty endpoint or model name before ':'")
    match = _OPERATOR.search(condition)
    if match is None:
        raise bad("no comparison (use <, <=, > or >=, e.g. p99<50ms)")
    op = match.group()
    if op not in OPERATORS:
        raise bad(f"'{op}' is not a comparison here (use <, <=, > or >=)")
    metric = condition[: match.start()].strip().lower()
    value_text, at, confidence_text = condition[match.end() :].partition("@")
    value_text = value_text.strip()
    if metric not in METRICS:
        raise bad(f"unknown metric '{metric}' (known: {', '.join(METRICS)})")
    confidence = _parse_confidence(confidence_text, metric, bad) if at else None
    value = _VALUE.match(value_text)
    if value is None:
        raise bad(f"'{value_text}' is not a non-negative number with an optional unit")
    number = float(value.group("number")) * 10 ** int(value.group("exponent") or 0)
    unit = value.group("unit").strip()
    unit = unit if unit == "µs" else unit.lower()
    if metric in LATENCY_METRICS:
        if unit not in LATENCY_UNITS_US:
            wanted = "needs a unit" if not unit else f"has unit '{unit}'; use"
            raise bad(f"{metric} {wanted}: us, ms or s (e.g. {metric}<50ms)")
    elif metric in RATIO_METRICS:
        if unit not in ("", "%"):
            raise bad(f"'{unit}' is not a unit of {metric} (a fraction like 0.01, or a percentage like 1%)")
        if number * (0.01 if unit == "%" else 1.0) > 1.0:
            raise bad(f"{metric} is a fraction between 0 and 1 (or a percentage: 1%)")
    elif metric in RATE_METRICS:
        if unit not in ("", "/s"):
            raise bad(f"'{unit}' is not a unit of {metric} (per second: 100 or 100/s)")
        unit = "/s"
    elif unit:
        raise bad(f"{metric} is a count and takes no unit")
    return Clause(clause_text, target or None, metric, op, number, unit, confidence)


def check_targets(clauses: Iterable[Clause], endpoints: dict[str, str]) -> None:
    """Every clause's target must be a model or an endpoint of the run.

    endpoints: endpoint name -> model name, e.g. {"bert_qa [grpc]": "bert_qa"}.
    """
    known = set(endpoints) | set(endpoints.values())
    for clause in clauses:
        if clause.target is not None and clause.target not in known:
            names = ", ".join(sorted(known)) or "none"
            raise SloError(
                f"clause '{clause.text}': no endpoint or model '{clause.target}' in this run (known: {names})"
            )


def open_loop_clauses(clauses: Iterable[Clause]) -> list[Clause]:
    return [clause for clause in clauses if clause.metric in OPEN_LOOP_METRICS]


# -- measuring and evaluating --------------------------------------------------------
def combine(entries: list[dict], name: str, latency_us: dict[str, float]) -> dict:
    """Several summary.json endpoint entries as one: counts and throughput summed.

    Percentiles cannot be summed: `latency_us` must come from the merged histograms.
    """
    failures_by_class: dict[str, int] = {}
    for entry in entries:
        for failure, count in entry.get("failures_by_class", {}).items():
            failures_by_class[failure] = failures_by_class.get(failure, 0) + int(count)
    combined = {
        "name": name,
        "endpoints": [entry["name"] for entry in entries],
        "requests": sum(int(entry["requests"]) for entry in entries),
        "failures": sum(int(entry["failures"]) for entry in entries),
        "failures_by_class": dict(sorted(failures_by_class.items())),
        "inferences": sum(int(entry["inferences"]) for entry in entries),
        "duration_s": max((float(entry["duration_s"]) for entry in entries), default=0.0),
        "throughput_rps": round(sum(float(entry["throughput_rps"]) for entry in entries), 3),
        "throughput_infer_per_s": round(sum(float(entry["throughput_infer_per_s"]) for entry in entries), 3),
        "latency_us": dict(latency_us),
    }
    for key in OPEN_LOOP_METRICS.values():
        if entries and all(key in entry for entry in entries):
            combined[key] = sum(int(entry[key]) for entry in entries)
    return combined


def measure(entry: dict, metric: str) -> tuple[float | None, str]:
    """A metric of one summary.json entry in its base unit, or (None, why not)."""
    requests = int(entry.get("requests", 0))
    failures = int(entry.get("failures", 0))
    if metric in LATENCY_METRICS:
        if requests - failures <= 0:
            return None, "no successful requests"
        return float(entry["latency_us"][metric]), ""
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


def late_ratio(late: int, requests: int) -> float:
    """The share of sent requests that went out late (dropped ones were never sent): the one
    definition the console warning, the findings and the `late_ratio` gate share."""
    return late / requests if requests else 0.0


def interval(
    clause: Clause, entry: dict, histogram: HdrHistogram | None
) -> tuple[tuple[float | None, float | None] | None, str]:
    """A percentile's confidence interval in µs at the clause's confidence: from the merged
    histogram when there is one (any confidence), else from summary.json's `latency_ci_us`
    (which holds one confidence, DEFAULT_CONFIDENCE). (None, why) when neither has it."""
    assert clause.confidence is not None
    if histogram is not None:
        bounds = percentile_bounds_us(histogram, clause.confidence).get(clause.metric)
    elif entry.get("confidence") == clause.confidence and "latency_ci_us" in entry:
        bounds = entry["latency_ci_us"].get(clause.metric)
    else:
        stored = entry.get("confidence")
        held = f"holds bounds at {confidence_label(stored)} only" if stored else "holds no bounds"
        return None, f"summary.json {held}, and no hdr/ logs to compute them at {confidence_label(clause.confidence)}"
    if not bounds:
        return None, "no successful requests"
    return (bounds[0], bounds[1]), ""


def judge_interval(
    clause: Clause, measured: float, bounds: tuple[float | None, float | None] | None, why_not: str
) -> Result:
    """Pass when the whole interval meets the limit, fail when none of it does, else inconclusive."""
    if bounds is None:
        return Result(clause, measured, False, why_not, None, inconclusive=True)
    scaled = tuple(None if v is None else v / clause.scale for v in bounds)
    compare = OPERATORS[clause.op]
    lower, upper = (None if v is None else _rounded(v, clause) for v in scaled)
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
    histogram_for: Callable[[str | None], HdrHistogram | None] | None = None,
) -> list[Result]:
    """Each clause against the entry resolve(target) returns (target None: overall).

    histogram_for(target): the target's merged latency histogram, for clauses with a confidence
    other than the one summary.json stores; optional.
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
            histogram = histogram_for(clause.target) if histogram_for is not None else None
            results.append(judge_interval(clause, measured, *interval(clause, entry, histogram)))
            continue
        # Compared as shown: a p99 of 50.0004 ms against "<=50ms" is judged on 50 ms.
        results.append(Result(clause, measured, OPERATORS[clause.op](_rounded(measured, clause), clause.threshold)))
    return results


def failed(results: Iterable[Result]) -> list[Result]:
    """Clauses that did not pass: failed or inconclusive (both give exit code 3)."""
    return [result for result in results if not result.passed]


# -- reporting -----------------------------------------------------------------------
def format_table(results: list[Result]) -> str:
    """The console table: one line per clause, then a verdict line."""
    width = max([len("clause")] + [len(r.clause.text) for r in results])
    where = max([len("endpoint")] + [len(r.clause.endpoint) for r in results])
    verdict_width = 12 if any(r.inconclusive for r in results) else 6
    lines = [
        "SLO gates (--slo):",
        f"{'result':<{verdict_width}}  {'clause':<{width}}  {'endpoint':<{where}}  measured / limit",
    ]
    for result in results:
        verdict = result.verdict.upper()
        clause = result.clause
        cells = f"{verdict:<{verdict_width}}  {clause.text:<{width}}  {clause.endpoint:<{where}}"
        lines.append(f"{cells}  {result.message}")
    bad = failed(results)
    unsure = sum(result.inconclusive for result in bad)
    if unsure:
        lines.append(
            f"SLO: {len(bad) - unsure} of {len(results)} clauses failed, {unsure} inconclusive "
            f"(too little evidence to pass; exit code {EXIT_SLO_FAILED})"
        )
    elif bad:
        lines.append(f"SLO: {len(bad)} of {len(results)} clauses failed (exit code {EXIT_SLO_FAILED})")
    else:
        lines.append(f"SLO: all {len(results)} clauses passed")
    return "\n".join(lines)


def junit_xml(results: list[Result], suite: str = "slo") -> ET.ElementTree:
    """JUnit XML: one testcase per clause, a <failure> on each failed one."""
    testsuites = ET.Element("testsuites", name="triton-loadtest")
    testsuite = ET.SubElement(
        testsuites, "testsuite", name=suite, tests=str(len(results)), failures=str(len(failed(results))), errors="0"
    )
    for result in results:
        case = ET.SubElement(testsuite, "testcase", classname=JUNIT_CLASSNAME, name=result.clause.text)
        if result.passed:
            ET.SubElement(case, "system-out").text = result.message
        else:
            kind = "SLO inconclusive" if result.inconclusive else "SLO"
            failure = ET.SubElement(case, "failure", message=result.message, type=kind)
            failure.text = f"{result.clause.text} on {result.clause.endpoint}: {result.message}"
    ET.indent(testsuites)
    return ET.ElementTree(testsuites)


def write_junit(path: str | Path, results: list[Result], suite: str = "slo") -> Path:
    path = Path(path)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(results, suite).write(path, encoding="utf-8", xml_declaration=True)
    return path


# -- a finished run directory --------------------------------------------------------
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


def histograms_from_logs(run_dir: Path, summary: dict) -> Callable[[str | None], HdrHistogram | None] | None:
    """histogram_for(target) over a finished run's hdr/ logs (the whole run merged), so that a
    clause can ask for a confidence summary.json does not hold; None without logs."""
    try:
        logs = read_logs(run_dir / "hdr")
    except (HlogError, OSError):
        logs = {}  # the clause then says why it is not measured
    if not logs:
        return None
    models = {entry["name"]: entry.get("model", "") for entry in summary.get("endpoints", [])}
    whole_run = [(-math.inf, math.inf)]
    cache: dict[str, HdrHistogram] = {}

    def of(name: str) -> HdrHistogram:
        if name not in cache:
            cache[name] = logs[name].merge(whole_run, 0.0)[0]
        return cache[name]

    def histogram_for(target: str | None) -> HdrHistogram | None:
        names = [name for name in logs if target is None or name == target or models.get(name) == target]
        if not names:
            return None
        merged = new_histogram()
        for name in names:
            merged.add(of(name))
        return merged

    return histogram_for


def check_summary(
    clauses: list[Clause], summary: dict, histogram_for: Callable[[str | None], HdrHistogram | None] | None = None
) -> list[Result]:
    """Evaluate clauses on a finished run's summary.json; raises SloError if one cannot apply."""
    entries = summary.get("endpoints", [])
    check_targets(clauses, {entry["name"]: entry.get("model", "") for entry in entries})
    for clause in open_loop_clauses(clauses):
        key = OPEN_LOOP_METRICS[clause.metric]
        if not any(key in entry for entry in entries):
            raise SloError(f"clause '{clause.text}': {clause.metric} needs open-loop traffic; this run has no '{key}'")
    resolve = resolver_for_summary(summary)
    for clause in clauses:
        resolve(clause.target)  # raises here, before any result is reported
    return evaluate(clauses, resolve, histogram_for)


def check_run(run_dir: str | Path, slo: str | None = None, junit: str | Path | None = None) -> int:
    """`python -m analysis check`: evaluate a finished run directory; returns the exit code.

    0 every clause passed, 3 one failed or was inconclusive, 2 the run directory, the clauses or --junit are unusable,
    4 the JUnit file could not be written after all.
    Without `slo`, the run's own --slo (config.json) is checked again.
    """
    run_dir = Path(run_dir)
    try:
        summary_path = run_dir / "summary.json"
        if not summary_path.is_file():
            raise SloError(f"{summary_path} is missing: is {run_dir} a finished run directory?")
        try:
            summary = json.loads(summary_path.read_text())
        except json.JSONDecodeError as error:
            raise SloError(f"{summary_path} is not valid JSON ({error.msg} at line {error.lineno})") from None
        if slo is None:
            config_path = run_dir / "config.json"
            options = json.loads(config_path.read_text()).get("options", {}) if config_path.is_file() else {}
            slo = str(options.get("slo") or "")
            if not slo.strip():
                raise SloError(f"no --slo given, and the run in {run_dir} had none")
        try:
            clauses = parse_slo(slo)
            if not clauses:
                raise SloError("no clauses")
            needs_logs = any(clause.confidence is not None for clause in clauses)
            results = check_summary(clauses, summary, histograms_from_logs(run_dir, summary) if needs_logs else None)
        except SloError as error:
            raise SloError(f"--slo '{slo.strip()}': {error}") from None
        problem = file_problem(junit) if junit else None
        if problem:
            raise SloError(f"--junit {junit}: {problem}")
    except (SloError, json.JSONDecodeError) as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        return 2
    print(format_table(results), flush=True)
    if junit:
        try:
            print(f"JUnit: {write_junit(junit, results)}", flush=True)
        except OSError as error:
            print(f"error: --junit {junit}: {error.strerror or error}", file=sys.stderr, flush=True)
            # A failed clause says more than a missing file: 3 wins over 4, as at the end of a run.
            return EXIT_SLO_FAILED if failed(results) else EXIT_OUTPUT_FAILED
    return EXIT_SLO_FAILED if failed(results) else 0
