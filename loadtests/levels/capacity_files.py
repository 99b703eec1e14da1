"""A capacity search's files in the run directory: capacity.json and capacity.csv (docs/guides/capacity.md).

Every level in the order tried, with its verdict, and the capacity with its bracket.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from loadtests.levels.capacity_levels import CapacityController
from loadtests.run_format.files import CAPACITY_CSV, CAPACITY_JSON

CSV_COLUMNS = (
    "order",
    "rate",
    "passed",
    "stopped_early",
    "to_confirm",
    "stable",
    "windows",
    "throughput_rps",
    "requests",
    "failures",
    "late",
    "dropped",
    "p50_us",
    "p95_us",
    "p99_us",
    "p99.9_us",
)


def capacity_json(controller: CapacityController, relative_to: float, settings: dict[str, Any]) -> dict[str, Any]:
    """capacity.json's content; times on timeseries.csv's clock (`relative_to`: the run's start)."""
    passing, failing = controller.search.bracket
    levels = []
    for order, (result, verdict) in enumerate(zip(controller.results, controller.verdicts, strict=False), 1):
        counts = {"late": result.stats.late, "dropped": result.stats.dropped}
        levels.append({"order": order, **verdict, **result.to_json(relative_to), **counts})
    return {
        "capacity_rps": passing,
        "bracket": {"last_passing_rps": passing, "first_failing_rps": failing},
        "done": controller.done,
        "slo": settings["slo"],
        "levels_tried": len(levels),
        "settings": settings,
        "levels": levels,
    }


def skipped_json(probe_rps: float, stop_below: float, slo_text: str) -> dict[str, Any]:
    """capacity.json of a search skipped after its probe: saturated, the model completed fewer
    requests/s than `stop_below` (tune's best so far), so its capacity is below it too."""
    return {
        "capacity_rps": None,
        "bracket": {"last_passing_rps": None, "first_failing_rps": None},
        "done": True,
        "skipped": {"probe_rps": probe_rps, "stop_below_rps": stop_below},
        "slo": slo_text,
        "levels_tried": 0,
        "settings": {"slo": slo_text, "probe_rps": probe_rps},
        "levels": [],
    }


def write_capacity_files(directory: Path, content: dict[str, Any]) -> None:
    """capacity.json as given, and capacity.csv (one row per level, latencies in µs) from it."""
    (directory / CAPACITY_JSON).write_text(json.dumps(content, indent=2) + "\n")
    with open(directory / CAPACITY_CSV, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for level in content["levels"]:
            latency = level["latency_us"]
            writer.writerow(
                [
                    level["order"],
                    level["rate"],  # as capacity.json has it: a probe-based rate has more than 6 digits
                    level["passed"],
                    level["stopped_early"] or "",
                    level["to_confirm"],
                    level["stable"],
                    level["windows"],
                    level["throughput_rps"],
                    level["requests"],
                    level["failures"],
                    level.get("late", ""),
                    level.get("dropped", ""),
                    *(latency[key] for key in ("p50", "p95", "p99", "p99.9")),
                ]
            )
