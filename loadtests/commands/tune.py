"""`python -m loadtests tune`: which configuration of a model holds the most traffic under an SLO.

    python -m loadtests tune --model my_model --vary instances=1,2 --vary dynamic_batching=off,on \\
        --slo "p99<50ms"
    python -m loadtests tune --model my_model --vary max_queue_delay_us=0,500,2000 \\
        --vary preferred_batch_size=4,8 --slo "p99<20ms" --rate 200 --shape INPUT0:16

For a model on a Triton started with --model-control-mode=explicit, each combination of the
--vary axes (instances, kind, dynamic_batching, max_batch_size, max_queue_delay_us,
preferred_batch_size) is loaded through Triton's model repository API (a load with a config
override: the model's own config with those settings) and measured with
`python -m loadtests capacity` (and, with --rate, `python -m loadtests sweep --request-rate
RATE`). The original configuration is loaded back at the end, also after Ctrl-C or a failed
variant. Prints the ranked table; writes tune.json, tune.csv, the winner's config.pbtxt and a
comparison of the variants (python -m analysis compare) to --out. Refused with one `error:`
line and exit code 2, before anything is loaded: a server not in explicit mode, a model it
does not know or has not loaded, a variant the model cannot run (dynamic batching with
max_batch_size 0, ...). Options not listed here go to capacity and sweep unchanged (e.g.
--shape INPUT0:16, --batch-size 4, --measurement-interval 2000, --workers 2). See docs/guides/tuning.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from loadtests.commands.args import search_slo_clauses
from loadtests.errors import SpecError, StartupError
from loadtests.options.reading import connection_security_in
from loadtests.run_format.output_paths import directory_problem
from loadtests.tuning import ranking
from loadtests.tuning.measure import REPO_ROOT, Target, capacity_command, rate_command, run_command
from loadtests.tuning.ranking import compare_variants
from loadtests.tuning.repository_api import PbtxtError, RepositoryApi, RepositoryError, config_pbtxt, restore_original
from loadtests.tuning.variants import AXES, Variant, build_variants, parse_axes

DEFAULT_TRITON_HTTP = "127.0.0.1:8000"
DEFAULT_TRITON_GRPC = "127.0.0.1:8001"
DEFAULT_TRITON_METRICS = "127.0.0.1:8002"
EXIT_INTERRUPTED = 130
EXIT_NOTHING_MEASURED = 1
WINNER_PBTXT = "config.pbtxt"
WINNER_JSON = "config.json"
# Options tune sets itself for every measurement, or that belong to the search only.
OWN_OPTIONS = ("--run-dir", "--model", "--slo", "--request-rate", "--concurrency")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="load configuration variants on a live Triton (explicit mode), rank them by capacity under an SLO",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # unknown options go to capacity and sweep: never guess one of ours
    )

    def one_line_error(message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)

    parser.error = one_line_error  # type: ignore[method-assign]
    parser.add_argument("--model", default="", help="the model to tune (required)")
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="AXIS=V1,V2",
        help=f"an axis and its values (repeatable; every combination is measured); AXIS one of {', '.join(AXES)}",
    )
    parser.add_argument("--slo", default="", help='clauses the capacity search meets (required), e.g. "p99<50ms"')
    parser.add_argument(
        "--rate", type=float, default=None, metavar="RPS", help="also measure p99 at this open-loop rate"
    )
    parser.add_argument("--out", default="", metavar="DIR", help="default runs/<UTC time>-tune-<model>")
    parser.add_argument("--triton-http", default=DEFAULT_TRITON_HTTP, metavar="HOST:PORT")
    parser.add_argument("--triton-grpc", default=DEFAULT_TRITON_GRPC, metavar="HOST:PORT")
    parser.add_argument("--triton-metrics", default=DEFAULT_TRITON_METRICS, metavar="HOST:PORT")
    search = parser.add_argument_group("capacity search (passed to python -m loadtests capacity)")
    search.add_argument("--start-rate", default=None, metavar="RPS")
    search.add_argument("--growth", default=None)
    search.add_argument("--precision", default=None, metavar="PCT")
    parser.set_defaults(run=run_tune, pass_through=True)


def default_out_dir(model: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return REPO_ROOT / "runs" / f"{stamp}-tune-{re.sub(r'[^A-Za-z0-9_-]+', '', model)[:40]}"


def check_options(args: argparse.Namespace, extra: list[str]) -> None:
    """Tune's own options; SpecError (one line, exit 2). The forwarded ones capacity checks itself."""
    if not args.model:
        raise SpecError("--model NAME is required")
    search_slo_clauses(args.model, args.slo)
    if args.rate is not None and not (math.isfinite(args.rate) and args.rate > 0):
        raise SpecError(f"--rate must be a positive request rate, got {args.rate:g}")
    for option in OWN_OPTIONS:
        if any(item == option or item.startswith(option + "=") for item in extra):
            raise SpecError(f"{option} is set by tune for each variant (use --out for the output directory)")
    problem = directory_problem(args.out) if args.out else None
    if problem:
        raise SpecError(f"--out {args.out}: {problem}")


