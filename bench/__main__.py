"""`make bench` (`python -m bench`): the suite against NVIDIA's perf_analyzer, side by side.

Both drive the same trivial batching model (`identity`, FP32 [16], batch 1, random data)
on one local Triton, over HTTP and gRPC, at concurrency 1, 4 and 16. For each level the
two tools run back to back, in alternating order (this machine is shared and noisy, so
only ratios measured in one run mean anything). The suite runs as one Locust process.

Writes bench/results.md and prints it, each level marked ok/MISS against issue 15's targets
(TARGET_* below): throughput ratio suite / perf_analyzer per protocol and concurrency, p50
within 15 % of perf_analyzer's, client CPU per request at most 1.5x perf_analyzer's. A last
row judges gRPC concurrency (bench/concurrency.py: 16 users against a 20-ms model reach 0.9 N/T).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import MappingProxyType

from analysis.report import write_report
from bench import concurrency as parallel_check
from bench import pa_runner
from bench.pa_runner import MEASUREMENT_INTERVAL_MS, PA_MAX_TRIALS, PERF_ANALYZER, Measurement
from loadtests.server import TEST_REPOSITORY, LocalTriton
from loadtests.server.launcher import locust_command

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
MODEL = "identity"
CONCURRENCIES = (1, 4, 16)
PROTOCOLS = ("http", "grpc")
# Issue 15's targets, each a ratio to perf_analyzer measured in the same run.
TARGET_RATIO = MappingProxyType(
    {("http", 1): 0.9, ("http", 4): 1.0, ("http", 16): 1.0, ("grpc", 1): 0.8, ("grpc", 4): 0.9, ("grpc", 16): 0.9}
)
TARGET_P50_DIFF = 0.15
TARGET_CPU_RATIO = 1.5  # the suite's client CPU per request at most this times perf_analyzer's
PA_STABILITY_PERCENT = pa_runner.PA_STABILITY_PERCENT


def run_perf_analyzer(triton: LocalTriton, protocol: str, concurrency: int, workdir: Path) -> Measurement:
    """perf_analyzer on MODEL (the stability bound is read here, so before_after.py can set it)."""
    return pa_runner.run_perf_analyzer(
        triton, protocol, concurrency, workdir, MODEL, stability_percent=PA_STABILITY_PERCENT
    )


def write_pa_sweep(workdir: Path, protocol: str) -> Path:
    """perf_analyzer's per-level CSVs as one -f CSV (levels in order) in bench/results/, and its report."""
    lines: list[str] = []
    for concurrency in CONCURRENCIES:
        header, *rows = (workdir / f"pa-{MODEL}-{protocol}-{concurrency}.csv").read_text().splitlines()
        lines = lines or [header]
        lines += rows[:1]  # its CSV may append server-side rows after the first blank line
    target = BENCH_DIR / "results" / f"perf_analyzer-{protocol}.csv"  # git-ignored, like every run's output
    target.parent.mkdir(exist_ok=True)
    target.write_text("\n".join(lines) + "\n")
    return write_report(target)


