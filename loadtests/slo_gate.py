"""SLO gates in a load test: `--slo` checked at start, evaluated at the end, `--junit` written.

The clause grammar and the evaluation are loadtests/run_format/slo/'s (shared with
`python -m analysis check`); this module ties them to a run:

- `validate(runtime)` at init and test_start: a malformed --slo, a clause naming a model or
  endpoint the run does not have, or an open-loop metric in a closed-loop run is a
  SpecError (exit 2) before any load;
- `finish(environment, run_dir, totals)` after summary.json is written: adds the merged
  `overall` (and `model_totals`) entries, evaluates every clause on those exact numbers,
  prints the table, writes `slo` into summary.json and the JUnit file, and sets the
  process exit code to 3 if a clause failed (4 if the JUnit file could not be written).

    locust -f locustfile.py --headless -u 4 -t 1m TritonHttpUser --model identity \\
        --slo "p99<50ms,fail_ratio<0.01,infer_per_s>100" --junit slo.xml
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from loadtests.endpoints import model_name_for
from loadtests.errors import SpecError, StartupError
from loadtests.recording.merged import by_model, merge_stats
from loadtests.run_format.confidence import DEFAULT_CONFIDENCE
from loadtests.run_format.output_paths import EXIT_OUTPUT_FAILED
from loadtests.run_format.slo import (
    EXIT_SLO_FAILED,
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
from loadtests.run_format.summary import OVERALL, combine
from loadtests.traffic.constants import CLOSED_LOOP

if TYPE_CHECKING:
    from hdrh.histogram import HdrHistogram
    from locust.env import Environment

    from loadtests.recording.histograms import EndpointStats
    from loadtests.runtime import Runtime

logger = logging.getLogger(__name__)


def clauses_from(options) -> list[Clause]:
    """The parsed --slo option (empty: no gates). Raises SpecError."""
    text = str(getattr(options, "slo", "") or "").strip()
    try:
        return parse_slo(text)
    except SloError as error:
        raise SpecError(f"--slo '{text}': {error}") from None


def run_endpoints(runtime: Runtime) -> dict[str, str]:
    """Endpoint name -> model of every selected user class, as prepare_endpoint names them."""
    kinds = runtime.kinds_in_run()
    names = {endpoint.name: endpoint.model.name for endpoint in runtime.endpoints.values()}
    for cls in runtime.environment.user_classes:
        if getattr(cls, "workload", None):
            try:
                model = model_name_for(cls.workload, runtime.settings, kinds)
            except StartupError:
                continue  # pre-flight reports it
            names.setdefault(f"{model} [{cls.protocol}]", model)
    return names


def validate(runtime: Runtime) -> list[Clause]:
    """Parse --slo and check it fits this run. Raises SpecError (exit 2, before any load)."""
    options = runtime.environment.parsed_options
    clauses = clauses_from(options)
    text = str(getattr(options, "slo", "") or "").strip()
    traffic = str(getattr(options, "traffic", CLOSED_LOOP) or CLOSED_LOOP)
    if traffic == CLOSED_LOOP:
        for clause in open_loop_clauses(clauses):
            raise SpecError(
                f"--slo '{text}': clause '{clause.text}': {clause.metric} is measured only with "
                "open-loop traffic (--traffic constant|poisson|gamma)"
            )
    try:
        check_targets(clauses, run_endpoints(runtime))
    except SloError as error:
        raise SpecError(f"--slo '{text}': {error}") from None
    return clauses


def add_merged_totals(summary: dict, totals: dict[str, EndpointStats]) -> None:
    """summary.json's `overall` (every endpoint) and `model_totals` (models with several endpoints).

    Counts and throughput are the endpoints' sums; percentiles come from merged histograms.
    """
    entries = summary.get("endpoints", [])
    overall = merge_stats(totals.values(), OVERALL)
    summary["overall"] = with_interval(combine(entries, OVERALL, overall.latency_summary_us()), overall)
    groups = by_model(totals)
    if groups:
        summary["model_totals"] = {
            model: with_interval(
                combine([e for e in entries if e.get("model") == model], model, stats.latency_summary_us()), stats
            )
            for model, stats in groups.items()
        }


def with_interval(entry: dict, stats: EndpointStats) -> dict:
    """A merged entry with the same `confidence` and `latency_ci_us` an endpoint entry has."""
    entry["confidence"] = DEFAULT_CONFIDENCE
    entry["latency_ci_us"] = stats.latency_ci_us(DEFAULT_CONFIDENCE)
    return entry


def histograms_of(totals: dict[str, EndpointStats]) -> Callable[[str | None], HdrHistogram | None]:
    """histogram_for(target) for loadtests.run_format.slo.evaluate: an endpoint's, a model's or all merged."""

    def histogram_for(target: str | None) -> HdrHistogram | None:
        if target is None:
            return merge_stats(totals.values(), OVERALL).histogram
        if target in totals:
            return totals[target].histogram
        group = [stats for stats in totals.values() if stats.model == target]
        return merge_stats(group, target).histogram if group else None

    return histogram_for


def finish(environment: Environment, run_dir: Path, totals: dict[str, EndpointStats]) -> list[Result]:
    """After write_summary: merged totals and SLO verdicts into summary.json, table, JUnit, exit code."""
    path = Path(run_dir) / "summary.json"
    summary = json.loads(path.read_text())
    add_merged_totals(summary, totals)
    options = environment.parsed_options
    results: list[Result] = []
    try:
        clauses = clauses_from(options)  # checked at test start; re-read, the web UI may have changed it
        results = evaluate(clauses, resolver_for_summary(summary), histograms_of(totals))
    except (SpecError, SloError) as error:
        logger.error("error: %s", error)
        print(f"error: {error}", flush=True)
        clauses = []
    if clauses:
        summary["slo"] = [result.to_json() for result in results]
    path.write_text(json.dumps(summary, indent=2) + "\n")
    if not clauses:
        return results
    print(format_table(results), flush=True)
    junit = str(getattr(options, "junit", "") or "").strip()
    if junit:
        try:
            print(f"JUnit: {write_junit(junit, results)}", flush=True)
        except OSError as error:  # checked in pre-flight, yet the write failed (disk full, removed directory)
            print(f"error: --junit {junit}: {error.strerror or error}", file=sys.stderr, flush=True)
            note_output_failed(environment)
    # 3 outranks 1 (request failures with --exit-code-on-error) and 4 (an output not written),
    # which Locust picks only when process_exit_code is unset; a startup error's 2 (set earlier) stays.
    if failed(results) and environment.process_exit_code in (None, 0, 1, EXIT_OUTPUT_FAILED):
        environment.process_exit_code = EXIT_SLO_FAILED
    return results


def note_output_failed(environment: Environment) -> None:
    """An output of a run that did happen could not be written: exit code 4 (docs/ci.md), so a CI job
    gating on the exit code does not pass without its JUnit file or summary. 2 and 3 stay."""
    if environment.process_exit_code in (None, 0, 1):
        environment.process_exit_code = EXIT_OUTPUT_FAILED
