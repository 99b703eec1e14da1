"""The variants' numbers, ranked: the console table, tune.json and tune.csv.

    result = read_result(variant, model, capacity_dir, rate_dir)   # from the run directories
    ranked = rank(results)                                          # best first
    print(table(ranked, rate=50.0))

Rank: the capacity under the SLO, highest first; among equal capacities the lower p99 at the
fixed rate (--rate), then the lower p99 at the capacity level. A variant that failed to load or
to measure ranks last, with its reason. The server's figures (average executed batch, queue and
compute time per request) are Triton's statistics over the level the figure belongs to: the
fixed-rate run's summary.json `server` section with --rate, else the capacity level's.

The measured variants side by side: `python -m analysis compare` over their capacity runs.

    path = compare_variants(ranked, out_dir / "compare")   # compare.html, or None (and why)

Each capacity run is a sweep over request rates (its sweep.json), so the comparison shows the
variants' Latency vs Throughput curves and the server's breakdown per level on the same charts
as any two runs (docs/reference/reports.md), labelled by variant, best first.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from loadtests.tuning.measure import REPO_ROOT
from loadtests.tuning.variants import Variant

TUNE_JSON = "tune.json"
TUNE_CSV = "tune.csv"
COMPUTE_PARTS = ("compute_input_us", "compute_infer_us", "compute_output_us")
CSV_COLUMNS = [
    "rank",
    "variant",
    "status",
    "capacity_rps",
    "last_passing_rps",
    "first_failing_rps",
    "levels",
    "p99_at_capacity_us",
    "rate_rps",
    "p99_at_rate_us",
    "avg_batch",
    "queue_us",
    "compute_us",
    "server_from",
    "capacity_run",
    "rate_run",
]


@dataclass
class VariantResult:
    """One variant's outcome; `status` is "measured" or why not."""

    name: str
    slug: str
    settings: dict[str, Any]
    config: dict[str, Any]
    status: str = "measured"
    capacity_rps: float | None = None
    last_passing_rps: float | None = None
    first_failing_rps: float | None = None
    levels: int = 0
    p99_at_capacity_us: float | None = None
    rate_rps: float | None = None
    p99_at_rate_us: float | None = None
    avg_batch: float | None = None
    queue_us: float | None = None
    compute_us: float | None = None
    server_from: str = ""
    capacity_run: str = ""
    rate_run: str = ""
    rank: int = 0
    search_done: bool = True

    @property
    def measured(self) -> bool:
        return self.status == "measured"


