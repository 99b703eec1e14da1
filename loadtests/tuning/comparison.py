"""The measured variants side by side: `python -m analysis compare` over their capacity runs.

    path = compare_variants(ranked, out_dir / "compare")   # compare.html, or None (and why)

Each capacity run is a sweep over request rates (its sweep.json), so the comparison shows the
variants' Latency vs Throughput curves and the server's breakdown per level on the same charts
as any two runs (docs/reports.md), labelled by variant, best first.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from loadtests.tuning.measure import REPO_ROOT
from loadtests.tuning.ranking import VariantResult

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
