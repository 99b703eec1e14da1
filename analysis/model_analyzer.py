"""Model Analyzer's result CSVs: metrics-model-inference.csv, metrics-model-gpu.csv and
metrics-server-only.csv (`model-analyzer report`'s exports, default names).

    Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,
    Throughput (infer/sec),p99 Latency (ms)                    (the default inference fields)
    Model,GPU UUID,Batch,Concurrency,...,GPU Memory Usage (MB),GPU Utilization (%),GPU Power Usage (W)
    Model,GPU UUID,GPU Memory Usage (MB),GPU Utilization (%),GPU Power Usage (W)

Which columns there are is the user's choice (`inference_output_fields`, `gpu_output_fields`,
`server_output_fields`); headers are the record types' names, latencies in ms (rounded to
0.1), `Request Rate` in place of `Concurrency` for request-rate searches. Cells that hold a
list are quoted: a multi-model run writes `"421.0, [184.5,236.5]"` (the combined value, then
each model's) and `"1,1"` for its batch sizes; rows may end with a comma.

    parsed = read_file("metrics-model-inference.csv")   # .levels per model config, .tables, .notes
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.levels import LEVEL_COLUMNS, add_client_network
from analysis.perf_analyzer import PerfAnalyzerCsvError, number, read_rows
from loadtests.run_format.components import SERVER_PARTS, client_parts

FIRST_COLUMN = "Model"
MODES = {"Concurrency": "concurrency", "Request Rate": "request_rate"}
INFERENCE_FILE = "metrics-model-inference.csv"
GPU_FILE = "metrics-model-gpu.csv"
SERVER_FILE = "metrics-server-only.csv"
# Model Analyzer's header (ms) -> our level column (µs).
LATENCY_COLUMNS = {
    "p99 Latency (ms)": "p99_us",
    "p95 Latency (ms)": "p95_us",
    "p90 Latency (ms)": "p90_us",
    "Avg Latency (ms)": "mean_us",
    "Server Queue time (ms)": "queue_us",
    "Server Compute Input time (ms)": "compute_input_us",
    "Server Compute Infer time (ms)": "compute_infer_us",
    "Server Compute Output time (ms)": "compute_output_us",
}
THROUGHPUT = "Throughput (infer/sec)"
# GPU fields in the inference table (averaged over the GPUs by Model Analyzer): -> (column, scale).
INFERENCE_GPU_COLUMNS = {
    "GPU Memory Usage (MB)": ("gpu_memory_used_bytes", 1e6),
    "Max GPU Memory Usage (MB)": ("gpu_memory_used_bytes", 1e6),
    "GPU Utilization (%)": ("gpu_utilization_pct", 1.0),
    "Average GPU Utilization (%)": ("gpu_utilization_pct", 1.0),
    "GPU Power Usage (W)": ("gpu_power_w", 1.0),
    "Average GPU Power Usage (W)": ("gpu_power_w", 1.0),
}
# Shown in the series' name or table, or the same time as other columns counted another way.
CONTEXT = (
    "Model",
    "Batch",
    "Concurrency",
    "Request Rate",
    "Model Config Path",
    "Instance Group",
    "Max Batch Size",
    "Satisfies Constraints",
    "Client Send/Recv (ms)",
    "Response Wait Time (ms)",
)
# Headers with and without Model Analyzer's aggregation prefix ("Max ", "Average ").
GPU_HEADERS = {
    "GPU Memory Usage (MB)": "GPU memory (MB)",
    "Max GPU Memory Usage (MB)": "GPU memory (MB)",
    "GPU Utilization (%)": "GPU util (%)",
    "Average GPU Utilization (%)": "GPU util (%)",
    "GPU Power Usage (W)": "GPU power (W)",
    "Average GPU Power Usage (W)": "GPU power (W)",
}
FIRST_NUMBER = re.compile(r"^\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)")


@dataclass
class ModelAnalyzerCsv:
    mode: str | None
    levels: dict[str, pd.DataFrame]
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def is_model_analyzer(header: list[str]) -> bool:
    return bool(header) and header[0] == FIRST_COLUMN


def _first_number(text: str, where: str) -> float:
    """`421.0, [184.5,236.5]` -> 421.0 (a multi-model row's combined value); `6.1` -> 6.1."""
    match = FIRST_NUMBER.match(text)
    if match is None:
        return number(text, where)  # empty -> NaN, words -> the error
    return float(match.group(1))


def _gpu_table(path: Path) -> tuple[str, list[str], list[list[str]]]:
    header, rows = read_rows(path, "Model Analyzer's metrics-model-gpu.csv")
    level_name = next((name for name in header if name in MODES), None)
    shown = [name for name in header if name in GPU_HEADERS]
    if not shown:
        raise PerfAnalyzerCsvError(f"{path}: no GPU column ({', '.join(sorted(set(GPU_HEADERS.values())))})")
    config = "Model Config Path" if "Model Config Path" in header else FIRST_COLUMN
    columns = [config, *(n for n in ("GPU UUID", "Batch", level_name, "Satisfies Constraints") if n and n in header)]
    headers = ["configuration" if name == config else name.lower() for name in columns]
    headers += [GPU_HEADERS[name] for name in shown]
    table = []
    for line, row in rows:
        cells = dict(zip(header, row, strict=True))
        for name in shown:
            _first_number(cells[name], f"{path}:{line} {name}")  # a number, or one error line
        table.append([cells[name] for name in columns] + [cells[name].strip() for name in shown])
    return "GPU per configuration (metrics-model-gpu.csv)", headers, table


def _server_table(path: Path) -> tuple[str, list[str], list[list[str]]]:
    header, rows = read_rows(path, "Model Analyzer's metrics-server-only.csv")
    shown = [name for name in header if name in GPU_HEADERS]
    columns = [name for name in ("Model", "GPU UUID") if name in header]
    table = []
    for line, row in rows:
        cells = dict(zip(header, row, strict=True))
        for name in shown:
            _first_number(cells[name], f"{path}:{line} {name}")
        table.append([cells[name] for name in columns] + [cells[name].strip() for name in shown])
    return (
        "Triton alone, no model load (metrics-server-only.csv)",
        [name.lower() for name in columns] + [GPU_HEADERS[name] for name in shown],
        table,
    )


def _inference_levels(path: Path, header: list[str], rows: list) -> tuple[str, dict[str, pd.DataFrame]]:
    level_name = next((name for name in header if name in MODES), None)
    missing = [name for name in (THROUGHPUT,) if name not in header]
    if level_name is None or missing:
        raise PerfAnalyzerCsvError(
            f"{path}: not a Model Analyzer inference CSV (needs Concurrency or Request Rate, and {THROUGHPUT})"
        )
    series: dict[str, list[dict]] = {}
    for line, row in rows:
        cells = dict(zip(header, row, strict=True))
        where = f"{path}:{line}"
        config = cells.get("Model Config Path") or cells[FIRST_COLUMN]
        name = f"{config} (batch {cells['Batch']})" if "Batch" in cells else config
        level = _first_number(cells[level_name], f"{where} {level_name}")
        record = {
            "level": level,
            "label": cells[level_name].strip(),
            "infer_per_s": _first_number(cells[THROUGHPUT], f"{where} {THROUGHPUT}"),
        }
        for column_name, column in LATENCY_COLUMNS.items():
            if column_name in cells:
                record[column] = _first_number(cells[column_name], f"{where} {column_name}") * 1000
        for column_name, (column, scale) in INFERENCE_GPU_COLUMNS.items():
            if column_name in cells:
                record[column] = _first_number(cells[column_name], f"{where} {column_name}") * scale
        if not math.isnan(record.get("mean_us", math.nan)) and all(key in record for key in SERVER_PARTS):
            # The client-side part: the mean less Triton's queue and compute, as perf_analyzer splits
            # it; only when every part is in the file (a missing one is unknown, not 0).
            server = {"requests": 1, **{key: record[key] for key in SERVER_PARTS}}
            network, _ = client_parts({"mean": record["mean_us"]}, server)
            record["network_us"] = network
        if "Satisfies Constraints" in cells:
            record["satisfies_constraints"] = cells["Satisfies Constraints"].strip().lower().startswith("yes")
        series.setdefault(name, []).append(record)
    levels = {}
    for name, records in series.items():
        frame = pd.DataFrame.from_records(records).reindex(columns=LEVEL_COLUMNS)
        levels[name] = add_client_network(frame.sort_values("level", kind="stable").reset_index(drop=True))
    return MODES[level_name], levels


def read_file(path: str | Path) -> ModelAnalyzerCsv:
    """One of Model Analyzer's CSVs. An inference CSV gives one level series per model config
    (and batch size); the GPU and server-only CSVs beside it are read too, as tables."""
    path = Path(path)
    header, rows = read_rows(path, "a Model Analyzer result CSV")
    if not is_model_analyzer(header):
        raise PerfAnalyzerCsvError(f"{path}: not a Model Analyzer CSV (first column '{header[0]}', not 'Model')")
    if "GPU UUID" in header:
        # A GPU table given on its own: its table, the server baseline beside it.
        table = _gpu_table(path) if any(name in MODES for name in header) else _server_table(path)
        parsed = ModelAnalyzerCsv(None, {}, [table])
        parsed.notes.append(f"Latency and throughput are in {INFERENCE_FILE}; this file holds GPU measurements only.")
        return parsed
    mode, levels = _inference_levels(path, header, rows)
    parsed = ModelAnalyzerCsv(mode, levels)
    known = {*CONTEXT, THROUGHPUT, *LATENCY_COLUMNS, *INFERENCE_GPU_COLUMNS}
    unknown = [name for name in header if name not in known]
    if unknown:
        parsed.notes.append(f"Columns in the file that this report does not show: {', '.join(unknown)}.")
    for neighbour, reader in ((GPU_FILE, _gpu_table), (SERVER_FILE, _server_table)):
        if (path.parent / neighbour).is_file() and path.name == INFERENCE_FILE:
            parsed.tables.append(reader(path.parent / neighbour))
    return parsed
