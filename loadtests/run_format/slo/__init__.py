"""SLO gates: parse `--slo` clauses, evaluate them on summary.json numbers, report pass/fail.

Pure Python (no Locust, no gevent): the load test evaluates at the end of a run
(loadtests/run/slo_gate.py) and `python -m analysis check RUN_DIR` evaluates a finished run
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
            | ttfr_P | gap_P (P one of the above)                a streamed endpoint's time to first
                                                           response / gap between responses, UNIT required
            | fail_ratio | late_ratio                         fraction (0.01) or percentage (1%)
            | failures | dropped                             counts
            | rps | infer_per_s                              per second, optional UNIT /s
    OP     := < | <= | > | >=
    CONFIDENCE := a percentage in (0, 100), percentiles only (ttfr_p99 and gap_p99 too): judge the
              clause on the percentile's confidence interval (loadtests/run_format/confidence.py)
              instead of its point estimate
    PRESET := mlperf-resnet50 | mlperf-bert                    (MLPERF_PRESETS)

A clause with a confidence has three verdicts. For `<` and `<=`: pass when the interval's
upper bound meets the limit, fail when its lower bound does not, inconclusive otherwise
(the limit lies inside the interval, or too few requests to bound the percentile at that
confidence). For `>` and `>=` the roles of the bounds swap. Inconclusive counts as not
passed: exit code 3, like a failure, with its own word in the table and in summary.json.

Latency is that of successful requests, from summary.json's `latency_us` (for open-loop
runs the corrected latency, timed from the intended send). `late_ratio` and `dropped`
exist only for open-loop traffic.

Modules: clauses.py (the grammar), verdicts.py (judging summary.json entries), outputs.py
(the table and JUnit XML), relative.py (`--gate`'s clauses, relative to a baseline run).
analysis/check.py applies them to a finished run directory.
"""

from __future__ import annotations

from loadtests.run_format.slo.clauses import (
    LATENCY_METRICS,
    METRICS,
    MLPERF_PRESETS,
    OPEN_LOOP_METRICS,
    PERCENTILE_METRICS,
    STREAM_METRICS,
    TIMED_METRICS,
    Clause,
    SloError,
    check_streamed,
    check_targets,
    open_loop_clauses,
    parse_clause,
    parse_slo,
    percentile_of,
)
from loadtests.run_format.slo.outputs import format_table, junit_xml, write_junit
from loadtests.run_format.slo.verdicts import (
    EXIT_SLO_FAILED,
    FAIL,
    INCONCLUSIVE,
    PASS,
    Result,
    evaluate,
    failed,
    interval,
    judge_interval,
    measure,
    resolver_for_summary,
    stream_variant,
)

__all__ = [
    "EXIT_SLO_FAILED",
    "FAIL",
    "INCONCLUSIVE",
    "LATENCY_METRICS",
    "METRICS",
    "MLPERF_PRESETS",
    "OPEN_LOOP_METRICS",
    "PASS",
    "PERCENTILE_METRICS",
    "STREAM_METRICS",
    "TIMED_METRICS",
    "Clause",
    "Result",
    "SloError",
    "check_streamed",
    "check_targets",
    "evaluate",
    "failed",
    "format_table",
    "interval",
    "judge_interval",
    "junit_xml",
    "measure",
    "open_loop_clauses",
    "parse_clause",
    "parse_slo",
    "percentile_of",
    "resolver_for_summary",
    "stream_variant",
    "write_junit",
]