def check_server(api: RepositoryApi, model: str) -> dict:
    """The model's current config, after checking the server lets tune load it; ServerError otherwise."""
    api.require_model_control()
    entries = [entry for entry in api.index() if entry.get("name") == model]
    if not entries:
        names = sorted(entry.get("name", "") for entry in api.index())
        shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise RepositoryError(f"model {model!r} is not in Triton's model repositories (it has: {shown})")
    state = entries[0].get("state") or "none"
    if state != "READY" or not api.ready(model):
        raise RepositoryError(
            f"model {model!r} is not loaded on Triton (state {state}): tune starts from the configuration "
            "a loaded model runs with; load it first"
        )
    return api.config(model)


def search_options(args: argparse.Namespace) -> list[str]:
    pairs = (("--start-rate", args.start_rate), ("--growth", args.growth), ("--precision", args.precision))
    return [item for option, value in pairs if value is not None for item in (option, str(value))]


def stop_below(results: list[ranking.VariantResult], args: argparse.Namespace) -> list[str]:
    """--stop-below the best capacity so far: a variant whose saturation probe completes fewer
    requests/s than that cannot win, and its search is skipped (with an explicit --start-rate
    there is no probe, so nothing is skipped)."""
    best = max((r.capacity_rps for r in results if r.measured and r.capacity_rps is not None), default=None)
    return ["--stop-below", f"{best:g}"] if best is not None and args.start_rate is None else []


class MeasurementRefused(StartupError):
    """The capacity command refused the forwarded options (it said why): tune stops."""


