"""A sweep's results in the run directory, and perf_analyzer's console table (docs/guides/sweeps.md).

    sweep.json   {"mode": "concurrency" | "request_rate",
                  "levels": [{"level", "stable", "windows", "start_s", "end_s", "requests", "failures",
                              "throughput_rps", "throughput_infer_per_s",
                              "latency_us": {p50, p90, p95, p99, p99.9, max, mean},
                              "server": {model: summary.json's server keys}}, ...],
                  "stopped_by": "done" | "latency_limit" | null (interrupted, or still running),
                  "model": ..., "settings": {...}}
    sweep.csv    perf_analyzer's `-f` columns, one row per level in level order, values in µs

The CSV is computed from sweep.json's levels as perf_analyzer's `-f` file is from its
summary (perf_analyzer.cc in triton-inference-server/client): server columns are averages
per request; "Network+Server Send/Recv" is the client's mean latency minus queue and
compute (so it holds Triton's own overhead too, as in perf_analyzer), capped at 0; cells
floor to whole µs. The suite does not time the client's send and receive apart from the
wait, so "Client Send" and "Client Recv" are left empty (perf_analyzer fills them from its
client library) and all of the client side is in "Network+Server Send/Recv".

The file names are loadtests/run_format/files.py's; analysis/ reads sweep.json by those
names and the keys above, never through this module.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from types import MappingProxyType
from typing import Any

from loadtests.run_format.components import SERVER_PARTS, client_parts
from loadtests.run_format.files import SWEEP_CSV, SWEEP_JSON

CONCURRENCY = "concurrency"
REQUEST_RATE = "request_rate"
CSV_COLUMNS = (
    "Inferences/Second",
    "Client Send",
    "Network+Server Send/Recv",
    "Server Queue",
    "Server Compute Input",
    "Server Compute Infer",
    "Server Compute Output",
    "Client Recv",
    "p50 latency",
    "p90 latency",
    "p95 latency",
    "p99 latency",
)
LEVEL_COLUMN = MappingProxyType({CONCURRENCY: "Concurrency", REQUEST_RATE: "Request Rate"})


def sweep_json(controller, relative_to: float, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """sweep.json's content from a SweepController (loadtests/levels/sweep_levels.py)."""
    results = controller.results
    return {
        "mode": CONCURRENCY if controller.kind == "users" else REQUEST_RATE,
        "model": results[0].stats.model if results else None,
        "levels": [result.to_json(relative_to) for result in results],
        "stopped_by": controller.stopped_by,
        "settings": settings
        or {
            "stability_percentage": controller.stability_percent,
            "max_trials": controller.max_trials,
            "latency_limit_ms": controller.latency_limit_ms,
            "settle_windows": controller.settle,
        },
    }


def write(directory: Path, controller, relative_to: float, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write sweep.json and sweep.csv; returns sweep.json's content."""
    content = sweep_json(controller, relative_to, settings)
    directory = Path(directory)
    (directory / SWEEP_JSON).write_text(json.dumps(content, indent=2) + "\n")
    write_csv(directory / SWEEP_CSV, content)
    return content


def read(directory: Path) -> dict[str, Any]:
    """sweep.json of a run directory (raises FileNotFoundError, ValueError)."""
    return json.loads((Path(directory) / SWEEP_JSON).read_text())


def format_level(level: float, mode: str) -> str:
    """As perf_analyzer prints it: a whole concurrency; a rate with up to 6 significant digits."""
    return str(int(level)) if mode == CONCURRENCY else f"{level:g}"


def _floor(value: float) -> str:
    return str(math.floor(value))


def server_model(level: dict[str, Any], model: str | None) -> dict[str, Any] | None:
    """The level's server numbers for the sweep's model (the only one, when it is not named)."""
    server = level.get("server") or {}
    if model in server:
        return server[model]
    return next(iter(server.values()), None) if len(server) == 1 else None


def csv_row(level: dict[str, Any], mode: str, model: str | None = None) -> list[str]:
    """One sweep.csv row (perf_analyzer's -f columns) from one sweep.json level."""
    latency = level["latency_us"]
    server = server_model(level, model)
    # perf_analyzer's network part is from the actual send: open-loop levels use the uncorrected mean.
    network_us, _wait = client_parts(latency, server, level.get("latency_uncorrected_us"))
    if network_us is not None:
        network = _floor(network_us)
        server_cells = [_floor(server[key]) for key in SERVER_PARTS]
    else:
        network, server_cells = "", [""] * len(SERVER_PARTS)
    return [
        format_level(level["level"], mode),
        f"{level['throughput_infer_per_s']:.6g}",
        "",  # Client Send: not measured apart (see the module docstring)
        network,
        *server_cells,
        "",  # Client Recv
        *(_floor(latency[key]) for key in ("p50", "p90", "p95", "p99")),
    ]


def write_csv(path: Path, content: dict[str, Any]) -> None:
    mode = content["mode"]
    with Path(path).open("w", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow([LEVEL_COLUMN[mode], *CSV_COLUMNS])
        for level in content["levels"]:
            writer.writerow(csv_row(level, mode, content.get("model")))


def console_table(content: dict[str, Any]) -> str:
    """perf_analyzer's closing table (with --percentile=95), one line per level in level order.

    Inferences/Second vs. Client p95 Batch Latency
    Concurrency: 1, throughput: 49.8 infer/sec, latency 20991 usec

    A level that did not stabilise is marked "(unstable)" (perf_analyzer stops at one instead).
    """
    mode = content["mode"]
    label = "Concurrency" if mode == CONCURRENCY else "Request Rate"
    lines = ["Inferences/Second vs. Client p95 Batch Latency"]
    for level in content["levels"]:
        line = (
            f"{label}: {format_level(level['level'], mode)}, "
            f"throughput: {level['throughput_infer_per_s']:.6g} infer/sec, "
            f"latency {math.floor(level['latency_us']['p95'])} usec"
        )
        if not level["stable"]:
            line += " (unstable)"
        lines.append(line)
    return "\n".join(lines)