def run_suite(triton: LocalTriton, protocol: str, concurrency: int, workdir: Path, duration_s: int) -> Measurement:
    run_dir = workdir / f"suite-{protocol}-{concurrency}"
    user_class = "TritonHttpUser" if protocol == "http" else "TritonGrpcUser"
    command = locust_command(
        "-u",
        str(concurrency),
        "-r",
        str(concurrency),
        "-t",
        f"{duration_s}s",
        user_class,
        "--model",
        MODEL,
        *triton.options,
        "--run-dir",
        str(run_dir),
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=duration_s + 120, cwd=REPO_ROOT)
    if result.returncode != 0:
        raise SystemExit(f"error: the suite's run failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    (endpoint,) = summary["endpoints"]
    return Measurement(
        "suite",
        protocol,
        concurrency,
        endpoint["throughput_infer_per_s"],
        endpoint["latency_us"]["p50"],
        endpoint["latency_us"]["p99"],
        summary["load_generator"]["cpu_per_request_us"],
    )


def ratio_row(pa: Measurement, suite: Measurement) -> str:
    ratio = suite.infer_per_s / pa.infer_per_s if pa.infer_per_s else float("nan")
    p50_diff = (suite.p50_us - pa.p50_us) / pa.p50_us if pa.p50_us else float("nan")
    target = TARGET_RATIO.get((pa.protocol, pa.concurrency))
    ratio_ok = "" if target is None else (" ok" if ratio >= target else " MISS")
    p50_ok = " ok" if abs(p50_diff) <= TARGET_P50_DIFF else " MISS"

    def cpu(m: Measurement) -> str:
        return f"{m.cpu_per_request_us:.0f}" if m.cpu_per_request_us is not None else "-"

    cpu_ok = ""
    if pa.cpu_per_request_us and suite.cpu_per_request_us is not None:
        cpu_ok = " ok" if suite.cpu_per_request_us <= TARGET_CPU_RATIO * pa.cpu_per_request_us else " MISS"

    return (
        f"| {pa.protocol} | {pa.concurrency} | {pa.infer_per_s:.0f} | {suite.infer_per_s:.0f} | "
        f"{ratio:.2f}{ratio_ok} | {pa.p50_us:.0f} | {suite.p50_us:.0f} | {p50_diff:+.0%}{p50_ok} | "
        f"{pa.p99_us:.0f} | {suite.p99_us:.0f} | {cpu(pa)} | {cpu(suite)}{cpu_ok} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--duration", type=int, default=12, help="seconds per suite run (default 12)")
    parser.add_argument("--output", type=Path, default=BENCH_DIR / "results.md")
    args = parser.parse_args(argv)
    if not PERF_ANALYZER.exists():
        print("error: bench/perf_analyzer missing: run bench/install_perf_analyzer.sh", file=sys.stderr)
        return 2
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-") as tmp,
        LocalTriton([TEST_REPOSITORY, parallel_check.sleep_repository(Path(tmp))]) as triton,
    ):
        workdir = Path(tmp)
        for protocol in PROTOCOLS:
            for index, concurrency in enumerate(CONCURRENCIES):
                # Alternate which tool goes first, so drift on a shared machine hurts both alike.
                runners = [run_perf_analyzer, lambda *a: run_suite(*a, args.duration)]
                if index % 2:
                    runners.reverse()
                results = [runner(triton, protocol, concurrency, workdir) for runner in runners]
                pa, suite = sorted(results, key=lambda m: m.tool)
                rows.append(ratio_row(pa, suite))
                print(rows[-1], flush=True)
        reports = [write_pa_sweep(workdir, protocol) for protocol in PROTOCOLS]
        parallel = parallel_check.run_both(triton, workdir, args.duration)
        print(parallel.row(), flush=True)
    header = [
        "# Benchmark: the suite against perf_analyzer",
        "",
        f"Model `{MODEL}` (FP32 [16], batch 1, dynamic batching) on the local Triton; one Locust process;",
        f"perf_analyzer {MEASUREMENT_INTERVAL_MS} ms windows until stable within {PA_STABILITY_PERCENT} % "
        f"(at most {PA_MAX_TRIALS} trials), the suite {args.duration} s per level.",
        "Command: `make bench`. Latencies in µs; CPU is the client's CPU time per request in µs.",
        "Targets (issue 15): ratio >= "
        + ", ".join(f"{target:g} ({protocol} at {level})" for (protocol, level), target in TARGET_RATIO.items())
        + f"; p50 within {TARGET_P50_DIFF:.0%}; client CPU per request <= {TARGET_CPU_RATIO:g}x perf_analyzer's.",
        "",
        "| protocol | concurrency | PA infer/s | suite infer/s | ratio | PA p50 | suite p50 | p50 diff "
        "| PA p99 | suite p99 | PA CPU/req | suite CPU/req |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    text = "\n".join([*header, *rows, "", parallel_check.HEADER, parallel.row()]) + "\n"
    args.output.write_text(text)
    print(f"\nWritten to {args.output}")
    for report in reports:
        print(f"perf_analyzer's own results as a report: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
