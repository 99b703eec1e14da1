"""What the `sweep` and `capacity` commands share on their command line.

Both run Locust against one model for stabilised levels, so they take the same target,
stability rule and load-generator options, and answer bad input the same way: one
`error:` line and exit code 2.

    parser = subcommand(subparsers, "sweep", "stabilised steps ...", __doc__)
    add_target_arguments(parser, "the model to sweep (required)", "runs/<UTC time>-sweep-<model>")
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from loadtests.config import settings as suite_options
from loadtests.errors import SpecError
from loadtests.levels.stability import DEFAULT_MAX_TRIALS, DEFAULT_SETTLE_WINDOWS, DEFAULT_STABILITY_PERCENT
from loadtests.run_format import slo
from loadtests.server.launcher import TritonPorts, locust_command, triton_options
from loadtests.workloads.mix import FILE_SUFFIXES as MIX_FILE_SUFFIXES
from loadtests.workloads.mix import parse_mix

DEFAULT_MEASUREMENT_INTERVAL_MS = 5000


def subcommand(subparsers: argparse._SubParsersAction, name: str, help_text: str, doc: str) -> argparse.ArgumentParser:
    """A subcommand whose unknown options go to Locust and whose errors are one line, exit 2."""
    parser = subparsers.add_parser(
        name,
        help=help_text,
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # unknown options go to Locust: never guess one of ours from a prefix
    )

    def one_line_error(message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = one_line_error  # type: ignore[method-assign]
    return parser


def add_target_arguments(
    parser: argparse.ArgumentParser, model_help: str, run_dir_default: str, user_class_help: str
) -> argparse._ArgumentGroup:
    """--model or --mix, --protocol, --user-class, --batch-size, Triton's three addresses, --run-dir."""
    target = parser.add_argument_group("target")
    target.add_argument("--model", default="", help=model_help)
    target.add_argument(
        "--mix",
        default="",
        metavar="SPEC",
        help="instead of --model: a model mix, MODEL:WEIGHT,... or a .yaml/.json file (docs/guides/mixes.md); "
        "each level is judged on the whole mix",
    )
    target.add_argument(
        "--protocol",
        choices=("http", "grpc", "both"),
        default=None,
        help="default http; both: HTTP and gRPC users side by side, each level's users (or rate) split between them",
    )
    target.add_argument("--user-class", default="", metavar="NAME", help=user_class_help)
    target.add_argument("--batch-size", default="1", metavar="SPEC", help="batch size SPEC (default 1)")
    target.add_argument("--triton-http", default=suite_options.DEFAULT_TRITON_HTTP, metavar="HOST:PORT")
    target.add_argument("--triton-grpc", default=suite_options.DEFAULT_TRITON_GRPC, metavar="HOST:PORT")
    target.add_argument("--triton-metrics", default=suite_options.DEFAULT_TRITON_METRICS, metavar="HOST:PORT")
    target.add_argument("--run-dir", default="", metavar="DIR", help=f"default {run_dir_default}")
    return target


@dataclass(frozen=True)
class LoadTarget:
    """What a sweep or capacity search loads: one model, or a mix of models judged as one load."""

    label: str  # for the default run directory's name
    options: tuple[str, ...]  # Locust's --model NAME or --mix SPEC
    model: str | None  # the one model; None for a mix

    @property
    def user_class_model(self) -> str:
        """The model that picks the default user class (a mix takes the generic Triton users)."""
        return self.model or ""


def load_target(args: argparse.Namespace) -> LoadTarget:
    """--model or --mix (exactly one), checked before Locust starts; raises SpecError.

    A mix file's path is made absolute: Locust runs from the repository, not from here.
    """
    if args.model and args.mix:
        raise SpecError("give one of --model NAME and --mix SPEC, not both")
    if args.model:
        return LoadTarget(args.model, ("--model", args.model), args.model)
    if not args.mix.strip():
        raise SpecError("--model NAME (or --mix SPEC) is required")
    spec = args.mix.strip()
    parse_mix(spec)  # its errors now, as one line, rather than from Locust later
    if spec.lower().endswith(MIX_FILE_SUFFIXES):
        spec = str(Path(spec).resolve())
    return LoadTarget("mix", ("--mix", spec), None)


def add_stability_arguments(parser: argparse.ArgumentParser, title: str) -> argparse._ArgumentGroup:
    """The sweep's stability rule: perf_analyzer's options and defaults."""
    rule = parser.add_argument_group(title)
    rule.add_argument(
        "--measurement-interval",
        type=float,
        default=DEFAULT_MEASUREMENT_INTERVAL_MS,
        metavar="MS",
        help=f"measurement window length (default {DEFAULT_MEASUREMENT_INTERVAL_MS})",
    )
    rule.add_argument(
        "--stability-percentage",
        type=float,
        default=DEFAULT_STABILITY_PERCENT,
        metavar="PCT",
        help=f"allowed spread of throughput and p95 over the last 3 windows (default {DEFAULT_STABILITY_PERCENT:g})",
    )
    rule.add_argument(
        "--max-trials",
        type=int,
        default=DEFAULT_MAX_TRIALS,
        metavar="N",
        help=f"windows per level before it is marked unstable (default {DEFAULT_MAX_TRIALS})",
    )
    rule.add_argument(
        "--settle-windows",
        type=int,
        default=DEFAULT_SETTLE_WINDOWS,
        metavar="N",
        help=f"windows discarded after the one a level starts in (default {DEFAULT_SETTLE_WINDOWS})",
    )
    return rule


# The percentile the sweep judges stability and --latency-limit on.
JUDGED_PERCENTILE = 95
# A sweep with a level that did not stabilise (perf_analyzer fails there too): docs/guides/ci.md.
EXIT_UNSTABLE = 5


