"""perf_analyzer run the way every bench row runs it: one concurrency level, bounded, measured.

Shared by `make bench`'s side-by-side table (bench/__main__.py) and the gRPC concurrency row
(bench/concurrency.py), so both judge the suite against the same reference run the same way.
"""

from __future__ import annotations

import csv
import resource
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loadtests.server import LocalTriton

BENCH_DIR = Path(__file__).resolve().parent
PERF_ANALYZER = BENCH_DIR / "perf_analyzer"
MEASUREMENT_INTERVAL_MS = 3000
# perf_analyzer's defaults (10 % stability, 10 trials) rarely stabilise on this shared 2-core
# machine, and a run can go on for many minutes; these bounds keep `make bench` finite.
PA_STABILITY_PERCENT = 25
PA_MAX_TRIALS = 8
PA_TIMEOUT_S = 180
PA_ATTEMPTS = 2


@dataclass(frozen=True)
class Measurement:
    tool: str
    protocol: str
    concurrency: int
    infer_per_s: float
    p50_us: float
    p99_us: float
    cpu_per_request_us: float | None


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_requests(triton: LocalTriton, model: str) -> int:
    """Requests Triton has served for `model`, from its statistics (the suite's own reader)."""
    return sum(
        int(version["inference_stats"]["success"]["count"])
        for version in triton.control().statistics([model])[model].values()
    )


def run_perf_analyzer(
    triton: LocalTriton,
    protocol: str,
    concurrency: int,
    workdir: Path,
    model: str,
    extra: tuple[str, ...] = (),
    stability_percent: int = PA_STABILITY_PERCENT,
) -> Measurement:
    """perf_analyzer at one concurrency level; `extra` adds its options (e.g. `--shape`)."""
    csv_file = workdir / f"pa-{model}-{protocol}-{concurrency}.csv"
    address = triton.http_address if protocol == "http" else triton.grpc_address
    command = [
        str(PERF_ANALYZER), "-m", model, "-u", address, "-i", protocol,
        "--concurrency-range", str(concurrency), "--measurement-interval", str(MEASUREMENT_INTERVAL_MS),
        "--stability-percentage", str(stability_percent), "--max-trials", str(PA_MAX_TRIALS),
        "-f", str(csv_file), *extra,
    ]  # fmt: skip
    for attempt in range(1, PA_ATTEMPTS + 1):
        cpu_before, requests_before = children_cpu_s(), server_requests(triton, model)
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=PA_TIMEOUT_S)
            failure = result.stderr.strip()[-300:] if result.returncode != 0 else ""
        except subprocess.TimeoutExpired:
            failure = f"no result within {PA_TIMEOUT_S} s"
        cpu, requests = children_cpu_s() - cpu_before, server_requests(triton, model) - requests_before
        if not failure:
            break
        print(f"perf_analyzer attempt {attempt} at {protocol} concurrency {concurrency} failed: {failure}", flush=True)
    else:
        raise SystemExit(f"error: perf_analyzer did not produce a stable measurement: {failure}")
    (row,) = list(csv.DictReader(csv_file.open()))
    # Its CPU covers the whole process (every trial window), divided by every request it sent.
    return Measurement(
        tool="perf_analyzer",
        protocol=protocol,
        concurrency=concurrency,
        infer_per_s=float(row["Inferences/Second"]),
        p50_us=float(row["p50 latency"]),
        p99_us=float(row["p99 latency"]),
        cpu_per_request_us=cpu * 1e6 / requests if requests else None,
    )
