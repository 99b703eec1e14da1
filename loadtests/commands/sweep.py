"""`python -m loadtests sweep`: stabilised steps over a concurrency or request-rate range.

    python -m loadtests sweep --concurrency 1:8:1 --model bert_qa_dynbatch
    python -m loadtests sweep --concurrency 1:16:2 --model my_model --protocol grpc --latency-limit 50
    python -m loadtests sweep --request-rate 100:500:100 --model my_model --traffic poisson
    python -m loadtests sweep --concurrency 2:8:2 --mix docs/examples/mix.yaml      # one load, docs/guides/mixes.md

Each level runs until stable the way perf_analyzer defines it (measurement windows of
--measurement-interval ms; stable when, over the last 3 windows, throughput and p95 latency
each vary by at most --stability-percentage; at most --max-trials windows, after which the
level is marked unstable and the sweep goes on); the sweep stops early once a level's p95
reaches --latency-limit. Prints perf_analyzer's "Inferences/Second vs. Client p95 Batch
Latency" table and writes sweep.csv (perf_analyzer's -f format) and sweep.json to the run
directory, beside the usual files. Any option not listed here (e.g. --seq-len 128,
--validate-responses, --request-timeout 60) goes to Locust unchanged. See docs/guides/sweeps.md.

The user class: --user-class NAME, or from --protocol and --model: the demo BERT-QA models
(bert_qa, bert_qa_dynbatch) get BertQA{Http,Grpc}User (real question/context payloads),
resnet50 gets ResNet{Http,Grpc}User (real images), any other model the generic
Triton{Http,Grpc}User (inputs from its metadata).
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from loadtests.commands.args import (
    EXIT_UNSTABLE,
    add_load_generator_arguments,
    add_perf_analyzer_spellings,
    add_stability_arguments,
    add_target_arguments,
    load_target,
    open_loop_options,
    shape_command,
    subcommand,
    unstable_levels,
)
from loadtests.errors import SpecError
from loadtests.levels import sweep_files
from loadtests.levels.stability import STABILITY_WINDOWS
from loadtests.server.launcher import REPO_ROOT
from loadtests.workloads.kinds import kind_for_model, sweep_user_classes

# --user-class NAME -> its protocol: the workload kinds' classes a sweep may run (workloads/kinds.py).
USER_CLASSES = sweep_user_classes()
MAX_LEVELS = 1000


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subcommand(
        subparsers,
        "sweep",
        "stabilised steps over a concurrency or request-rate range (perf_analyzer's sweep)",
        __doc__,
    )
    load = parser.add_argument_group("load (exactly one)")
    load.add_argument("--concurrency", metavar="START:END:STEP", help="concurrent users per level, e.g. 1:8:1")
    load.add_argument(
        "--request-rate", metavar="START:END:STEP", help="open-loop requests/s per level (all workers): 100:500:100"
    )
    add_target_arguments(
        parser, "the model to sweep (required)", "runs/<UTC time>-sweep-<model>", f"one of {', '.join(USER_CLASSES)}"
    )
    rule = add_stability_arguments(parser, "stability (perf_analyzer's options and defaults)")
    rule.add_argument(
        "--latency-limit",
        type=float,
        default=0.0,
        metavar="MS",
        help="stop the sweep once a level's p95 reaches this (default 0: no limit)",
    )
    add_load_generator_arguments(
        parser, None, "with --request-rate: fixed (constant, default) or exponential (poisson) gaps"
    )
    add_perf_analyzer_spellings(parser)
    parser.set_defaults(run=run_sweep, pass_through=True)


# -- checking the input ------------------------------------------------------------------------
def parse_range(text: str, option: str, integer: bool) -> list[float]:
    """perf_analyzer's START[:END[:STEP]] range, END inclusive, STEP default 1.

    >>> parse_range("1:8:2", "--concurrency", integer=True)
    [1, 3, 5, 7]
    >>> parse_range("50:100:25", "--request-rate", integer=False)
    [50.0, 75.0, 100.0]

    Raises SpecError (one line, naming the option) for anything else.
    """
    example = "1:8:1" if integer else "100:500:100"
    where = f"{option} {text!r}"
    parts = str(text).strip().split(":")
    if not 1 <= len(parts) <= 3 or any(not part.strip() for part in parts):
        raise SpecError(f"{where} is not START:END:STEP (e.g. {example})")
    try:
        numbers = [int(p) if integer else float(p) for p in parts]
    except ValueError:
        kind = "whole numbers" if integer else "numbers"
        raise SpecError(f"{where}: START, END and STEP must be {kind} (e.g. {example})") from None
    if any(not math.isfinite(n) for n in numbers):
        raise SpecError(f"{where}: START, END and STEP must be finite")
    start = numbers[0]
    end = numbers[1] if len(numbers) > 1 else start
    step = numbers[2] if len(numbers) > 2 else 1
    if start < 1 if integer else start <= 0:
        raise SpecError(f"{where}: START must be {'at least 1' if integer else 'positive'}")
    if end < start:
        raise SpecError(f"{where}: END must not be below START")
    if step <= 0:
        raise SpecError(f"{where}: STEP must be positive")
    count = math.floor((end - start) / step + 1e-9) + 1
    if count > MAX_LEVELS:
        raise SpecError(f"{where}: {count} levels is more than {MAX_LEVELS}")
    if integer:
        return [start + i * step for i in range(count)]
    return [round(start + i * step, 9) for i in range(count)]


def choose_user_classes(model: str, protocol: str | None, user_class: str) -> list[str]:
    """--user-class as given, or the class whose payloads fit the model, over --protocol (default
    http; both: that class over HTTP and over gRPC, side by side).

    >>> choose_user_classes("bert_qa", "grpc", ""), choose_user_classes("sleep", "both", "")
    (['BertQAGrpcUser'], ['TritonHttpUser', 'TritonGrpcUser'])
    """
    if user_class:
        if user_class not in USER_CLASSES:
            raise SpecError(f"--user-class {user_class!r} is not one of {', '.join(USER_CLASSES)}")
        if protocol is not None and protocol != USER_CLASSES[user_class]:
            raise SpecError(f"--protocol {protocol} contradicts --user-class {user_class}: give one of them")
        return [user_class]
    kind = kind_for_model(model)
    protocols = ("http", "grpc") if protocol == "both" else (protocol or "http",)
    return [kind.user_classes[p] for p in protocols]


def default_run_dir(model: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return REPO_ROOT / "runs" / f"{stamp}-sweep-{re.sub(r'[^A-Za-z0-9_-]+', '', model)[:40]}"


def sweep_command(args: argparse.Namespace, extra: list[str]) -> tuple[list[str], Path]:
    """The Locust command line a sweep runs, and its run directory; raises SpecError."""
    if bool(args.concurrency) == bool(args.request_rate):
        raise SpecError("give exactly one of --concurrency START:END:STEP and --request-rate START:END:STEP")
    target = load_target(args)
    rate_mode = bool(args.request_rate)
    if rate_mode:
        levels = parse_range(args.request_rate, "--request-rate", integer=False)
    else:
        levels = parse_range(args.concurrency, "--concurrency", integer=True)
        for option, value in (("--traffic", args.traffic), ("--max-in-flight", args.max_in_flight)):
            if value is not None:
                raise SpecError(f"{option} applies to --request-rate sweeps only")
    if not args.measurement_interval > 0:
        raise SpecError(f"--measurement-interval must be positive, got {args.measurement_interval:g}")
    if not args.stability_percentage >= 0:
        raise SpecError(f"--stability-percentage must be >= 0, got {args.stability_percentage:g}")
    if args.max_trials < STABILITY_WINDOWS:
        raise SpecError(f"--max-trials must be at least {STABILITY_WINDOWS} (stability needs 3 windows)")
    if not args.latency_limit >= 0:
        raise SpecError(f"--latency-limit must be >= 0 (0: no limit), got {args.latency_limit:g}")
    if args.settle_windows < 0 or args.workers < 0:
        raise SpecError("--settle-windows and --workers must be >= 0")
    if args.max_in_flight is not None and args.max_in_flight < 1:
        raise SpecError("--max-in-flight must be at least 1")
    user_classes = choose_user_classes(target.user_class_model, args.protocol, args.user_class)
    if not rate_mode and levels[0] < len(user_classes):
        # Locust shares a level's users out between the classes: level 1 would be HTTP alone.
        raise SpecError(
            "--protocol both needs at least one user per protocol: START of --concurrency must be 2 or more"
        )
    run_dir = Path(args.run_dir).resolve() if args.run_dir else default_run_dir(target.label)

    shape_args = [
        "levels=" + ";".join(f"{level:g}" for level in levels),
        f"stability={args.stability_percentage:g}",
        f"max_trials={args.max_trials}",
        f"latency_limit_ms={args.latency_limit:g}",
        f"settle={args.settle_windows}",
    ]
    traffic: list[str] = []
    if rate_mode:
        # Open-loop senders take their share of the rate by user count: one user per process.
        # (--protocol both: one user per protocol per process, each sending its share.)
        shape_args += ["kind=rate", f"users={len(user_classes) * max(1, args.workers)}"]
        traffic = open_loop_options(args.traffic or "constant", args.max_in_flight)
    command = shape_command(args, user_classes, run_dir, "sweep", ",".join(shape_args), traffic, extra)
    return command, run_dir


# -- running -------------------------------------------------------------------------------------
def run_sweep(args: argparse.Namespace) -> int:
    command, run_dir = sweep_command(args, list(getattr(args, "extra", [])))
    print(f"sweep: {' '.join(command[1:3])} ... --shape-args {command[command.index('--shape-args') + 1]}", flush=True)
    process = subprocess.Popen(command, cwd=REPO_ROOT)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        # Ctrl-C reached Locust too: it stops the users and writes the run directory.
        code = process.wait()
    try:
        content = sweep_files.read(run_dir)
    except (OSError, ValueError):
        if code == 0:
            print(f"error: the sweep finished without results in {run_dir}", file=sys.stderr)
            return 1
        return code  # Locust said why (a pre-flight error exits 2 before any load)
    print()
    print(sweep_files.console_table(content))
    if content["stopped_by"] is None:
        print("(the sweep was interrupted: the table has the levels that finished)")
    elif content["stopped_by"] == "latency_limit":
        print(f"(stopped: the last level's p95 reached --latency-limit {args.latency_limit:g} ms)")
    print(f"sweep.csv, sweep.json: {run_dir}", flush=True)
    unstable = unstable_levels(content)
    if unstable and code == 0:  # perf_analyzer fails on a level it cannot stabilise; so does the sweep
        print(
            f"sweep: level(s) {', '.join(map(str, unstable))} unstable (no 3 windows within --stability-percentage "
            f"in --max-trials windows): exit code {EXIT_UNSTABLE}; try a longer --measurement-interval",
            file=sys.stderr,
        )
        return EXIT_UNSTABLE
    return code
