"""SLO gates in a load test: `--slo` checked at start, evaluated at the end, `--junit` written.

The clause grammar and the evaluation are loadtests/run_format/slo/'s (shared with
`python -m analysis check`); this module ties them to a run:

- `validate(settings, endpoints)` at init and test_start: a malformed --slo, a clause naming
  a model or endpoint the run does not have, or an open-loop metric in a closed-loop run is a
  SpecError (exit 2) before any load;
- `add_verdicts(summary, totals, settings)` before summary.json is written (once): evaluates
  every clause on the summary's exact numbers (its `overall` and `model_totals` are the
  recording's, recording/run_dir.py) and the run's merged histograms (`RunTotals`) into `slo`;
- `report(environment, settings, results)` after: prints the table, writes the JUnit file,
  and sets the process exit code to 3 if a clause failed (4 if the JUnit file could not be
  written).

    locust -f locustfile.py --headless -u 4 -t 1m TritonHttpUser --model identity \\
        --slo "p99<50ms,fail_ratio<0.01,infer_per_s>100" --junit slo.xml
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from loadtests.config.settings import CLOSED_LOOP, Settings
from loadtests.errors import SpecError
from loadtests.run_format import slo
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

if TYPE_CHECKING:
    from locust.env import Environment

    from loadtests.recording.histograms import RunTotals

logger = logging.getLogger(__name__)


def clauses_from(settings: Settings) -> list[Clause]:
    """The parsed --slo option (empty: no gates). Raises SpecError."""
    try:
        return parse_slo(settings.slo)
    except SloError as error:
        raise SpecError(f"--slo '{settings.slo}': {error}") from None


def validate(settings: Settings, endpoints: dict[str, str], named_as_they_run: bool = False) -> list[Clause]:
    """Parse --slo and check it fits this run (`endpoints`: endpoint name -> model of every
    selected user class). Raises SpecError (exit 2, before any load).

    `named_as_they_run`: classes whose own tasks send name their endpoints and models only as
    they run, so a target cannot be checked now (one no request named fails at the end)."""
    clauses = clauses_from(settings)
    if settings.traffic == CLOSED_LOOP:
        for clause in open_loop_clauses(clauses):
            raise SpecError(
                f"--slo '{settings.slo}': clause '{clause.text}': {clause.metric} is measured only with "
                "open-loop traffic (--traffic constant|poisson|gamma)"
            )
    try:
        if not named_as_they_run:
            check_targets(clauses, endpoints)
    except SloError as error:
        raise SpecError(f"--slo '{settings.slo}': {error}") from None
    return clauses


def check_streamed(settings: Settings, endpoints: dict[str, str], streamed: set[str]) -> None:
    """Once the endpoints are prepared (their models read): a ttfr_/gap_ clause whose endpoints
    (name -> model) stream none (`streamed`: the decoupled ones). Raises SpecError (exit 2, before any load)."""
    try:
        slo.check_streamed(clauses_from(settings), endpoints, streamed)
    except SloError as error:
        raise SpecError(f"--slo '{settings.slo}': {error}") from None


def add_verdicts(summary: dict, totals: RunTotals, settings: Settings) -> list[Result]:
    """Before summary.json is written: each --slo clause's verdict in `slo`, evaluated on the
    summary's own numbers and the run's merged histograms (`totals`, merged once at the run's end).
    Returns the verdicts (none without --slo)."""
    try:
        clauses = clauses_from(settings)  # checked at test start
        results = evaluate(clauses, resolver_for_summary(summary), totals.histogram_for)
    except (SpecError, SloError) as error:
        logger.error("error: %s", error)
        print(f"error: {error}", flush=True)
        return []
    if clauses:
        summary["slo"] = [result.to_json() for result in results]
    return results


def report(environment: Environment, settings: Settings, results: list[Result]) -> None:
    """After summary.json: the verdicts' table, the --junit file, exit code 3 if a clause failed."""
    if not results:
        return
    print(format_table(results), flush=True)
    if settings.junit:
        try:
            print(f"JUnit: {write_junit(settings.junit, results)}", flush=True)
        except OSError as error:  # checked in pre-flight, yet the write failed (disk full, removed directory)
            print(f"error: --junit {settings.junit}: {error.strerror or error}", file=sys.stderr, flush=True)
            note_output_failed(environment)
    # 3 outranks 1 (request failures with --exit-code-on-error) and 4 (an output not written),
    # which Locust picks only when process_exit_code is unset; a startup error's 2 (set earlier) stays.
    if failed(results) and environment.process_exit_code in (None, 0, 1, EXIT_OUTPUT_FAILED):
        environment.process_exit_code = EXIT_SLO_FAILED


def note_output_failed(environment: Environment) -> None:
    """An output of a run that did happen could not be written: exit code 4 (docs/guides/ci.md), so a CI job
    gating on the exit code does not pass without its JUnit file or summary. 2 and 3 stay."""
    if environment.process_exit_code in (None, 0, 1):
        environment.process_exit_code = EXIT_OUTPUT_FAILED
