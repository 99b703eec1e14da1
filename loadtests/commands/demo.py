"""`python -m loadtests demo` (what `make demo` runs): the main job end to end, locally.

Builds the tiny demo models if needed, starts the local Triton on free ports, and runs the
same headless Locust test twice: BERT-QA over HTTP and ResNet over gRPC (batch sizes 1-4,
responses validated), with the user count in steps (a `steps` load shape), once against
`bert_qa` (no batching) and once against `bert_qa_dynbatch` (dynamic batching, 2
instances). Each run gets its report (report.html, report.md, PNGs), and the two runs a
comparison. It prints where everything is and stops Triton.

    runs/<UTC time>-demo/
        bert_qa/            run directory + report.html
        bert_qa_dynbatch/   run directory + report.html
        comparison/         compare.html, compare.md, PNGs
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from loadtests.server import launcher
from loadtests.server.launcher import DEMO_REPOSITORY, REPO_ROOT, LocalTriton
from loadtests.server.serve import demo_environment

DEMO_USER_CLASSES = ("BertQAHttpUser", "ResNetGrpcUser")
DEMO_BERT_MODELS = ("bert_qa", "bert_qa_dynbatch")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run a short load test against a local Triton", description=__doc__)
    parser.add_argument(
        "--users",
        default="2;4;8",
        metavar="N;N;...",
        help="user counts of the steps, shared by the two user classes (default: 2;4;8)",
    )
    parser.add_argument("--step-s", type=float, default=8.0, help="seconds per step (default: 8)")
    parser.add_argument("--batch-size", default="1-4", metavar="SPEC", help="batch size SPEC (default: 1-4)")
    parser.add_argument("--run-dir", type=Path, default=None, help="default: runs/<UTC time>-demo")
    parser.set_defaults(run=run)


def locust_command(triton: LocalTriton, args: argparse.Namespace, bert_model: str, run_dir: Path) -> list[str]:
    return launcher.locust_command(
        "--load-shape",
        "steps",
        "--shape-args",
        f"targets={args.users},step_s={args.step_s:g}",
        *triton.options,
        "--bert-model",
        bert_model,
        "--batch-size",
        args.batch_size,
        "--validate-responses",
        "--run-dir",
        str(run_dir),
        *DEMO_USER_CLASSES,
    )


def print_results(run_dir: Path) -> None:
    from analysis.run import load_run

    for endpoint in load_run(run_dir).endpoints.values():
        latency = endpoint.latency_us
        print(
            f"  {endpoint.name:<26} {endpoint.throughput_infer_per_s:>8.1f} infer/s  "
            f"p50 {latency['p50'] / 1000:.3f} ms  p99 {latency['p99'] / 1000:.3f} ms  "
            f"failures {endpoint.failures}",
            flush=True,
        )


def run(args: argparse.Namespace) -> int:
    # Here, not at the top: every `python -m loadtests` command builds this module's parser, and
    # pandas and matplotlib would double the time `serve` takes to refuse a bad option.
    from analysis.compare import write_comparison
    from analysis.dataset import SourceError
    from analysis.report import write_report
    from analysis.run import RunDirectoryError

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root = (args.run_dir or Path("runs") / f"{stamp}-demo").resolve()
    run_dirs = [root / model for model in DEMO_BERT_MODELS]
    print("Starting the local Triton with the demo models (tiny preset) ...", flush=True)
    codes = []
    with LocalTriton([DEMO_REPOSITORY], log_file=root / "triton.log", environment=demo_environment("tiny")) as triton:
        print(f"Triton ready at {triton.http_url} and {triton.grpc_url}", flush=True)
        for model, run_dir in zip(DEMO_BERT_MODELS, run_dirs, strict=True):
            print(
                f"Load test against {model}: {', '.join(DEMO_USER_CLASSES)}, users in steps of "
                f"{args.step_s:g} s: {args.users.replace(';', ', ')} ...",
                flush=True,
            )
            command = locust_command(triton, args, model, run_dir)
            codes.append(subprocess.call(command, cwd=REPO_ROOT, stdin=subprocess.DEVNULL))
    try:
        for model, run_dir in zip(DEMO_BERT_MODELS, run_dirs, strict=True):
            print(f"{model}:", flush=True)
            print_results(run_dir)
            print(f"  report: {write_report(run_dir)}", flush=True)
        comparison = write_comparison(run_dirs, list(DEMO_BERT_MODELS), root / "comparison")
    except (RunDirectoryError, SourceError) as error:
        print(f"error: the demo left no complete run (exit codes {codes}): {error}", file=sys.stderr)
        return _first_failure(codes) or 1
    print(f"Comparison: {comparison}", flush=True)
    print(f"Results: {root}", flush=True)
    return _first_failure(codes)


def _first_failure(codes: list[int]) -> int:
    """The first non-zero exit code (a run killed by a signal has a negative one), else 0."""
    return next((code for code in codes if code), 0)
