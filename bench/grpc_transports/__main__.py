"""`python -m bench.grpc_transports`: the gRPC transport designs and perf_analyzer, side by side.

For each concurrency level, every design (bench/grpc_transports/designs.py) and perf_analyzer
run back to back against the same Triton and the `identity` model, in an order that rotates
per level (the machine is shared: only ratios within one run mean anything). Prints a
Markdown table; `--triton-http/--triton-grpc` reuse a running Triton, else one is started.
`--before DIR` also runs the suite's own wire designs from another checkout (rows
`wire-user@before`, ...), in the same rotation: a change to the wire measured before and after
in one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import bench.__main__ as suite_bench
from bench.__main__ import REPO_ROOT, run_perf_analyzer
from loadtests.server import TEST_REPOSITORY, LocalTriton

DESIGNS = ("grpcio", "grpcio-local", "wire-user", "wire-shared", "sender", "h2lib")


BEFORE = "@before"


def run_design(design: str, concurrency: int, address: str, duration_s: float, before: Path | None = None) -> dict:
    """One design's run in a process of its own; `DESIGN@before`: from the checkout `before`."""
    tree = before if design.endswith(BEFORE) else REPO_ROOT
    command = [
        sys.executable,
        "-m",
        "bench.grpc_transports.drive",
        "--design",
        design.removesuffix(BEFORE),
        "--concurrency",
        str(concurrency),
        "--duration",
        str(duration_s),
        "--address",
        address,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=duration_s + 60, cwd=tree)
    if result.returncode != 0:
        return {"design": design, "error": result.stderr.strip()[-300:]}
    return {**json.loads(result.stdout.strip().splitlines()[-1]), "design": design}


def measure(
    triton, concurrencies: list[int], designs: list[str], duration_s: float, before: Path | None = None
) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="grpc-transports-") as tmp:
        for level, concurrency in enumerate(concurrencies):
            order = ["perf_analyzer", *designs]
            shift = level % len(order)
            for name in order[shift:] + order[:shift]:
                if name == "perf_analyzer":
                    try:
                        m = run_perf_analyzer(triton, "grpc", concurrency, Path(tmp))
                    except SystemExit as failure:
                        rows.append({"design": name, "concurrency": concurrency, "error": str(failure)})
                        continue
                    row = {
                        "design": name,
                        "concurrency": concurrency,
                        "infer_per_s": m.infer_per_s,
                        "p50_us": m.p50_us,
                        "p99_us": m.p99_us,
                        "cpu_per_request_us": m.cpu_per_request_us,
                    }
                else:
                    row = run_design(name, concurrency, triton.grpc_address, duration_s, before)
                    row["concurrency"] = concurrency
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| concurrency | design | infer/s | vs PA | p50 µs | p99 µs | CPU µs/req | vs PA |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for concurrency in sorted({r["concurrency"] for r in rows}):
        level = [r for r in rows if r["concurrency"] == concurrency]
        pa = next(r for r in level if r["design"] == "perf_analyzer")
        if "error" in pa:  # ratios against the first design instead
            pa = next(r for r in level if "error" not in r)
        for row in sorted(level, key=lambda r: r["design"] != "perf_analyzer"):
            if "error" in row:
                lines.append(f"| {concurrency} | {row['design']} | failed: {row['error'][:80]} | | | | | |")
                continue
            throughput_ratio = row["infer_per_s"] / pa["infer_per_s"]
            lines.append(
                f"| {concurrency} | {row['design']} | {row['infer_per_s']:.0f} | {throughput_ratio:.2f} "
                f"| {row['p50_us']:.0f} | {row['p99_us']:.0f} | {row['cpu_per_request_us']:.0f} "
                f"| {row['cpu_per_request_us'] / pa['cpu_per_request_us']:.2f} |"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grpc_transports", description=__doc__)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    parser.add_argument("--duration", type=float, default=6.0, help="seconds per design and level")
    parser.add_argument(
        "--before", type=Path, help="also run the wire designs from this checkout of the suite (DESIGN@before)"
    )
    parser.add_argument("--triton-http")
    parser.add_argument("--triton-grpc")
    parser.add_argument(
        "--pa-stability", type=int, default=suite_bench.PA_STABILITY_PERCENT, help="perf_analyzer's stability %%"
    )
    args = parser.parse_args()
    suite_bench.PA_STABILITY_PERCENT = args.pa_stability
    designs = list(args.designs)
    if args.before is not None:
        designs += [design + BEFORE for design in args.designs if design.startswith("wire")]
    before = None if args.before is None else args.before.resolve()
    if args.triton_grpc:
        triton = SimpleNamespace(http_address=args.triton_http, grpc_address=args.triton_grpc)
        rows = measure(triton, args.concurrency, designs, args.duration, before)
    else:
        with LocalTriton([TEST_REPOSITORY]) as triton:
            rows = measure(triton, args.concurrency, designs, args.duration, before)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
