"""`python -m loadtests capacity`: the highest open-loop request rate that meets an SLO.

    python -m loadtests capacity --model bert_qa_dynbatch --slo "p99<50ms,fail_ratio<0.001"
    python -m loadtests capacity --model my_model --protocol grpc --slo "p99<20ms" --start-rate 50
    python -m loadtests capacity --model resnet50 --slo "p95<100ms" --workers 2 --traffic poisson
    python -m loadtests capacity --mix "model_a:0.7,model_b:0.3" --slo "p99<100ms"   # one load, docs/guides/mixes.md
    python -m loadtests capacity --model my_llm --protocol grpc --slo "ttfr_p99<200ms"  # a decoupled model

Open-loop levels (latency timed from each request's intended send time), each held until
stable by the sweep's rule (see `python -m loadtests sweep --help`), are searched for the
highest rate that meets every --slo clause: the rate doubles from --start-rate while levels
pass, then the range between the last passing and the first failing rate is halved until the
two are within --precision percent. A failure is measured a second time before it counts
(one hiccup of a busy machine must not pin the search low). A level that is clearly failing (in a window of at least
20 requests: a latency (or ttfr_/gap_) clause's metric over 3x its limit, over 5 % of requests failed, or a
late ratio over 3x a late_ratio clause's limit) ends at once.
Prints the capacity with its bracket and every level; writes capacity.json and capacity.csv
(and sweep.json/sweep.csv, by rate) to the run directory beside the usual files. Any option
not listed here (e.g. --shape INPUT0:16, --seq-len 128, --request-timeout 60) goes to Locust
unchanged. See docs/guides/capacity.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from loadtests.clients.control import TritonControl
from loadtests.clients.control_grpc import TritonGrpcControl, open_control
from loadtests.commands.args import (
    add_load_generator_arguments,
    add_stability_arguments,
    add_target_arguments,
    distributed_options,
    load_target,
    open_loop_options,
    search_slo_clauses,
    shape_command,
    subcommand,
)
from loadtests.commands.sweep import USER_CLASSES, choose_user_classes
from loadtests.config.addresses import TritonTarget
from loadtests.errors import ServerError, SpecError
from loadtests.levels.capacity_files import CAPACITY_JSON, skipped_json, write_capacity_files
from loadtests.levels.capacity_levels import DEFAULT_START_RATE, parse_capacity_args
from loadtests.levels.capacity_search import DEFAULT_GROWTH, DEFAULT_PRECISION, MIN_PROBE_USERS, probe_users
from loadtests.levels.stability import STABILITY_WINDOWS
from loadtests.options.reading import connection_security_in
from loadtests.run_format import slo
from loadtests.server.launcher import REPO_ROOT, locust_command, triton_options


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subcommand(
        subparsers, "capacity", "the highest open-loop request rate that meets an SLO (growth, then bisection)", __doc__
    )
    target = add_target_arguments(
        parser,
        "the model to load (required)",
        "runs/<UTC time>-capacity-<model>",
        "as for sweep (default: from the model)",
    )
    target.add_argument("--slo", default="", help='clauses every passing level meets (required), e.g. "p99<50ms"')
    search = parser.add_argument_group("search")
    search.add_argument(
        "--start-rate",
        type=float,
        default=None,
        metavar="RPS",
        help=f"first level, requests/s (default: from the probe, or {DEFAULT_START_RATE:g} without it)",
    )
    search.add_argument(
        "--probe-users",
        type=int,
        default=None,
        metavar="N",
        help="closed-loop users of the saturation probe run first; 0: no probe (default: from the model's "
        f"configuration, 2 x max batch x instances with a dynamic batcher, at least {MIN_PROBE_USERS})",
    )
    search.add_argument(
        "--probe-time",
        type=float,
        default=DEFAULT_PROBE_S,
        metavar="S",
        help=f"seconds of the saturation probe (default {DEFAULT_PROBE_S:g})",
    )
    search.add_argument(
        "--stop-below",
        type=float,
        default=None,
        metavar="RPS",
        help="skip the search when the probe shows the capacity is below this rate (tune: cannot beat the best)",
    )
    search.add_argument(
        "--growth",
        type=float,
        default=DEFAULT_GROWTH,
        help=f"rate factor while levels pass (default {DEFAULT_GROWTH:g})",
    )
    search.add_argument(
        "--precision",
        type=float,
        default=DEFAULT_PRECISION * 100,
        metavar="PCT",
        help=f"stop when first failing / last passing <= 1 + PCT/100 (default {DEFAULT_PRECISION * 100:g})",
    )
    add_stability_arguments(parser, "stability (the sweep's rule)")
    add_load_generator_arguments(parser, "constant", "gaps (default constant)")
    parser.set_defaults(run=run_capacity, pass_through=True)


# The saturation probe: closed-loop users for a few seconds (users: probe_users, from the model's
# configuration, perf_analyzer's rule of thumb of 2 x max batch x instances for peak throughput).
DEFAULT_PROBE_S = 4.0
# The search starts at this share of the probe's throughput (it meets an SLO somewhat below the
# saturated throughput); the probe's throughput itself is the next level.
PROBE_START_SHARE = 0.8
PROBE_DIR = "probe"


def default_run_dir(model: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return REPO_ROOT / "runs" / f"{stamp}-capacity-{re.sub(r'[^A-Za-z0-9_-]+', '', model)[:40]}"


def capacity_command(args: argparse.Namespace, extra: list[str]) -> tuple[list[str], Path]:
    """The Locust command line a capacity search runs, and its run directory; raises SpecError.
    With a probe (`probe_rps(...)` first), `with_probe` puts its throughput into the command."""
    target = load_target(args)
    clauses = search_slo_clauses(target.model, args.slo)
    if "--slo" in extra or any(item.startswith("--slo=") for item in extra):
        raise SpecError("--slo is given twice")
    start_rate = DEFAULT_START_RATE if args.start_rate is None else args.start_rate
    for option, value, minimum in (("--start-rate", start_rate, 0.0), ("--growth", args.growth, 1.0)):
        if not (math.isfinite(value) and value > minimum):
            raise SpecError(f"{option} must be above {minimum:g}, got {value:g}")
    if not (math.isfinite(args.precision) and args.precision > 0):
        raise SpecError(f"--precision must be a positive percentage, got {args.precision:g}")
    if not args.measurement_interval > 0:
        raise SpecError(f"--measurement-interval must be positive, got {args.measurement_interval:g}")
    if args.max_trials < STABILITY_WINDOWS:
        raise SpecError(f"--max-trials must be at least {STABILITY_WINDOWS} (stability needs 3 windows)")
    if args.settle_windows < 0 or args.workers < 0:
        raise SpecError("--settle-windows and --workers must be >= 0")
    if args.max_in_flight is not None and args.max_in_flight < 1:
        raise SpecError("--max-in-flight must be at least 1")
    if (args.probe_users or 0) < 0 or not (math.isfinite(args.probe_time) and args.probe_time > 0):
        raise SpecError("--probe-users must be >= 0 and --probe-time positive")
    if args.stop_below is not None and not (math.isfinite(args.stop_below) and args.stop_below > 0):
        raise SpecError(f"--stop-below must be a positive rate, got {args.stop_below:g}")
    user_classes = choose_user_classes(target.user_class_model, args.protocol, args.user_class)
    shape_args = ",".join(
        [
            "slo=" + ";".join(clause.text for clause in clauses),
            f"start={start_rate!r}",
            f"growth={args.growth!r}",
            f"precision={args.precision!r}",
            f"stability={args.stability_percentage!r}",
            f"max_trials={args.max_trials}",
            f"settle={args.settle_windows}",
            # Open-loop senders share the rate by user count (--protocol both: one per protocol per process).
            f"users={len(user_classes) * max(1, args.workers)}",
        ]
    )
    parse_capacity_args(shape_args)  # the shape's own check (start, growth, precision), before any load
    run_dir = Path(args.run_dir).resolve() if args.run_dir else default_run_dir(target.label)
    traffic = open_loop_options(args.traffic, args.max_in_flight)
    command = shape_command(args, user_classes, run_dir, "capacity", shape_args, traffic, extra)
    return command, run_dir


def wants_probe(args: argparse.Namespace) -> bool:
    """A probe runs unless the user chose the start (--start-rate) or turned it off."""
    return args.start_rate is None and args.probe_users != 0


def target_control(args: argparse.Namespace) -> TritonControl | TritonGrpcControl:
    """Triton's control plane where the search's users send: over gRPC when they all speak gRPC
    (a gRPC-only target gives --triton-grpc alone), else over HTTP; the first replica of either."""
    classes = choose_user_classes(load_target(args).user_class_model, args.protocol, args.user_class)
    security = connection_security_in(getattr(args, "extra", []))  # --ssl-* and --header, as the runs use them
    if all(USER_CLASSES[name] == "grpc" for name in classes):
        target = TritonTarget.parse("--triton-grpc", args.triton_grpc, "grpc")
    else:
        target = TritonTarget.parse("--triton-http", args.triton_http, "http")
    return open_control(target, timeout_s=5.0, security=security)


def sized_probe_users(args: argparse.Namespace) -> int:
    """--probe-users, or enough users to saturate the model as Triton configured it (for a mix,
    or a configuration that cannot be read here, MIN_PROBE_USERS: the probe's pre-flight then
    says what is wrong with the server)."""
    if args.probe_users is not None:
        return args.probe_users
    model = load_target(args).model
    if model is None:
        return MIN_PROBE_USERS
    try:
        return probe_users(target_control(args).model_config(model))
    except ServerError as error:
        print(f"capacity: {model}'s configuration not read ({error}): the probe uses {MIN_PROBE_USERS} users")
        return MIN_PROBE_USERS


def check_stream_clauses(args: argparse.Namespace) -> None:
    """A ttfr_/gap_ clause on a model that does not stream could only be "not measured" at every
    level: refused before any load, as the load test's pre-flight refuses it (raises SpecError).
    The model's configuration says whether it is decoupled; one that cannot be read here is
    left to the probe's pre-flight."""
    model = load_target(args).model
    clauses = [c for c in search_slo_clauses(model, args.slo) if c.metric in slo.STREAM_METRICS]
    if not clauses:
        return
    if model is None:
        raise SpecError(f"--slo clause {clauses[0].text!r}: a mix's models do not stream (none is decoupled)")
    try:
        config = target_control(args).model_config(model)
    except ServerError:
        return
    decoupled = bool((config.get("model_transaction_policy") or {}).get("decoupled"))
    try:
        slo.check_streamed(clauses, {model: model}, [model] if decoupled else [])
    except slo.SloError as error:
        raise SpecError(f"--slo {error}") from None


