"""What the stop adds to the requests in flight: this checkout against another, side by side.

    python -m bench.stop_latency --before DIR [--rounds 2]

One local Triton (the test repository's `identity`, a model that answers in well under a
millisecond); for each round and each checkout (DIR, then this one), a 3-s headless run of 4 users
over HTTP and one over gRPC, each from that checkout's locustfile. Per run it prints the run's p99
and max and summary.json's `ended_during_stop`: the requests in flight when the stop began, and
the slowest of them. Locust's stop holds the event loop while it does its own work; what it holds
the loop for shows up here as those requests' latency (loadtests/run/stopping.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from loadtests.server import DEMO_REPOSITORY, TEST_REPOSITORY, LocalTriton
from models.build import ensure_built
from tests.helpers import REPO_ROOT, serving

CLASSES = ("TritonHttpUser", "TritonGrpcUser")


def one_run(tree: Path, user_class: str, triton: LocalTriton, run_dir: Path) -> str:
    command = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "--only-summary"]
    command += ["-u", "4", "-r", "4", "-t", "3s", user_class, "--model", "identity", "--run-dir", str(run_dir)]
    # From the checkout itself: `python -m` puts it first on the path, so its own loadtests/ runs.
    result = subprocess.run([*command, *triton.options], cwd=tree, capture_output=True, text=True, timeout=120)
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return f"{user_class}: no summary.json (exit {result.returncode}): {result.stderr[-500:]}"
    endpoint = json.loads(summary.read_text())["endpoints"][0]
    latency, stop = endpoint["latency_us"], endpoint.get("ended_during_stop") or {}
    in_stop = f"{stop.get('requests', '-')} ended during the stop, slowest {(stop.get('max_us') or 0) / 1e3:.2f} ms"
    return (
        f"{user_class:<15} {endpoint['requests']:>7} requests  p99 {latency['p99'] / 1e3:6.2f} ms  "
        f"max {latency['max'] / 1e3:7.2f} ms  {in_stop}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.stop_latency", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--before", type=Path, required=True, help="the other checkout (a git worktree of the old commit)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    weights = ensure_built("tiny")
    scratch = Path(tempfile.mkdtemp(prefix="stop-latency-"))
    server = LocalTriton(
        [DEMO_REPOSITORY, TEST_REPOSITORY],
        log_file=scratch / "triton.log",
        environment={"TRITON_LOADTEST_WEIGHTS_DIR": str(weights)},
    )
    for triton in serving(server):
        for round_index in range(args.rounds):
            for label, tree in (("before", args.before.resolve()), ("after", REPO_ROOT)):
                for user_class in CLASSES:
                    run_dir = scratch / f"{round_index}-{label}-{user_class}"
                    print(
                        f"round {round_index + 1} {label:<6} {one_run(tree, user_class, triton, run_dir)}", flush=True
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
