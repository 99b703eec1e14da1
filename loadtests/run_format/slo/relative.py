"""`--gate` clauses: a regression gate's grammar, relative to a baseline run (pure: no Locust,
no pandas). Parsed when a load test starts (an error is one line and exit code 2 before any
load) and judged by analysis/gate.py on the two finished runs.

    CLAUSES := CLAUSE ("," CLAUSE)*
    CLAUSE  := [TARGET ":"] METRIC OP CHANGE "%"       TARGET as in --slo (a model or an endpoint)
    METRIC  := p50 | p90 | p95 | p99 | p99.9 | mean     latency; OP < or <=; CHANGE e.g. +10
             | throughput | rps                        OP > or >=; CHANGE e.g. -5
             | fail_ratio                              OP < or <=; CHANGE in percentage points

    parse_gate("p99<+10%,bert_qa:throughput>-5%")   # [GateClause(...), GateClause(...)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loadtests.run_format.slo.clauses import PERCENTILE_METRICS

LATENCY = (*PERCENTILE_METRICS, "mean")  # the percentiles --slo bounds, and the mean
RATES = {"throughput": "throughput_infer_per_s", "rps": "throughput_rps"}
RATIOS = ("fail_ratio",)
_CLAUSE = re.compile(r"^(?P<metric>[a-z0-9_.]+)\s*(?P<op><=|>=|<|>)\s*(?P<change>[+-]?\d+(?:\.\d*)?)\s*%$")


class GateError(ValueError):
    """A malformed --gate, or a clause that cannot apply to these runs. One line."""


@dataclass(frozen=True)
class GateClause:
    text: str
    target: str | None
    metric: str
    op: str
    change: float  # percent (fail_ratio: percentage points)

    @property
    def higher_is_worse(self) -> bool:
        return self.metric not in RATES


def parse_gate(text: str) -> list[GateClause]:
    """'p99<+10%,bert_qa:throughput>-5%' -> clauses; GateError naming the clause otherwise."""
    clauses = []
    for part in (text or "").split(","):
        clause = part.strip()
        if not clause:
            raise GateError("empty --gate clause (two commas in a row, or a trailing comma?)")
        target, _, condition = clause.rpartition(":")
        found = _CLAUSE.match(condition.strip().lower())
        if found is None:
            raise GateError(f"--gate clause '{clause}': write METRIC OP CHANGE%, e.g. p99<+10% or throughput>-5%")
        metric, op, change = found["metric"], found["op"], float(found["change"])
        if metric not in (*LATENCY, *RATES, *RATIOS):
            known = ", ".join((*LATENCY, *RATES, *RATIOS))
            raise GateError(f"--gate clause '{clause}': unknown metric '{metric}' (known: {known})")
        wanted = ">" if metric in RATES else "<"
        if not op.startswith(wanted):
            worse = "lower" if metric in RATES else "higher"
            raise GateError(f"--gate clause '{clause}': {metric} regresses when {worse}: write {metric}{wanted}...")
        clauses.append(GateClause(clause, target.strip() or None, metric, op, change))
    return clauses
