"""SLO gates: parse `--slo` clauses, evaluate them on summary.json numbers, report pass/fail.

Pure Python (no Locust, no gevent): the load test evaluates at the end of a run
(loadtests/slo_gate.py) and `python -m analysis check RUN_DIR` evaluates a finished run
directory, with the same code and the same numbers.

    clauses = parse_slo("p99<50ms, bert_qa [grpc]:p95<=20ms, fail_ratio<1%, infer_per_s>100")
    results = evaluate(clauses, resolve)   # resolve(target) -> a summary.json endpoint entry
    print(format_table(results)); write_junit("slo.xml", results)

Grammar (whitespace around tokens is ignored; clauses are separated by commas):

    SLO    := CLAUSE ("," CLAUSE)*
    CLAUSE := [TARGET ":"] METRIC OP NUMBER [UNIT]
    TARGET := a model name (its endpoints merged) or an endpoint name "MODEL [http|grpc]";
              without a target, the clause is on all endpoints merged ("overall")
    METRIC := p50 | p90 | p95 | p99 | p99.9 | max | mean      latency, UNIT us|µs|ms|s required
            | fail_ratio | late_ratio                         fraction (0.01) or percentage (1%)
            | failures | dropped                             counts
            | rps | infer_per_s                              per second, optional UNIT /s
    OP     := < | <= | > | >=

Latency is that of successful requests, from summary.json's `latency_us` (for open-loop
runs the corrected latency, timed from the intended send). `late_ratio` and `dropped`
exist only for open-loop traffic.
"""

from __future__ import annotations

import json
import operator
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from analysis.output_paths import EXIT_OUTPUT_FAILED, file_problem

EXIT_SLO_FAILED = 3
OVERALL = "overall"
JUNIT_CLASSNAME = "triton-loadtest.slo"

LATENCY_METRICS = ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")
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
    """A clause's verdict. `measured` is in the clause's unit; None when nothing was measured."""

    clause: Clause
    measured: float | None
    passed: bool
    reason: str = ""

    @property
    def message(self) -> str:
        """E.g. "measured 62.1 ms, limit 50 ms"."""
        limit = f"limit {_show(self.clause.threshold, self.clause)}"
        if self.measured is None:
            return f"not measured ({self.reason}), {limit}"
        return f"measured {_show(self.measured, self.clause)}, {limit}"

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
        }


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


def parse_clause(text: str) -> Clause:
    """Parse one clause, e.g. "bert_qa:p99<50ms". Raises SloError naming the clause."""
    clause_text = text.strip()
    if not clause_text:
        raise SloError("empty clause (two commas in a row, or a trailing comma?)")

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
    value_text = condition[match.end() :].strip()
    if metric not in METRICS:
        raise bad(f"unknown metric '{metric}' (known: {', '.join(METRICS)})")
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
    return Clause(clause_text, target or None, metric, op, number, unit)


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


def evaluate(clauses: Iterable[Clause], resolve: Callable[[str | None], dict]) -> list[Result]:
    """Each clause against the entry resolve(target) returns (target None: overall)."""
    results = []
    for clause in clauses:
        value, reason = measure(resolve(clause.target), clause.metric)
        if value is None:
            results.append(Result(clause, None, False, reason))
            continue
        measured = value / clause.scale
        # Compared as shown: a p99 of 50.0004 ms against "<=50ms" is judged on 50 ms.
        results.append(Result(clause, measured, OPERATORS[clause.op](_rounded(measured, clause), clause.threshold)))
    return results


def failed(results: Iterable[Result]) -> list[Result]:
    return [result for result in results if not result.passed]


# -- reporting -----------------------------------------------------------------------
def format_table(results: list[Result]) -> str:
    """The console table: one line per clause, then a verdict line."""
    width = max([len("clause")] + [len(r.clause.text) for r in results])
    where = max([len("endpoint")] + [len(r.clause.endpoint) for r in results])
    lines = ["SLO gates (--slo):", f"{'result':<6}  {'clause':<{width}}  {'endpoint':<{where}}  measured / limit"]
    for result in results:
        verdict = "PASS" if result.passed else "FAIL"
        clause = result.clause
        lines.append(f"{verdict:<6}  {clause.text:<{width}}  {clause.endpoint:<{where}}  {result.message}")
    bad = failed(results)
    if bad:
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
            failure = ET.SubElement(case, "failure", message=result.message, type="SLO")
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


def check_summary(clauses: list[Clause], summary: dict) -> list[Result]:
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
    return evaluate(clauses, resolve)


def check_run(run_dir: str | Path, slo: str | None = None, junit: str | Path | None = None) -> int:
    """`python -m analysis check`: evaluate a finished run directory; returns the exit code.

    0 every clause passed, 3 one failed, 2 the run directory, the clauses or --junit are unusable,
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
            results = check_summary(clauses, summary)
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
            return EXIT_OUTPUT_FAILED
    return EXIT_SLO_FAILED if failed(results) else 0