def judged_percentile(text: str) -> int:
    """perf_analyzer's --percentile: the sweep judges p95 only (every level's p50-p99 are in sweep.csv)."""
    if text.strip() != str(JUDGED_PERCENTILE):
        raise argparse.ArgumentTypeError(
            f"the sweep judges stability and --latency-limit on p{JUDGED_PERCENTILE}, not p{text}: leave "
            f"--percentile out (or give {JUDGED_PERCENTILE}); every level's p50-p99 are in sweep.csv"
        )
    return JUDGED_PERCENTILE


def add_perf_analyzer_spellings(parser: argparse.ArgumentParser) -> None:
    """perf_analyzer's spellings of the sweep's options, as aliases (docs/guides/perf_analyzer.md).

    Not mapped: perf_analyzer's -u, -i, -s and -t, which are Locust's -u (users), -i
    (iterations), -s (stop timeout) and -t (run time) here.
    """
    alias = parser.add_argument_group("perf_analyzer's spellings (aliases of the options above)")
    same = {"default": argparse.SUPPRESS}
    alias.add_argument("-m", dest="model", metavar="MODEL", help="--model", **same)
    alias.add_argument("-b", dest="batch_size", metavar="N", help="--batch-size", **same)
    alias.add_argument(
        "--concurrency-range", dest="concurrency", metavar="START:END[:STEP]", help="--concurrency", **same
    )
    alias.add_argument(
        "--request-rate-range", dest="request_rate", metavar="START:END[:STEP]", help="--request-rate", **same
    )
    alias.add_argument(
        "-p", dest="measurement_interval", type=float, metavar="MS", help="--measurement-interval", **same
    )
    alias.add_argument(
        "--latency-threshold", dest="latency_limit", type=float, metavar="MS", help="--latency-limit", **same
    )
    alias.add_argument(
        "--percentile", type=judged_percentile, metavar=str(JUDGED_PERCENTILE), help="accepted as 95 only", **same
    )


def unstable_levels(content: dict) -> list:
    """The levels of a sweep's results (levels/sweep_files.py) that did not stabilise."""
    return [level["level"] for level in content.get("levels", []) if not level.get("stable", True)]


def add_load_generator_arguments(
    parser: argparse.ArgumentParser, traffic_default: str | None, traffic_help: str
) -> argparse._ArgumentGroup:
    """--workers, --traffic (open-loop gaps) and --max-in-flight."""
    run = parser.add_argument_group("load generator")
    run.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="0: one process (default); N: a Locust master and N worker processes (--processes N)",
    )
    run.add_argument("--traffic", choices=suite_options.OPEN_LOOP_MODES, default=traffic_default, help=traffic_help)
    run.add_argument("--max-in-flight", type=int, default=None, metavar="N", help="open loop: per worker")
    return run


def open_loop_options(traffic: str, max_in_flight: int | None) -> list[str]:
    """--traffic and, when given, --max-in-flight for Locust."""
    return ["--traffic", traffic, *(["--max-in-flight", str(max_in_flight)] if max_in_flight is not None else [])]


def distributed_options(workers: int, extra: list[str]) -> list[str]:
    """--processes N, on a free port unless the user chose one: Locust's default 5557 may be
    another master's on a shared machine, and forked workers would join that one instead."""
    if any(option.startswith(("--master-port", "--master-bind-port")) for option in extra):
        return ["--processes", str(workers)]
    port = str(TritonPorts.free().http)
    return ["--processes", str(workers), "--master-bind-port", port, "--master-port", port]


def shape_command(
    args: argparse.Namespace,
    user_classes: list[str],
    run_dir: Path,
    shape: str,
    shape_args: str,
    traffic: list[str],
    extra: list[str],
) -> list[str]:
    """The Locust command line of a sweep or a capacity search: the target options, windows of
    --measurement-interval, the load shape with its arguments, and the user's own options last."""
    return locust_command(
        *user_classes,
        *load_target(args).options,
        "--batch-size",
        args.batch_size,
        *triton_options(args.triton_http, args.triton_grpc, args.triton_metrics),
        "--run-dir",
        str(run_dir),
        "--window",
        f"{args.measurement_interval / 1000:g}",
        "--load-shape",
        shape,
        "--shape-args",
        shape_args,
        *traffic,
        *(distributed_options(args.workers, extra) if args.workers else []),
        *extra,
    )


def search_slo_clauses(model: str | None, text: str) -> list[slo.Clause]:
    """The --slo clauses of a capacity search on `model` (None: a mix) (capacity and tune); raises SpecError.

    A search raises the rate until a clause fails, so every clause must be an upper limit,
    and on the one model it drives (or on all its endpoints): a clause on another model
    could never be judged. A mix's levels are judged on the whole mix, so its clauses name
    no model.
    """
    if not text.strip():
        raise SpecError('--slo is required, e.g. --slo "p99<50ms,fail_ratio<0.001"')
    try:
        clauses = slo.parse_slo(text)
    except slo.SloError as error:
        raise SpecError(f"--slo: {error}") from None
    for clause in clauses:
        if model is None and clause.target is not None:
            raise SpecError(f"--slo clause {clause.text!r}: a search over a mix judges the whole mix; name no model")
        if clause.target not in (None, model) and not (clause.target or "").startswith(f"{model} ["):
            raise SpecError(f"--slo clause {clause.text!r}: the search drives {model} only")
        if clause.op in (">", ">="):
            raise SpecError(f"--slo clause {clause.text!r}: a capacity search needs upper limits (< or <=)")
    return clauses