def measure_variant(
    api: RepositoryApi,
    target: Target,
    variant: Variant,
    out_dir: Path,
    search: list[str],
    rate: float | None,
    first: bool,
) -> ranking.VariantResult:
    """Load one variant and measure it; a result with the reason when it could not be."""
    variant_dir = out_dir / "variants" / variant.slug
    variant_dir.mkdir(parents=True, exist_ok=True)
    print(f"\n== tune: {variant.name} ==", flush=True)
    try:
        api.load(target.model, variant.config)
        config = api.config(target.model)
    except RepositoryError as error:
        print(f"tune: {variant.name}: Triton did not load it: {error}", flush=True)
        return ranking.failed_result(variant, variant.config, f"load failed: {error}", None)
    (variant_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    capacity_dir = variant_dir / "capacity"
    # The capacity command sizes its probe from the variant's configuration, now loaded.
    code = run_command(capacity_command(target, capacity_dir, search))
    if not (capacity_dir / "capacity.json").exists():
        if code == 2 and first:
            raise MeasurementRefused(
                "the capacity search refused its options (its error is above); nothing was measured"
            )
        return ranking.failed_result(variant, config, f"capacity search failed (exit code {code})", capacity_dir)
    rate_dir = None
    if rate is not None and not json.loads((capacity_dir / "capacity.json").read_text()).get("skipped"):
        rate_dir = variant_dir / "rate"
        code = run_command(rate_command(target, rate_dir, rate))
        if not (rate_dir / "summary.json").exists():
            return ranking.failed_result(variant, config, f"run at {rate:g}/s failed (exit code {code})", capacity_dir)
    return ranking.read_result(variant, config, target.model, capacity_dir, rate_dir, rate)


def write_winner(out_dir: Path, winner: ranking.VariantResult, slo_text: str) -> str:
    """The winner's config.pbtxt (and Triton's JSON of it beside); returns what was written."""
    (out_dir / WINNER_JSON).write_text(json.dumps(winner.config, indent=2) + "\n")
    try:
        text = config_pbtxt(winner.config)
    except PbtxtError as error:
        return f"{WINNER_JSON} only (no config.pbtxt: {error})"
    header = (
        f"# Written by `python -m loadtests tune`: variant {winner.name}, "
        f"capacity {winner.capacity_rps:g} requests/s under {slo_text}.\n"
    )
    (out_dir / WINNER_PBTXT).write_text(header + text)
    return f"{WINNER_PBTXT} (and Triton's JSON of it, {WINNER_JSON})"


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def write_outputs(
    args: argparse.Namespace,
    axes: dict,
    original: dict,
    ranked: list[ranking.VariantResult],
    out_dir: Path,
    *,
    interrupted: bool,
    restored: str,
) -> None:
    """The ranking on the console, tune.json/tune.csv, the winner's config and the comparison."""
    header = {
        "model": args.model,
        "slo": args.slo,
        "rate_rps": args.rate,
        "axes": {axis: [str(v) for v in values] for axis, values in axes.items()},
        "interrupted": interrupted,
        "restored": restored,
        "original_config": original,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print()
    print(ranking.table(ranked, args.rate))
    winner = next((r for r in ranked if r.measured and r.capacity_rps is not None), None)
    if winner is not None:
        written = write_winner(out_dir, winner, args.slo)
        header["winner"] = winner.name
        print(f"winner: {winner.name} ({winner.capacity_rps:g} requests/s under {args.slo}): {written}")
    else:
        header["winner"] = None
        print("winner: none (no variant met the SLO at any rate tried)")
    ranking.write_files(out_dir, ranked, header)
    report, why_not = compare_variants(ranked, out_dir / "compare")
    print(f"comparison: {report}" if report else f"comparison: none ({why_not})")
    print(f"tune.json, tune.csv: {out_dir}", flush=True)


def run_tune(args: argparse.Namespace) -> int:
    extra = list(getattr(args, "extra", []))
    check_options(args, extra)
    axes = parse_axes(args.vary)
    api = RepositoryApi(args.triton_http, security=connection_security_in(extra))
    original = check_server(api, args.model)
    variants = build_variants(original, axes)
    out_dir = Path(args.out).resolve() if args.out else default_out_dir(args.model)
    triton = [
        "--triton-http",
        args.triton_http,
        "--triton-grpc",
        args.triton_grpc,
        "--triton-metrics",
        args.triton_metrics,
    ]
    target = Target(args.model, args.slo, triton, extra)
    search = search_options(args)
    print(f"tune: {len(variants)} variants of {args.model} under {args.slo}: " + "; ".join(v.name for v in variants))
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "original_config.json").write_text(json.dumps(original, indent=2) + "\n")

    results: list[ranking.VariantResult] = []
    interrupted = False
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM, like Ctrl-C, still restores the original
    try:
        for number, variant in enumerate(variants):
            variant_search = [*search, *stop_below(results, args)]
            results.append(measure_variant(api, target, variant, out_dir, variant_search, args.rate, number == 0))
    except KeyboardInterrupt:
        interrupted = True
        print("\ntune: interrupted; the variants measured so far are ranked below", flush=True)
    finally:
        print(f"\ntune: restoring {args.model}'s original configuration ...", flush=True)
        how = restore_original(api, args.model, original)
        print(f"tune: {args.model} is back on its original configuration ({how})", flush=True)

    ranked = ranking.rank(results)
    write_outputs(args, axes, original, ranked, out_dir, interrupted=interrupted, restored=how)
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if any(r.measured for r in ranked) else EXIT_NOTHING_MEASURED
