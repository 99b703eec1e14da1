"""`--slo` clauses: the grammar, parsed into Clause values (pure: no Locust, no gevent).

The grammar is in this package's docstring (loadtests/run_format/slo/__init__.py).

    parse_slo("p99<50ms, bert_qa [grpc]:p95<=20ms@95%")   # [Clause(...), Clause(...)]
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import MappingProxyType

from loadtests.run_format.summary import DROPPED, LATE, OVERALL

LATENCY_METRICS = ("p50", "p90", "p95", "p99", "p99.9", "max", "mean")
PERCENTILE_METRICS = ("p50", "p90", "p95", "p99", "p99.9")  # the ones a confidence interval bounds
RATIO_METRICS = ("fail_ratio", "late_ratio")
COUNT_METRICS = ("failures", "dropped")
RATE_METRICS = ("rps", "infer_per_s")
# A streamed endpoint's (decoupled model) time to first response and gaps between responses:
# summary.json's stream.first_response_us / stream.gap_us ("ttfr_p99<200ms", "gap_p99<20ms").
STREAM_METRICS = MappingProxyType(
    {
        f"{prefix}_{m}": (key, m)
        for prefix, key in (("ttfr", "first_response_us"), ("gap", "gap_us"))
        for m in LATENCY_METRICS
    }
)
TIMED_METRICS = LATENCY_METRICS + tuple(STREAM_METRICS)  # the metrics that take a time unit
METRICS = TIMED_METRICS + RATIO_METRICS + COUNT_METRICS + RATE_METRICS
# Metrics measured only by open-loop traffic, and the summary.json key each needs.
OPEN_LOOP_METRICS = {"late_ratio": LATE, "dropped": DROPPED}
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
# interval (docs/guides/ci.md).
MLPERF_PRESETS = {"mlperf-resnet50": "p99<=15ms@98%", "mlperf-bert": "p99<=130ms@98%"}
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
        if self.metric in TIMED_METRICS:
            return LATENCY_UNITS_US[self.unit]
        return 0.01 if self.unit == "%" else 1.0

    @property
    def endpoint(self) -> str:
        return self.target or OVERALL


def rounded(value: float, clause: Clause) -> float:
    """A value in the clause's unit as the suite shows and compares it (µs precision for latency)."""
    if clause.metric in TIMED_METRICS:
        return round(value, LATENCY_DECIMALS[clause.unit])
    if clause.metric in RATE_METRICS:
        return round(value, 3)  # as summary.json rounds throughput
    return float(f"{value:.6g}")


def shown(value: float, clause: Clause) -> str:
    """50000.0 µs of a "p99<50ms" clause -> "50 ms"."""
    number = f"{rounded(value, clause):f}".rstrip("0").rstrip(".") or "0"
    if not clause.unit:
        return number
    return f"{number}{clause.unit}" if clause.unit in ("%", "/s") else f"{number} {clause.unit}"


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


def percentile_of(metric: str) -> str:
    """The percentile a metric names: "p99" of "p99", "ttfr_p99" and "gap_p99"; else the metric."""
    return STREAM_METRICS[metric][1] if metric in STREAM_METRICS else metric


def _parse_confidence(text: str, metric: str, bad: Callable[[str], SloError]) -> float:
    if percentile_of(metric) not in PERCENTILE_METRICS:
        raise bad(
            f"a confidence (@95%) applies only to percentiles ({', '.join(PERCENTILE_METRICS)}, "
            f"and ttfr_/gap_ of them), not {metric}"
        )
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
    if metric in TIMED_METRICS:
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


def check_streamed(clauses: Iterable[Clause], endpoints: dict[str, str], streamed: Iterable[str]) -> None:
    """A ttfr_/gap_ clause needs a streamed endpoint (a decoupled model's) among its target's:
    on none it could only be "not measured". Raises SloError.

    endpoints: endpoint name -> model name; streamed: the endpoints whose model is decoupled.
    """
    streaming = set(streamed)
    for clause in clauses:
        names = [name for name, model in endpoints.items() if clause.target in (None, name, model)]
        if clause.metric not in STREAM_METRICS or not names or streaming.intersection(names):
            continue
        models = sorted({endpoints[name] for name in names})
        raise SloError(
            f"clause '{clause.text}': {clause.metric} is measured on a decoupled model's streamed responses, "
            f"and {', '.join(models)} {'is' if len(models) == 1 else 'are'} not decoupled "
            "(model_transaction_policy { decoupled: true })"
        )


def open_loop_clauses(clauses: Iterable[Clause]) -> list[Clause]:
    return [clause for clause in clauses if clause.metric in OPEN_LOOP_METRICS]
