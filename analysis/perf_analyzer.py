"""perf_analyzer's `-f` CSV (and the suite's sweep.csv, the same format) as a level table.

    Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,
    Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,
    p50 latency,p90 latency,p95 latency,p99 latency[,Avg latency,request/response,response wait]

`Request Rate` replaces `Concurrency` in rate mode; `--verbose-csv` adds the last three
columns. Values are µs. An empty cell is "not measured" (the suite does not split client
send/receive from the network) and stays NaN: never read as 0.

    frame = read_csv("results.csv")      # one row per level, columns of analysis.levels
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd

from analysis.levels import LEVEL_COLUMNS, add_client_network

MODES = {"Concurrency": "concurrency", "Request Rate": "request_rate"}
# perf_analyzer's column -> our level column (µs unless named otherwise).
COLUMNS = {
    "Inferences/Second": "infer_per_s",
    "Client Send": "client_send_us",
    "Network+Server Send/Recv": "network_us",
    "Server Queue": "queue_us",
    "Server Compute Input": "compute_input_us",
    "Server Compute Infer": "compute_infer_us",
    "Server Compute Output": "compute_output_us",
    "Client Recv": "client_recv_us",
    "p50 latency": "p50_us",
    "p90 latency": "p90_us",
    "p95 latency": "p95_us",
    "p99 latency": "p99_us",
    "Avg latency": "mean_us",
}
REQUIRED = ("Inferences/Second", "p50 latency", "p90 latency", "p95 latency", "p99 latency")


class PerfAnalyzerCsvError(Exception):
    """A file that is not a perf_analyzer -f CSV."""


def _number(text: str, where: str) -> float:
    if text.strip() == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise PerfAnalyzerCsvError(f"{where}: '{text}' is not a number") from None


def read_csv(path: str | Path) -> tuple[str, pd.DataFrame]:
    """(mode, levels): mode is "concurrency" or "request_rate"; rows sorted by level
    (perf_analyzer may write them out of order, e.g. after a binary search)."""
    path = Path(path)
    try:
        with open(path, newline="") as file:
            rows = list(csv.reader(file))
    except (OSError, UnicodeDecodeError) as error:
        raise PerfAnalyzerCsvError(f"{path}: cannot read ({error})") from None
    if not rows or not rows[0]:
        raise PerfAnalyzerCsvError(f"{path}: empty, expected a perf_analyzer -f CSV")
    header = [name.strip() for name in rows[0]]
    mode = MODES.get(header[0])
    missing = [name for name in REQUIRED if name not in header]
    if mode is None or missing:
        raise PerfAnalyzerCsvError(
            f"{path}: not a perf_analyzer -f CSV (first column '{header[0]}', missing {', '.join(missing) or 'none'})"
        )
    records = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise PerfAnalyzerCsvError(f"{path}:{number}: {len(row)} cells, the header has {len(header)}")
        cells = dict(zip(header, row, strict=True))
        record = {"level": _number(cells[header[0]], f"{path}:{number}")}
        for name, column in COLUMNS.items():
            if name in cells:
                record[column] = _number(cells[name], f"{path}:{number} {name}")
        records.append(record)
    if not records:
        raise PerfAnalyzerCsvError(f"{path}: no rows")
    frame = pd.DataFrame.from_records(records).reindex(columns=LEVEL_COLUMNS)
    frame = frame.sort_values("level", kind="stable").reset_index(drop=True)
    frame["label"] = [f"{level:g}" for level in frame["level"]]
    return mode, add_client_network(frame)