def _server_figures(server: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    if not server or not server.get("executions"):
        return None, None, None
    compute = round(sum(server.get(part, 0.0) for part in COMPUTE_PARTS), 3)
    return server.get("avg_batch"), server.get("queue_us"), compute


def read_result(
    variant: Variant, config: dict[str, Any], model: str, capacity_dir: Path, rate_dir: Path | None, rate: float | None
) -> VariantResult:
    """A measured variant's figures from its capacity run (and fixed-rate run); raises OSError/ValueError."""
    content = json.loads((capacity_dir / "capacity.json").read_text())
    result = VariantResult(variant.name, variant.slug, variant.settings, config, capacity_run=str(capacity_dir))
    result.capacity_rps = content.get("capacity_rps")
    result.last_passing_rps = content["bracket"]["last_passing_rps"]
    result.first_failing_rps = content["bracket"]["first_failing_rps"]
    result.levels = int(content.get("levels_tried", len(content.get("levels", []))))
    result.search_done = bool(content.get("done", True))
    skipped = content.get("skipped")
    if skipped:
        result.status = (
            f"stopped after the probe: saturated at {skipped['probe_rps']:.1f} requests/s, "
            f"below the best {skipped['stop_below_rps']:g}"
        )
        return result
    at_capacity = [lv for lv in content.get("levels", []) if lv.get("passed") and lv["rate"] == result.capacity_rps]
    if at_capacity:
        level = at_capacity[-1]
        result.p99_at_capacity_us = level["latency_us"]["p99"]
        result.avg_batch, result.queue_us, result.compute_us = _server_figures(level.get("server", {}).get(model, {}))
        result.server_from = "capacity level"
    if rate_dir is not None and rate is not None:
        summary = json.loads((rate_dir / "summary.json").read_text())
        result.rate_rps, result.rate_run = rate, str(rate_dir)
        endpoints = [e for e in summary.get("endpoints", []) if e.get("model") == model] or summary.get("endpoints", [])
        if endpoints:
            result.p99_at_rate_us = max(e["latency_us"]["p99"] for e in endpoints)
        result.avg_batch, result.queue_us, result.compute_us = _server_figures(summary.get("server", {}).get(model, {}))
        result.server_from = f"{rate:g}/s run"
    return result


def failed_result(variant: Variant, config: dict[str, Any], status: str, capacity_dir: Path | None) -> VariantResult:
    return VariantResult(
        variant.name, variant.slug, variant.settings, config, status=status, capacity_run=str(capacity_dir or "")
    )


def _key(result: VariantResult) -> tuple:
    def low_first(value: float | None) -> float:
        return value if value is not None else math.inf

    capacity = result.capacity_rps if result.capacity_rps is not None else -1.0
    return (
        not result.measured,
        -capacity,
        low_first(result.p99_at_rate_us),
        low_first(result.p99_at_capacity_us),
    )


def rank(results: list[VariantResult]) -> list[VariantResult]:
    """Best first (see the module docstring); sets each result's `rank` (1 = best)."""
    ranked = sorted(results, key=_key)  # sorted() is stable: ties keep the order measured
    for position, result in enumerate(ranked, start=1):
        result.rank = position
    return ranked


def _ms(value_us: float | None) -> str:
    return f"{value_us / 1000:.2f}" if value_us is not None else "-"


def _num(value: float | None, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


def table(ranked: list[VariantResult], rate: float | None) -> str:
    """The ranked table as printed and put in docs/guides/tuning.md."""
    width = max([len("variant"), *(len(r.name) for r in ranked)])
    rate_head = f"p99@{rate:g}/s ms" if rate is not None else "p99@rate ms"
    lines = [
        f"{'#':>2}  {'variant':<{width}}  {'capacity/s':>10}  {'bracket':>15}  {'p99@cap ms':>10}  "
        f"{rate_head:>14}  {'avg batch':>9}  {'queue us':>9}  {'compute us':>10}"
    ]
    for r in ranked:
        if not r.measured:
            lines.append(f"{r.rank:>2}  {r.name:<{width}}  {r.status}")
            continue
        capacity = f"{r.capacity_rps:g}" if r.capacity_rps is not None else "none"
        failing = f"{r.first_failing_rps:g}" if r.first_failing_rps is not None else "-"
        passing = f"{r.last_passing_rps:g}" if r.last_passing_rps is not None else "-"
        lines.append(
            f"{r.rank:>2}  {r.name:<{width}}  {capacity:>10}  {passing + '..' + failing:>15}  "
            f"{_ms(r.p99_at_capacity_us):>10}  {_ms(r.p99_at_rate_us):>14}  {_num(r.avg_batch, 2):>9}  "
            f"{_num(r.queue_us):>9}  {_num(r.compute_us):>10}"
        )
    return "\n".join(lines)


def write_files(out_dir: Path, ranked: list[VariantResult], header: dict[str, Any]) -> None:
    """tune.json (the header, then every variant with its config) and tune.csv (one row each)."""
    content = {**header, "variants": [asdict(result) for result in ranked]}
    (out_dir / TUNE_JSON).write_text(json.dumps(content, indent=2) + "\n")
    with open(out_dir / TUNE_CSV, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for result in ranked:
            row = asdict(result)
            row["variant"] = result.name
            writer.writerow({key: ("" if row.get(key) is None else row.get(key)) for key in CSV_COLUMNS})


MIN_RUNS = 2


def compare_command(ranked: list[VariantResult], out_dir: Path) -> list[str] | None:
    measured = [r for r in ranked if r.measured and r.capacity_run]
    if len(measured) < MIN_RUNS:
        return None
    return [
        sys.executable,
        "-m",
        "analysis",
        "compare",
        *(r.capacity_run for r in measured),
        "--labels",
        ",".join(r.name for r in measured),
        "--out",
        str(out_dir),
    ]


def compare_variants(ranked: list[VariantResult], out_dir: Path) -> tuple[Path | None, str]:
    """Write the comparison; (compare.html, "") or (None, the reason there is none)."""
    command = compare_command(ranked, out_dir)
    if command is None:
        return None, f"fewer than {MIN_RUNS} variants were measured"
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        return None, (result.stderr.strip().splitlines() or [f"exit code {result.returncode}"])[-1]
    return Path(result.stdout.strip().splitlines()[-1]), ""
