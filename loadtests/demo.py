"""`python -m loadtests demo` (what `make demo` runs): the main job end to end, locally.

Builds the tiny demo models if needed, starts the local Triton on free ports, runs a
short headless Locust test (BERT-QA over HTTP and ResNet over gRPC, batch sizes
1-4, responses validated), prints where the run directory is, and stops Triton.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from analysis.run import RunDirectoryError, load_run
from loadtests.server.launcher import DEMO_REPOSITORY, REPO_ROOT, LocalTriton
from loadtests.server.serve import demo_environment

DEMO_USER_CLASSES = ("BertQAHttpUser", "ResNetGrpcUser")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="run a short load test against a local Triton", description=__doc__)
    parser.add_argument("--duration", default="20s", help="Locust run time (default: 20s)")
    parser.add_argument("--users", type=int, default=4, help="concurrent users (default: 4)")
    parser.add_argument("--batch-size", default="1-4", metavar="SPEC", help="batch size SPEC (default: 1-4)")
    parser.add_argument("--run-dir", type=Path, default=None, help="default: runs/<UTC time>-demo")
    parser.set_defaults(run=run)


def locust_command(triton: LocalTriton, args: argparse.Namespace, run_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(REPO_ROOT / "locustfile.py"),
        "--headless",
        "--users",
        str(args.users),
        "--spawn-rate",
        str(args.users),
        "--run-time",
        args.duration,
        "--triton-http",
        triton.http_address,
        "--triton-grpc",
        triton.grpc_address,
        "--triton-metrics",
        triton.metrics_address,
        "--batch-size",
        args.batch_size,
        "--validate-responses",
        "--run-dir",
        str(run_dir),
        *DEMO_USER_CLASSES,
    ]


def run(args: argparse.Namespace) -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir = (args.run_dir or Path("runs") / f"{stamp}-demo").resolve()
    print("Starting the local Triton with the demo models (tiny preset) ...", flush=True)
    with LocalTriton(
        [DEMO_REPOSITORY], log_file=run_dir / "triton.log", environment=demo_environment("tiny")
    ) as triton:
        print(f"Triton ready at {triton.http_url} and {triton.grpc_url}", flush=True)
        print(f"Load test: {', '.join(DEMO_USER_CLASSES)}, {args.users} users, {args.duration} ...", flush=True)
        code = subprocess.call(locust_command(triton, args, run_dir), cwd=REPO_ROOT, stdin=subprocess.DEVNULL)
    try:
        endpoints = load_run(run_dir).endpoints.values()
    except RunDirectoryError as error:
        print(f"error: the load test left no complete run directory (exit code {code}): {error}", file=sys.stderr)
        return code or 1
    for endpoint in endpoints:
        latency = endpoint.latency_us
        print(
            f"  {endpoint.name:<26} {endpoint.throughput_infer_per_s:>8.1f} infer/s  "
            f"p50 {latency['p50'] / 1000:.3f} ms  p99 {latency['p99'] / 1000:.3f} ms  "
            f"failures {endpoint.failures}",
            flush=True,
        )
    print(f"Results: {run_dir}", flush=True)
    return code
