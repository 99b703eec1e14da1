"""perf_analyzer's `-f` CSV (and the suite's sweep.csv, the same format) as a level table.

    Concurrency,Inferences/Second,[Response Throughput,]Client Send,
    [Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,
     Server Compute Output,[Server Cache Hit,Server Cache Miss,]]Client Recv,
    p50 latency,p90 latency,p95 latency,p99 latency[,Avg latency,request/response,response wait
    [,Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory]]

What perf_analyzer's report writer puts in it: `Request Rate` replaces `Concurrency` in rate
mode; `Response Throughput` is there for decoupled models; the server columns only with
server statistics, the cache columns only with the response cache on; `--percentile=N` adds
`pN latency` and drops `Avg latency`; `--verbose-csv` adds the columns after p99, and with
`--collect-metrics` four GPU columns whose cells read `<gpu uuid>:<value>;` per GPU (the
documentation's example rows also end with a comma after them). The legacy `perf_client`
wrote one `Server Compute` column instead of the three. Values are µs. An empty cell is
"not measured" (the suite does not split client send/receive from the network) and stays
NaN: never read as 0.

    parsed = read_file("results.csv")    # .mode, .levels (columns of analysis.levels), .notes
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.levels import LEVEL_COLUMNS, add_client_network

MODES = {"Concurrency": "concurrency", "Request Rate": "request_rate"}
# perf_analyzer's column -> our level column (µs unless named otherwise).
COLUMNS = {
    "Inferences/Second": "infer_per_s",
    "Response Throughput": "responses_per_s",
    "Client Send": "client_send_us",
    "Network+Server Send/Recv": "network_us",
    "Server Queue": "queue_us",
    "Server Compute Input": "compute_input_us",
    "Server Compute Infer": "compute_infer_us",
    "Server Compute Output": "compute_output_us",
    "Server Compute": "compute_total_us",
    "Client Recv": "client_recv_us",
    "p50 latency": "p50_us",
    "p90 latency": "p90_us",
    "p95 latency": "p95_us",
    "p99 latency": "p99_us",
    "Avg latency": "mean_us",
}
# Time in the response cache: perf_analyzer subtracts both from the network part, so both
# belong in the stack (as one part: lookups that hit and that missed).
CACHE_COLUMNS = ("Server Cache Hit", "Server Cache Miss")
# --collect-metrics cells, one `uuid:value;` per GPU: how GPUs combine into one number.
GPU_COLUMNS = {
    "Avg GPU Utilization": ("gpu_utilization_pct", "mean", 100.0),  # a fraction in the file
    "Avg GPU Power Usage": ("gpu_power_w", "sum", 1.0),
    "Max GPU Memory Usage": ("gpu_memory_used_bytes", "sum", 1.0),
    "Total GPU Memory": ("gpu_memory_total_bytes", "sum", 1.0),
}
# --verbose-csv's client-side split (send + receive, and the rest of the request): the same
# time as Client Send, Client Recv and the network/server parts, counted another way.
REDUNDANT = ("request/response", "response wait")
REQUIRED = ("Inferences/Second", "p50 latency", "p90 latency", "p95 latency", "p99 latency")
LEGACY_COMPUTE_NOTE = (
    "This is a legacy perf_client CSV: its single 'Server Compute' column (compute input + infer + output, "
    "not split) is shown as one part, 'compute (not split)'."
)


class PerfAnalyzerCsvError(Exception):
    """A file that is not a perf_analyzer -f CSV (or not a CSV at all)."""


@dataclass
class PerfAnalyzerCsv:
    mode: str
    levels: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def read_rows(path: Path, what: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(header, [(line number, cells)]) of a CSV, blank lines skipped. Empty cells after the
    last column are dropped (perf_analyzer's documented GPU rows and Model Analyzer's rows may
    end with a comma); any other difference in length is an error. `what` names the format."""
    try:
        # utf-8-sig: a CSV saved again by a spreadsheet starts with a byte-order mark.
        with open(path, newline="", encoding="utf-8-sig") as file:
            rows = list(csv.reader(file))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise PerfAnalyzerCsvError(f"{path}: cannot read as a CSV ({error})") from None
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise PerfAnalyzerCsvError(f"{path}: empty, expected {what}")
    header = [name.strip() for name in rows[0]]
    while header and header[-1] == "":
        header.pop()
    out = []
    for number, row in enumerate(rows[1:], 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) > len(header) and not any(cell.strip() for cell in row[len(header) :]):
            row = row[: len(header)]
        if len(row) != len(header):
            raise PerfAnalyzerCsvError(f"{path}:{number}: {len(row)} cells, the header has {len(header)}")
        out.append((number, row))
    if not out:
        raise PerfAnalyzerCsvError(f"{path}: no rows")
    return header, out


def number(text: str, where: str) -> float:
    if text.strip() == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise PerfAnalyzerCsvError(f"{where}: {text[:40]!r} is not a number") from None


def gpu_value(text: str, how: str, where: str) -> float:
    """`uuid0:0.4;uuid1:0.6;` -> one number over the GPUs (mean or sum); NaN if empty."""
    values = []
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        _, sep, value = entry.rpartition(":")
        if not sep:
            raise PerfAnalyzerCsvError(f"{where}: {entry[:40]!r} is not <gpu uuid>:<value>")
        values.append(number(value, where))
    if not values:
        return math.nan
    return sum(values) / len(values) if how == "mean" else sum(values)


def read_file(path: str | Path) -> PerfAnalyzerCsv:
    """A perf_analyzer -f CSV as levels sorted by level (perf_analyzer writes them in order of
    throughput), with a note for anything in the file the report cannot show as perf_analyzer meant."""
    path = Path(path)
    header, rows = read_rows(path, "a perf_analyzer -f CSV")
    mode = MODES.get(header[0])
    missing = [name for name in REQUIRED if name not in header]
    if mode is None or missing:
        raise PerfAnalyzerCsvError(
            f"{path}: not a perf_analyzer -f CSV (first column '{header[0]}', missing {', '.join(missing) or 'none'})"
        )
    records = []
    for line, row in rows:
        cells = dict(zip(header, row, strict=True))
        where = f"{path}:{line}"
        record = {"level": number(cells[header[0]], where)}
        for name, column in COLUMNS.items():
            if name in cells:
                record[column] = number(cells[name], f"{where} {name}")
        cache = [number(cells[name], f"{where} {name}") for name in CACHE_COLUMNS if name in cells]
        if cache:
            record["cache_us"] = sum(cache)
        for name, (column, how, scale) in GPU_COLUMNS.items():
            if name in cells:
                record[column] = gpu_value(cells[name], how, f"{where} {name}") * scale
        records.append(record)
    frame = pd.DataFrame.from_records(records).reindex(columns=LEVEL_COLUMNS)
    frame = frame.sort_values("level", kind="stable").reset_index(drop=True)
    frame["label"] = [f"{level:g}" for level in frame["level"]]
    notes = []
    if "Server Compute" in header:
        notes.append(LEGACY_COMPUTE_NOTE)
    known = {header[0], *COLUMNS, *CACHE_COLUMNS, *GPU_COLUMNS, *REDUNDANT}
    unknown = [name for name in header if name not in known]
    if unknown:
        notes.append(f"Columns in the file that this report does not show: {', '.join(unknown)}.")
    return PerfAnalyzerCsv(mode, add_client_network(frame), notes)


def read_csv(path: str | Path) -> tuple[str, pd.DataFrame]:
    """(mode, levels): mode is "concurrency" or "request_rate" (read_file without the notes)."""
    parsed = read_file(path)
    return parsed.mode, parsed.levels
