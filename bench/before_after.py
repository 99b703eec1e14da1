"""`python -m bench.before_after --before DIR`: `make bench` with two versions of the suite, interleaved.

For each protocol and concurrency level, perf_analyzer, the suite checked out in DIR
(e.g. `git worktree add /tmp/before <commit>`) and this checkout run back to back on one
Triton, in an order that rotates per level, so drift on a shared machine hurts all three
alike. Prints both `make bench` tables (same columns, ratios to the same perf_analyzer run).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import bench.__main__ as suite_bench
from loadtests.server import TEST_REPOSITORY, LocalTriton


def suite_in(tree: Path, triton, protocol: str, concurrency: int, workdir: Path, duration_s: int):
    """bench's run_suite, with the locustfile and working directory of `tree`."""
    saved = suite_bench.REPO_ROOT, suite_bench.locust_command
    suite_bench.REPO_ROOT = tree
    suite_bench.locust_command = lambda *args: [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(tree / "locustfile.py"),
        "--headless",
        "--only-summary",
        *args,
    ]
    try:
        return suite_bench.run_suite(triton, protocol, concurrency, workdir / tree.name, duration_s)
    finally:
        suite_bench.REPO_ROOT, suite_bench.locust_command = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.before_after", description=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the suite to compare with")
    parser.add_argument("--duration", type=int, default=10, help="seconds per suite run")
    parser.add_argument("--pa-stability", type=int, default=suite_bench.PA_STABILITY_PERCENT)
    parser.add_argument("--output", type=Path, default=None, help="also write the tables here")
    parser.add_argument("--triton-http", help="use this running Triton (with --triton-grpc) instead of starting one")
    parser.add_argument("--triton-grpc")
    args = parser.parse_args(argv)
    if args.triton_http:
        running = SimpleNamespace(
            http_address=args.triton_http,
            grpc_address=args.triton_grpc,
            options=["--triton-http", args.triton_http, "--triton-grpc", args.triton_grpc],
        )
        server = contextlib.nullcontext(running)
    else:
        server = LocalTriton([TEST_REPOSITORY])
    suite_bench.PA_STABILITY_PERCENT = args.pa_stability
    trees = {"before": args.before.resolve(), "after": suite_bench.REPO_ROOT}
    rows: dict[str, list[str]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp, server as triton:
        workdir = Path(tmp)
        for protocol in suite_bench.PROTOCOLS:
            for level, concurrency in enumerate(suite_bench.CONCURRENCIES):
                runs = ["perf_analyzer", "before", "after"]
                runs = runs[level % 3 :] + runs[: level % 3]
                results = {}
                for run in runs:
                    (workdir / run).mkdir(exist_ok=True)
                    if run == "perf_analyzer":
                        results[run] = suite_bench.run_perf_analyzer(triton, protocol, concurrency, workdir)
                    else:
                        results[run] = suite_in(trees[run], triton, protocol, concurrency, workdir / run, args.duration)
                for version in ("before", "after"):
                    rows[version].append(suite_bench.ratio_row(results["perf_analyzer"], results[version]))
                    print(version, rows[version][-1], flush=True)
    header = (
        "| protocol | concurrency | PA infer/s | suite infer/s | ratio | PA p50 | suite p50 | p50 diff "
        "| PA p99 | suite p99 | PA CPU/req | suite CPU/req |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    )
    text = "".join(f"### {version}\n\n{header}" + "\n".join(rows[version]) + "\n\n" for version in rows)
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
