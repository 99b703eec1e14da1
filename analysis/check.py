"""`python -m analysis check RUN_DIR`: a finished run directory's SLO verdict.

The clauses and their evaluation are the run-directory format's (loadtests/run_format/slo/),
the same code the load test's gate runs at the end of a run, on the same numbers.

    python -m analysis check runs/20261122T014233Z-demo --slo "p99<50ms@95%" --junit slo.xml
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from hdrh.histogram import HdrHistogram

from loadtests.run_format.files import CONFIG_JSON, HDR_DIR, SUMMARY_JSON
from loadtests.run_format.hdr import FIRST_RESPONSE, GAP, HlogError, new_histogram, read_logs
from loadtests.run_format.output_paths import EXIT_OUTPUT_FAILED, file_problem
from loadtests.run_format.slo import (
    EXIT_SLO_FAILED,
    OPEN_LOOP_METRICS,
    Clause,
    Result,
    SloError,
    check_targets,
    evaluate,
    failed,
    format_table,
    open_loop_clauses,
    parse_slo,
    resolver_for_summary,
    write_junit,
)


def histograms_from_logs(run_dir: Path, summary: dict) -> Callable[[str | None, str], HdrHistogram | None] | None:
    """histogram_for(target, variant) over a finished run's hdr/ logs (the whole run merged), so
    that a clause can ask for a confidence summary.json does not hold, and a ttfr_/gap_ clause
    for one at all (variant "first_response" or "gap": hdr/<endpoint>.<variant>.hlog); None without logs."""
    logs = {variant: _logs(run_dir, variant) for variant in ("", FIRST_RESPONSE, GAP)}
    if not logs[""]:
        return None
    models = {entry["name"]: entry.get("model", "") for entry in summary.get("endpoints", [])}
    whole_run = [(-math.inf, math.inf)]
    cache: dict[tuple[str, str], HdrHistogram] = {}

    def of(name: str, variant: str) -> HdrHistogram:
        if (name, variant) not in cache:
            cache[(name, variant)] = logs[variant][name].merge(whole_run, 0.0)[0]
        return cache[(name, variant)]

    def histogram_for(target: str | None, variant: str = "") -> HdrHistogram | None:
        found = logs.get(variant, {})
        names = [name for name in found if target is None or name == target or models.get(name) == target]
        if not names:
            return None
        merged = new_histogram()
        for name in names:
            merged.add(of(name, variant))
        return merged

    return histogram_for


def _logs(run_dir: Path, variant: str) -> dict:
    try:
        return read_logs(run_dir / HDR_DIR, variant)
    except (HlogError, OSError):
        return {}  # the clause then says why it is not measured


def check_summary(
    clauses: list[Clause],
    summary: dict,
    histogram_for: Callable[[str | None, str], HdrHistogram | None] | None = None,
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
        summary_path = run_dir / SUMMARY_JSON
        if not summary_path.is_file():
            raise SloError(f"{summary_path} is missing: is {run_dir} a finished run directory?")
        try:
            summary = json.loads(summary_path.read_text())
        except json.JSONDecodeError as error:
            raise SloError(f"{summary_path} is not valid JSON ({error.msg} at line {error.lineno})") from None
        if slo is None:
            config_path = run_dir / CONFIG_JSON
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