def probe_command(args: argparse.Namespace, extra: list[str], run_dir: Path, users: int) -> list[str]:
    """The saturation probe's Locust command: `users` closed-loop users for --probe-time s."""
    target = load_target(args)
    user_classes = choose_user_classes(target.user_class_model, args.protocol, args.user_class)
    users = str(users)
    return locust_command(
        *user_classes,
        *target.options,
        "--batch-size",
        args.batch_size,
        *triton_options(args.triton_http, args.triton_grpc, args.triton_metrics),
        "--run-dir",
        str(run_dir / PROBE_DIR),
        *("-u", users, "-r", users, "-t", f"{args.probe_time:g}s"),
        *(distributed_options(args.workers, extra) if args.workers else []),
        *extra,
    )


def probe_rps(args: argparse.Namespace, extra: list[str], run_dir: Path) -> tuple[int, float | None]:
    """Run the probe: Locust's exit code and the requests/s it completed (None if it could not
    measure: the search then starts from the default rate)."""
    users = sized_probe_users(args)
    print(f"capacity: saturation probe, {users} closed-loop users for {args.probe_time:g} s", flush=True)
    command = probe_command(args, extra, run_dir, users)
    probe = subprocess.run(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    code = probe.returncode
    if code == 2:  # the pre-flight refused the options: its one error line, not Locust's log
        print("\n".join(line for line in probe.stderr.splitlines() if line.startswith("error:")), file=sys.stderr)
    try:
        summary = json.loads((run_dir / PROBE_DIR / "summary.json").read_text())
    except (OSError, ValueError):
        return code, None
    successes = sum(e["requests"] - e["failures"] for e in summary["endpoints"])
    duration_s = max((e["duration_s"] for e in summary["endpoints"]), default=0.0)
    return code, (successes / duration_s if successes and duration_s > 0 else None)


def with_probe(command: list[str], probed_rps: float) -> list[str]:
    """The search's command starting near the probe's throughput (start, and the probe as the hint)."""
    index = command.index("--shape-args") + 1
    keys = [part for part in command[index].split(",") if not part.startswith("start=")]
    start = round(PROBE_START_SHARE * probed_rps, 3)
    return [
        *command[:index],
        ",".join([*keys, f"start={start!r}", f"probe={round(probed_rps, 3)!r}"]),
        *command[index + 1 :],
    ]


def stream_columns(content: dict) -> list[str]:
    """The streamed metrics the SLO's clauses judge (ttfr_p99, gap_p50, ...): a column each."""
    metrics = (clause["metric"] for level in content["levels"] for clause in level["clauses"])
    return list(dict.fromkeys(metric for metric in metrics if metric in slo.STREAM_METRICS))


def stream_cells(level: dict, metrics: list[str]) -> str:
    """A level's value of each streamed metric, ms ("-": nothing streamed)."""
    cells = []
    for metric in metrics:
        key, percentile = slo.STREAM_METRICS[metric]
        value = (level.get("stream") or {}).get(key, {}).get(percentile)
        cells.append(f" {'-' if value is None else f'{value / 1000:.2f}':>{max(9, len(metric) + 3)}}")
    return "".join(cells)


def console_table(content: dict) -> str:
    """Every level in the order tried (with the streamed metrics the SLO judges), then the
    capacity and its bracket."""
    streamed = stream_columns(content)
    heads = "".join(f" {metric + ' ms':>{max(9, len(metric) + 3)}}" for metric in streamed)
    lines = [f"{'#':>3} {'rate/s':>10} {'verdict':<8} {'achieved/s':>10} {'p99 ms':>9}{heads} {'failures':>8}  note"]
    for level in content["levels"]:
        note = f"stopped early: {level['stopped_early']}" if level["stopped_early"] else ""
        if not note and not level["passed"]:
            note = "; ".join(f"{c['clause']} measured {c['measured']}" for c in level["clauses"] if not c["passed"])
            note = note or f"{level.get('dropped', 0)} dropped"
        if level["to_confirm"]:
            note += " (measured again to confirm)"
        lines.append(
            f"{level['order']:>3} {level['rate']:>10g} {'pass' if level['passed'] else 'FAIL':<8} "
            f"{level['throughput_rps']:>10.1f} {level['latency_us']['p99'] / 1000:>9.2f}"
            f"{stream_cells(level, streamed)} {level['failures']:>8}  {note}"
        )
    passing, failing = content["bracket"]["last_passing_rps"], content["bracket"]["first_failing_rps"]
    if passing is None:
        lines.append(f"capacity: none found (even {failing:g} requests/s failed the SLO {content['slo']})")
    else:
        above = f"first failing {failing:g}" if failing is not None else "no level failed"
        lines.append(
            f"capacity: {passing:g} requests/s under {content['slo']} "
            f"(last passing {passing:g}, {above}; {content['levels_tried']} levels)"
        )
    return "\n".join(lines)


def run_capacity(args: argparse.Namespace) -> int:
    extra = list(getattr(args, "extra", []))
    command, run_dir = capacity_command(args, extra)
    check_stream_clauses(args)
    if wants_probe(args):
        try:
            code, probed = probe_rps(args, extra, run_dir)
        except KeyboardInterrupt:
            print("capacity: interrupted during the probe; no search ran", file=sys.stderr)
            return 130
        if code == 2:
            return code  # Locust's pre-flight refused the options (one error line, nothing sent)
        if probed is not None:
            print(f"capacity: the probe completed {probed:.1f} requests/s; the search starts at {PROBE_START_SHARE:g}x")
            command = with_probe(command, probed)
            if args.stop_below is not None and probed < args.stop_below:
                write_capacity_files(run_dir, skipped_json(probed, args.stop_below, args.slo))
                print(f"capacity: below {args.stop_below:g} requests/s even saturated ({probed:.1f}): search skipped")
                return 0
    print(f"capacity: {' '.join(command[1:3])} ... --shape-args {command[command.index('--shape-args') + 1]}")
    process = subprocess.Popen(command, cwd=REPO_ROOT)
    try:
        code = process.wait()
    except KeyboardInterrupt:
        code = process.wait()  # Ctrl-C reached Locust too: it stops the users and writes the run directory
    try:
        content = json.loads((run_dir / CAPACITY_JSON).read_text())
    except (OSError, ValueError):
        if code == 0:
            print(f"error: the search finished without results in {run_dir}", file=sys.stderr)
            return 1
        return code  # Locust said why (a pre-flight error exits 2 before any load)
    print()
    print(console_table(content))
    if not content["done"]:
        print("(the search was interrupted: the bracket is from the levels that finished)")
    print(f"capacity.json, capacity.csv: {run_dir}", flush=True)
    return code
